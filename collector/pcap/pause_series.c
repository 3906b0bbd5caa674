/* SPDX-License-Identifier: MIT */
#include "collector/pcap/pause_series.h"
#include "collector/metric_names.h"

static const struct metric_desc pfc_frames = {
	.name = "fabmon_pcap_pfc_frames_total",
	.help = "PFC frames (IEEE 802.1Qbb) captured that name this priority.",
	.type = METRIC_COUNTER
};
static const struct metric_desc pfc_quanta = {
	.name = "fabmon_pcap_pfc_quanta_total",
	.help = "Pause time those PFC frames asked for this priority, in quanta of 512 bit "
		"times at the link's speed (0: XON).",
	.type = METRIC_COUNTER
};
static const struct metric_desc pfc_paused = {
	.name = M_PCAP_PAUSE_DURATION_SECONDS_TOTAL,
	.help = "Time this priority was paused by the PFC frames captured (each replacing "
		"the pause before it), at pcap_link_speed; absent while the speed is unknown.",
	.type = METRIC_COUNTER,
	.scale = 1e-9, /* capture_pause_paused_ns() */
};
static const struct metric_desc link_frames = {
	.name = "fabmon_pcap_link_pause_frames_total",
	.help = "Link-level PAUSE frames (IEEE 802.3 Annex 31B) captured.",
	.type = METRIC_COUNTER
};
static const struct metric_desc link_quanta = {
	.name = "fabmon_pcap_link_pause_quanta_total",
	.help = "Pause time those PAUSE frames asked, in quanta of 512 bit times.",
	.type = METRIC_COUNTER
};
static const struct metric_desc link_paused = {
	.name = M_PCAP_LINK_PAUSE_DURATION_SECONDS_TOTAL,
	.help = "Time the link was paused by the PAUSE frames captured, at pcap_link_speed; "
		"absent while the speed is unknown.",
	.type = METRIC_COUNTER,
	.scale = 1e-9,
};

/* One slot's series: its frames, quanta and, if timed, time paused. */
static void emit_slot(const struct capture_pause *p, unsigned i, uint64_t now_ns,
		      const struct label *l, size_t nl, struct sample_sink *out)
{
	int link = i == PACKET_PAUSE_LINK;

	(void)sample_counter(out, link ? &link_frames : &pfc_frames, l, nl, p->frames[i]);
	(void)sample_counter(out, link ? &link_quanta : &pfc_quanta, l, nl, p->quanta[i]);
	if (p->timed >> i & 1)
		(void)sample_counter(out, link ? &link_paused : &pfc_paused, l, nl,
				     capture_pause_paused_ns(p, i, now_ns));
}

void pause_series_emit(const struct capture_pause *p, const char *ifname, uint64_t now_ns,
		       struct sample_sink *out)
{
	char prio[2] = "0";
	struct label l[2] = { { "interface", ifname }, { "priority", prio } };

	for (unsigned i = 0; i < PACKET_PAUSE_SLOTS; i++) {
		if (!p->frames[i])
			continue;
		prio[0] = (char)('0' + i);
		emit_slot(p, i, now_ns, l, i == PACKET_PAUSE_LINK ? 1 : 2, out);
	}
}
