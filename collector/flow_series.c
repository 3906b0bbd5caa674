/* SPDX-License-Identifier: MIT */
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/flow_series.h"
#include "bpf/fabmon.h"
#include "collector/kmap.h"
#include "collector/metric_names.h"
#include "collector/peer_totals.h"

/* Counters tracked per flow and per QP, in the order the emit tables use. */
enum { FLOW_BYTES, FLOW_PACKETS, FLOW_ECT, FLOW_CE, FLOW_SYN, FLOW_FIN, FLOW_RST, FLOW_N };
enum {
	QP_BYTES,
	QP_PACKETS,
	QP_CLASS0, /* ROCE_CLASS_COUNT counters from here */
	QP_ACKS = QP_CLASS0 + ROCE_CLASS_COUNT,
	QP_NAK_PSN,
	QP_NAK_RNR,
	QP_NAK_INVALID,
	QP_NAK_ACCESS,
	QP_NAK_OPERATION,
	QP_NAK_OTHER,
	QP_GAPS,
	QP_MISSING,
	QP_DUPS,
	QP_BEHIND,
	QP_CE,
	QP_N
};

_Static_assert(QP_N <= PEER_COUNTERS_MAX, "QP counters exceed a peer's");

struct flow_series {
	uint64_t tick;
	struct kmap *flow_last, *qp_last; /* entry_last of each flow, each QP */
	struct peer_table *flow_peers, *qp_peers;
};

#define FLOW_HELP_TAIL " Per peer (remote address) on an interface, from the tc probe or libpcap."
static const struct peer_metric flow_metrics[] = {
	{ FLOW_BYTES, "fabmon_flow_bytes_total", "Bytes to or from the peer." FLOW_HELP_TAIL, NULL,
	  NULL },
	{ FLOW_PACKETS, "fabmon_flow_packets_total", "Packets to or from the peer." FLOW_HELP_TAIL,
	  NULL, NULL },
	{ FLOW_ECT, "fabmon_flow_ecn_capable_packets_total",
	  "Packets marked ECN-capable, ECT(0) or ECT(1) (RFC 3168)." FLOW_HELP_TAIL, NULL, NULL },
	{ FLOW_CE, M_FLOW_ECN_CE_PACKETS_TOTAL,
	  "Packets marked ECN Congestion Experienced." FLOW_HELP_TAIL, NULL, NULL },
	{ FLOW_SYN, "fabmon_flow_tcp_flags_total", "TCP segments with the flag set." FLOW_HELP_TAIL,
	  "flag", "syn" },
	{ FLOW_FIN, "fabmon_flow_tcp_flags_total", "TCP segments with the flag set." FLOW_HELP_TAIL,
	  "flag", "fin" },
	{ FLOW_RST, "fabmon_flow_tcp_flags_total", "TCP segments with the flag set." FLOW_HELP_TAIL,
	  "flag", "rst" },
};

#define ROCE_HELP_TAIL                                                                             \
	" RoCEv2 per peer on an interface, from the BTH parse of the tc probe or libpcap."
#define ROCE_CLASS_METRIC(c, v)                                                                    \
	{                                                                                          \
		QP_CLASS0 + (c), M_ROCE_PACKETS_TOTAL,                                             \
			"RoCEv2 packets by operation class." ROCE_HELP_TAIL, "class", v            \
	}
static const struct peer_metric qp_metrics[] = {
	{ QP_BYTES, "fabmon_roce_bytes_total", "RoCEv2 bytes." ROCE_HELP_TAIL, NULL, NULL },
	ROCE_CLASS_METRIC(ROCE_CLASS_SEND, "send"),
	ROCE_CLASS_METRIC(ROCE_CLASS_WRITE, "write"),
	ROCE_CLASS_METRIC(ROCE_CLASS_READ_REQUEST, "read_request"),
	ROCE_CLASS_METRIC(ROCE_CLASS_READ_RESPONSE, "read_response"),
	ROCE_CLASS_METRIC(ROCE_CLASS_ACK, "ack"),
	ROCE_CLASS_METRIC(ROCE_CLASS_ATOMIC, "atomic"),
	ROCE_CLASS_METRIC(ROCE_CLASS_CNP, "cnp"),
	ROCE_CLASS_METRIC(ROCE_CLASS_UD_SEND, "ud_send"),
	ROCE_CLASS_METRIC(ROCE_CLASS_OTHER, "other"),
	{ QP_ACKS, "fabmon_roce_acks_total", "AETH ACKs." ROCE_HELP_TAIL, NULL, NULL },
	{ QP_NAK_PSN, "fabmon_roce_naks_total", "AETH NAKs by kind." ROCE_HELP_TAIL, "kind",
	  "psn_sequence" },
	{ QP_NAK_RNR, "fabmon_roce_naks_total", "AETH NAKs by kind." ROCE_HELP_TAIL, "kind",
	  "rnr" },
	{ QP_NAK_INVALID, "fabmon_roce_naks_total", "AETH NAKs by kind." ROCE_HELP_TAIL, "kind",
	  "invalid_request" },
	{ QP_NAK_ACCESS, "fabmon_roce_naks_total", "AETH NAKs by kind." ROCE_HELP_TAIL, "kind",
	  "remote_access" },
	{ QP_NAK_OPERATION, "fabmon_roce_naks_total", "AETH NAKs by kind." ROCE_HELP_TAIL, "kind",
	  "remote_operation" },
	{ QP_NAK_OTHER, "fabmon_roce_naks_total", "AETH NAKs by kind." ROCE_HELP_TAIL, "kind",
	  "other" },
	{ QP_GAPS, "fabmon_roce_psn_gaps_total",
	  "Requests whose PSN skipped ahead of the last one plus one." ROCE_HELP_TAIL, NULL, NULL },
	{ QP_MISSING, "fabmon_roce_psn_missing_total",
	  "PSNs skipped over by those gaps." ROCE_HELP_TAIL, NULL, NULL },
	{ QP_DUPS, "fabmon_roce_psn_duplicates_total",
	  "Requests that repeated the last PSN." ROCE_HELP_TAIL, NULL, NULL },
	{ QP_BEHIND, "fabmon_roce_psn_behind_total",
	  "Requests with a PSN behind the last one (late or retransmitted)." ROCE_HELP_TAIL, NULL,
	  NULL },
	{ QP_CE, M_ROCE_ECN_CE_PACKETS_TOTAL,
	  "RoCEv2 packets marked ECN Congestion Experienced." ROCE_HELP_TAIL, NULL, NULL },
};

struct flow_series *flow_series_new(unsigned max_entries, unsigned top_peers)
{
	struct flow_series *fs = calloc(1, sizeof(*fs));

	if (!fs)
		return NULL;
	fs->flow_last = kmap_new(sizeof(struct fm_flow_key), ENTRY_LAST_SIZE(FLOW_N), max_entries);
	fs->qp_last = kmap_new(sizeof(struct fm_qp_key), ENTRY_LAST_SIZE(QP_N), max_entries);
	fs->flow_peers = peer_table_new(FLOW_N, top_peers);
	fs->qp_peers = peer_table_new(QP_N, top_peers);
	if (!fs->flow_last || !fs->qp_last || !fs->flow_peers || !fs->qp_peers) {
		flow_series_free(fs);
		return NULL;
	}
	return fs;
}

void flow_series_free(struct flow_series *fs)
{
	if (!fs)
		return;
	kmap_free(fs->flow_last);
	kmap_free(fs->qp_last);
	peer_table_free(fs->flow_peers);
	peer_table_free(fs->qp_peers);
	free(fs);
}

uint64_t flow_series_add_flow(struct flow_series *fs, const void *key, const void *val,
			      int64_t now_ms)
{
	const struct fm_flow_key *k = key;
	const struct fm_flow_val *v = val;
	uint64_t c[FLOW_N] = { v->bytes, v->packets, v->ect, v->ce, v->syn, v->fin, v->rst },
		 d[FLOW_N];
	struct peer_id id;

	entry_deltas(fs->flow_last, k, c, FLOW_N, fs->tick, d);
	peer_id_of(&id, k->ifindex, k->dir, k->family, k->saddr, k->daddr);
	peer_table_add(fs->flow_peers, &id, d, now_ms);
	return v->last_ns;
}

uint64_t flow_series_add_qp(struct flow_series *fs, const void *key, const void *val,
			    int64_t now_ms)
{
	const struct fm_qp_key *k = key;
	const struct fm_qp_val *v = val;
	uint64_t c[QP_N], d[QP_N];
	struct peer_id id;

	c[QP_BYTES] = v->bytes;
	c[QP_PACKETS] = v->packets;
	for (unsigned i = 0; i < ROCE_CLASS_COUNT; i++)
		c[QP_CLASS0 + i] = v->by_class[i];
	c[QP_ACKS] = v->acks;
	c[QP_NAK_PSN] = v->nak_psn;
	c[QP_NAK_RNR] = v->nak_rnr;
	c[QP_NAK_INVALID] = v->nak_invalid;
	c[QP_NAK_ACCESS] = v->nak_access;
	c[QP_NAK_OPERATION] = v->nak_operation;
	c[QP_NAK_OTHER] = v->nak_other;
	c[QP_GAPS] = v->psn_gaps;
	c[QP_MISSING] = v->psn_missing;
	c[QP_DUPS] = v->psn_dups;
	c[QP_BEHIND] = v->psn_behind;
	c[QP_CE] = v->ce;
	entry_deltas(fs->qp_last, k, c, QP_N, fs->tick, d);
	peer_id_of(&id, k->ifindex, k->dir, k->family, k->saddr, k->daddr);
	peer_table_add(fs->qp_peers, &id, d, now_ms);
	return v->last_ns;
}

void flow_series_end_tick(struct flow_series *fs, int64_t now_ms, int64_t idle_ms)
{
	entry_forget_unseen(fs->flow_last, fs->tick);
	entry_forget_unseen(fs->qp_last, fs->tick);
	peer_table_end_tick(fs->flow_peers, now_ms, idle_ms);
	peer_table_end_tick(fs->qp_peers, now_ms, idle_ms);
	fs->tick++;
}

struct emit_ctx {
	struct sample_sink *out;
	const struct peer_metric *metrics;
	size_t n;
	const char *ifname;
	const char *source;
	int with_direction;
};

static void emit_peer(const struct peer_id *id, const uint64_t *totals, int other, void *arg)
{
	const struct emit_ctx *ctx = arg;
	char peer[48], ifname[IF_NAMESIZE];
	struct label l[5];
	size_t n = 0;

	if (ctx->ifname)
		snprintf(ifname, sizeof(ifname), "%s", ctx->ifname);
	else if (!if_indextoname(id->ifindex, ifname))
		return;
	peer_id_label(id, other, peer, sizeof(peer));
	l[n++] = (struct label){ "interface", ifname };
	if (ctx->with_direction)
		l[n++] = (struct label){ "direction", id->dir == FM_DIR_INGRESS ? "rx" : "tx" };
	l[n++] = (struct label){ "peer", peer };
	l[n++] = (struct label){ "source", ctx->source };
	peer_metrics_emit(ctx->out, ctx->metrics, ctx->n, l, n, totals);
}

void flow_series_emit(struct flow_series *fs, struct sample_sink *out, const char *ifname,
		      const char *source, int with_direction)
{
	struct emit_ctx flows = {
		out,	flow_metrics, sizeof(flow_metrics) / sizeof(flow_metrics[0]),
		ifname, source,	      with_direction
	};
	struct emit_ctx qps = { out,	qp_metrics, sizeof(qp_metrics) / sizeof(qp_metrics[0]),
				ifname, source,	    with_direction };

	peer_table_foreach(fs->flow_peers, emit_peer, &flows);
	peer_table_foreach(fs->qp_peers, emit_peer, &qps);
}
