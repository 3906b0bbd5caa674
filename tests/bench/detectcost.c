/* SPDX-License-Identifier: MIT */
/*
 * detectcost: the CPU the agent's detect step (detect_run(): gathering the
 * registry's series, then every detector) takes a tick at P peers. Each
 * tick every peer's TCP series are written into a registry as the TCP probe
 * writes them: half the peers are fan-out peers (an all-to-all), half ring
 * neighbours, at 1 GB/s +-20 %, one of each at a fifth of that (an incast
 * and a straggler to judge), with a retransmit now and then. Every peer is
 * set against the median of the others, and its series are found among all
 * peers', so the cost grows with P.
 *
 * With -r each peer carries RoCEv2 too, as the tc probe writes it: packets
 * by operation class and ECN CE marks, both ways (20 series a peer), which
 * the RoCE congestion check gathers per peer.
 *
 * Usage: detectcost [-p PEERS] [-t TICKS] [-r]
 * Prints "peers=P series=S ticks=T us_per_tick=U verdicts=V".
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "benchutil.h"

#include "agent/config.h"
#include "agent/detect/detect.h"
#include "agent/registry/registry.h"
#include "collector/collector.h"

/* A fixed seed: every run judges the same samples. */
#define DETECTCOST_SEED 1
#define DETECTCOST_PEERS 1000
#define DETECTCOST_TICK_MS 100

/* The TCP probe's per-peer series the detectors read (collector/bpf/tcp.c). */
enum { ACKED, BUSY, RETRANS, XFER_BYTES, XFER_COUNT, XFER_SUM, RATE, FANOUT, STALL, FAMILIES };
static const struct metric_desc descs[FAMILIES] = {
	[ACKED] = { "fabmon_tcp_acked_bytes_total", "bench", METRIC_COUNTER, 0, 0 },
	[BUSY] = { "fabmon_tcp_busy_seconds_total", "bench", METRIC_COUNTER, 0, 1e-9 },
	[RETRANS] = { "fabmon_tcp_path_retransmits_total", "bench", METRIC_COUNTER, 0, 0 },
	[XFER_BYTES] = { "fabmon_tcp_transfer_bytes_total", "bench", METRIC_COUNTER, 0, 0 },
	[XFER_COUNT] = { "fabmon_tcp_transfer_duration_seconds_count", "bench", METRIC_COUNTER, 0,
			 0 },
	[XFER_SUM] = { "fabmon_tcp_transfer_duration_seconds_sum", "bench", METRIC_COUNTER, 0,
		       1e-9 },
	[RATE] = { "fabmon_tcp_delivery_rate_bytes_per_second", "bench", METRIC_GAUGE, 0, 0 },
	[FANOUT] = { "fabmon_tcp_sender_fanout_peers", "bench", METRIC_GAUGE, 0, 0 },
	[STALL] = { "fabmon_tcp_ack_stall_seconds", "bench", METRIC_GAUGE, 0, 0 },
};

/* The tc probe's RoCEv2 families the detectors read (collector/flow_series.c). */
static const struct metric_desc roce_packets = { "fabmon_roce_packets_total", "bench",
						 METRIC_COUNTER, 0, 0 };
static const struct metric_desc roce_ce = { "fabmon_roce_ecn_ce_packets_total", "bench",
					    METRIC_COUNTER, 0, 0 };
static const char *const roce_classes[] = { "send",	     "write",	"read_request",
					    "read_response", "ack",	"atomic",
					    "cnp",	     "ud_send", "other" };
/* A peer's RoCEv2 series: each class and the CE marks, both ways. */
#define ROCE_SERIES (2 * (sizeof(roce_classes) / sizeof(roce_classes[0]) + 1))

static double jitter(void)
{
	return 0.8 + 0.4 * (double)rand() / RAND_MAX;
}

/* One tick of peer i's series into out; raw holds its counters' totals. */
static void peer_sample(struct sample_sink *out, const char *peer, unsigned i, uint64_t *raw)
{
	struct label l[] = { { "peer", peer }, { "source", "bpf" } };
	double rate = 1e9 * jitter() * (i == 0 || i == 1 ? 0.2 : 1);
	uint64_t tick_ns = DETECTCOST_TICK_MS * 1000000ULL;

	raw[ACKED] += (uint64_t)(rate * 0.09);
	raw[BUSY] += tick_ns * 9 / 10;
	raw[RETRANS] += rand() % 50 == 0 ? 10 : 0;
	raw[XFER_BYTES] += (uint64_t)(rate * 0.09);
	raw[XFER_COUNT] += 1;
	raw[XFER_SUM] += (uint64_t)(tick_ns * 9 / 10 / jitter());
	for (unsigned f = 0; f < RATE; f++)
		(void)sample_counter(out, &descs[f], l, 2, raw[f]);
	(void)sample_gauge(out, &descs[RATE], l, 2, rate);
	(void)sample_gauge(out, &descs[FANOUT], l, 2, i % 2 ? 1 : 4);
	(void)sample_gauge(out, &descs[STALL], l, 2, 0);
}

/* One tick of a peer's RoCEv2 series, labelled in the tc probe's order;
 * packets is its running total. */
static void peer_roce(struct sample_sink *out, const char *peer, uint64_t *packets)
{
	static const char *const dirs[] = { "rx", "tx" };
	size_t nc = sizeof(roce_classes) / sizeof(roce_classes[0]);

	*packets += 1000;
	for (size_t d = 0; d < 2; d++) {
		struct label l[] = { { "interface", "eth0" },
				     { "direction", dirs[d] },
				     { "peer", peer },
				     { "source", "bpf" },
				     { "class", NULL } };

		for (size_t c = 0; c < nc; c++) {
			l[4].value = roce_classes[c];
			(void)sample_counter(out, &roce_packets, l, 5, *packets);
		}
		(void)sample_counter(out, &roce_ce, l, 4, *packets / 100);
	}
}

int main(int argc, char **argv)
{
	static char names[DETECTCOST_PEERS][48];
	static uint64_t raw[DETECTCOST_PEERS][FAMILIES];
	static uint64_t roce[DETECTCOST_PEERS]; /* packets, as raw */
	struct event_verdict out[64];
	struct detect *det = NULL;
	struct config cfg;
	struct registry *reg;
	unsigned peers = DETECTCOST_PEERS, ticks = 200, verdicts = 0;
	int c, with_roce = 0;
	double spent = 0;

	while ((c = getopt(argc, argv, "p:t:r")) != -1) {
		if ((c == 'p' && parse_uint(optarg, DETECTCOST_PEERS, &peers) < 0) ||
		    (c == 't' && parse_uint(optarg, 1000000, &ticks) < 0) ||
		    (c != 'p' && c != 't' && c != 'r')) {
			fprintf(stderr, "usage: detectcost [-p PEERS (1..%d)] [-t TICKS] [-r]\n",
				DETECTCOST_PEERS);
			return 2;
		}
		with_roce |= c == 'r';
	}
	config_defaults(&cfg);
	reg = registry_new(peers * (FAMILIES + ROCE_SERIES) + 64, 60000);
	if (!reg || detect_new(&cfg, &det) < 0) {
		fprintf(stderr, "detectcost: out of memory\n");
		return 1;
	}
	srand(DETECTCOST_SEED);
	for (unsigned i = 0; i < peers; i++)
		snprintf(names[i], sizeof(names[i]), "198.18.%u.%u", i / 250, 1 + i % 250);
	for (unsigned t = 1; t <= ticks; t++) {
		double t0;

		registry_begin_tick(reg, 1800000000000LL + (int64_t)t * DETECTCOST_TICK_MS);
		for (unsigned i = 0; i < peers; i++) {
			peer_sample(registry_sink(reg, "bench"), names[i], i, raw[i]);
			if (with_roce)
				peer_roce(registry_sink(reg, "bench"), names[i], &roce[i]);
		}
		t0 = clock_mono_s();
		verdicts += (unsigned)detect_run(det, reg, out, sizeof(out) / sizeof(out[0]));
		spent += clock_mono_s() - t0;
		registry_end_tick(reg);
	}
	printf("peers=%u series=%u ticks=%u us_per_tick=%.1f verdicts=%u\n", peers,
	       registry_count(reg), ticks, spent / ticks * 1e6, verdicts);
	detect_free(det);
	registry_free(reg);
	return 0;
}
