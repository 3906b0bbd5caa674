/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/collector.h"
#include "collector/mesh/mesh_engine.h"
#include "collector/mesh/mesh_targets.h"
#include "collector/metric_names.h"

/*
 * The mesh collector: starts the engine (mesh_engine.h) and, each tick,
 * shows what it found. Per peer always; per flow, and the hops of every
 * flow, only for a peer one of whose flows stands out from its siblings, so
 * that a healthy fabric costs one set of series a peer; all within
 * mesh_max_series.
 */

/* A flow that lost a probe this recently still shows on its own. */
#define DIFFERS_FOR_NS (60LL * 1000000000LL)

struct mesh_state {
	struct mesh_engine *engine;
	unsigned flows;
	unsigned max_series, emitted;
	uint64_t dropped; /* series not shown for max_series */
};

static const struct histogram_bounds rtt_bounds = { MESH_RTT_BUCKETS, mesh_rtt_le };

/* What the agent would probe, for `fabmon doctor`: the targets as read,
 * nothing bound or sent (a running agent's responder holds the port). */
static int mesh_doctor(const struct mesh_conf *conf, char *why, size_t why_len)
{
	struct mesh_targets t = { 0 };
	char err[COLLECTOR_WHY_MAX / 2];
	int r = mesh_targets_load(conf->targets, conf->peers, &t, err, sizeof(err));

	if (r < 0) {
		snprintf(why, why_len, "mesh: %s", err);
		return r;
	}
	snprintf(why, why_len, "mesh: %zu targets, %u flows each, answering on '%s'%s%s", t.n,
		 conf->flows, conf->listen, err[0] ? "; " : "", err);
	mesh_targets_release(&t);
	return 0;
}

static int mesh_init(const struct collector_env *env, void **ret_state, char *why, size_t why_len)
{
	const struct mesh_conf *conf = env->mesh;
	struct mesh_state *st;
	int r;

	if (!conf || (!conf->targets[0] && !conf->peers[0])) {
		snprintf(why, why_len, "mesh: no mesh_targets or mesh_peers: probing off");
		return -ENOENT;
	}
	if (env->doctor) {
		*ret_state = NULL;
		return mesh_doctor(conf, why, why_len);
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->flows = conf->flows;
	st->max_series = conf->max_series;
	r = mesh_engine_new(conf, 1, &st->engine, why, why_len);
	if (r == 0)
		r = mesh_engine_start(st->engine, why, why_len);
	if (r < 0) {
		mesh_engine_free(st->engine);
		free(st);
		return r;
	}
	*ret_state = st;
	return 0;
}

/* Room within the bound for n series more; past it they are dropped and
 * counted. */
static int room(struct mesh_state *st, unsigned n)
{
	if (st->emitted + n > st->max_series) {
		st->dropped += n;
		return 0;
	}
	st->emitted += n;
	return 1;
}

static void emit(struct mesh_state *st, struct sample_sink *out, const struct metric_desc *d,
		 const struct label *l, size_t n, double value)
{
	if (!room(st, 1))
		return;
	if (d->type == METRIC_GAUGE)
		(void)sample_gauge(out, d, l, n, value);
	else
		(void)sample_counter(out, d, l, n, (uint64_t)value);
}

/* scale: of the sum, in nanoseconds */
static const struct metric_desc d_rtt = {
	M_MESH_RTT_SECONDS,
	"Round trip of the probes to the peer, every flow, responder's delay included.",
	METRIC_HISTOGRAM, 0, 1e-9
};
static const struct metric_desc d_sent = { M_MESH_PROBES_SENT_TOTAL,
					   "Probes sent to the peer, every flow.", METRIC_COUNTER,
					   0, 0 };
static const struct metric_desc d_lost = {
	M_MESH_PROBES_LOST_TOTAL,
	"Probes to the peer not answered within half an interval (200 ms to 1 s).", METRIC_COUNTER,
	0, 0
};
static const struct metric_desc d_queued = {
	M_MESH_PROBES_QUEUED_TOTAL,
	"Probes to the peer, answered or lost, while its path stood in a spike: either way's one-way "
	"time over halfway from its least to its recent most (1 ms at least), until under a third. "
	"A full queue drops only in a spike, a link that drops at random outside one as often.",
	METRIC_COUNTER, 0, 0
};
static const struct metric_desc d_lost_queued = {
	M_MESH_PROBES_LOST_QUEUED_TOTAL,
	"Of fabmon_mesh_probes_queued_total, those lost (the peer answered a later probe).",
	METRIC_COUNTER, 0, 0
};
static const struct metric_desc d_rounds = {
	M_MESH_LOSS_ROUNDS_TOTAL,
	"Rounds of probes to the peer (one on every flow, sent together) that lost one or more: "
	"fabmon_mesh_probes_lost_total over it is what a losing round lost, near 1 where a link "
	"drops packets at random, several where a queue overflows or the peer's host stalls.",
	METRIC_COUNTER, 0, 0
};
static const struct metric_desc d_last_answer = {
	M_MESH_LAST_ANSWER_TIMESTAMP_SECONDS,
	"When the peer last answered a probe, Unix time (shown once it has): a TCP wait for acks on "
	"a path the probes still cross is the connection's timer, not a cut.",
	METRIC_GAUGE, 0, 0
};
static const struct metric_desc d_kernel_silent = {
	M_MESH_KERNEL_SILENT_SECONDS,
	"How long the peer's kernel has left knocks unanswered since its last answer to a probe (a "
	"knock: a TCP connection attempt "
	"to its mesh port, which a kernel answers whatever its applications do), 0 while it "
	"answers; shown once it answered one. Knocked once, then each second the peer's probes go "
	"unanswered: a silent peer whose kernel answers has stopped; one whose kernel is silent too "
	"is gone, or its path is cut.",
	METRIC_GAUGE, 0, 0
};
static const struct metric_desc d_delay = {
	M_MESH_RESPONDER_DELAY_SECONDS_TOTAL,
	"The peer's own time between receiving a probe and sending its reply, summed over the "
	"answered probes: over fabmon_mesh_rtt_seconds_sum it is the share of the round trip "
	"that is the host's, not the network's.",
	METRIC_COUNTER, 0, 1e-9
};
static const struct metric_desc d_fsent = {
	"fabmon_mesh_flow_probes_sent_total",
	"Probes sent to the peer on one flow (source port), shown while the flow stands out "
	"from its siblings; path names the hops it crosses.",
	METRIC_COUNTER, 0, 0
};
static const struct metric_desc d_flost = { M_MESH_FLOW_PROBES_LOST_TOTAL,
					    "Probes lost on one flow that stands out, as above.",
					    METRIC_COUNTER, 0, 0 };
static const struct metric_desc d_frtt = {
	M_MESH_FLOW_RTT_SECONDS,
	"Recent network round trip (the responder's delay taken out; the least of the last 8) "
	"on one flow that stands out.",
	METRIC_GAUGE, 0, 0
};
static const struct metric_desc d_hop = {
	M_MESH_HOP_INFO,
	"A hop a flow's path to the peer crosses, from TTL-limited probes on the flow's own "
	"5-tuple, for every flow of a peer one of whose flows stands out; address "
	"\"unknown\" where no ICMP time-exceeded came back.",
	METRIC_GAUGE, 0, 0
};

static void emit_peer(struct mesh_state *st, struct sample_sink *out, const struct mesh_peer *p,
		      const char *peer, int64_t now_ns)
{
	/* the interface: a host's own link fails every peer it carries */
	struct label l[2] = { { "peer", peer }, { "interface", p->ifname } };
	size_t nl = p->ifname[0] ? 2 : 1;
	uint64_t cumulative[MESH_RTT_BUCKETS + 1];

	for (unsigned b = 0; b <= MESH_RTT_BUCKETS; b++)
		cumulative[b] = p->buckets[b] + (b ? cumulative[b - 1] : 0);
	if (room(st, MESH_RTT_BUCKETS + 3))
		(void)sample_histogram(out, &d_rtt, l, nl, &rtt_bounds, cumulative, p->rtt_sum_ns,
				       p->answered);
	emit(st, out, &d_sent, l, nl, (double)p->sent);
	emit(st, out, &d_lost, l, nl, (double)p->lost);
	emit(st, out, &d_queued, l, nl, (double)p->queued);
	emit(st, out, &d_lost_queued, l, nl, (double)p->lost_queued);
	emit(st, out, &d_delay, l, nl, (double)p->delay_sum_ns);
	if (p->last_answer_ns)
		emit(st, out, &d_last_answer, l, nl, (double)p->last_answer_ns / 1e9);
	if (p->kernel_answer_ns)
		emit(st, out, &d_kernel_silent, l, nl,
		     p->kernel_silent_ns > p->last_answer_ns && now_ns > p->kernel_silent_ns
			     ? (double)(now_ns - p->kernel_silent_ns) / 1e9
			     : 0);
}

/* The peer's loss rounds, shown while a flow of it stands out: only a
 * peer that lost has rounds to tell apart, and at a thousand clean peers
 * the series would be a megabyte held for nothing. */
static void emit_rounds(struct mesh_state *st, struct sample_sink *out, const struct mesh_peer *p,
			const char *peer)
{
	struct label l[2] = { { "peer", peer }, { "interface", p->ifname } };

	if (p->loss_rounds)
		emit(st, out, &d_rounds, l, p->ifname[0] ? 2 : 1, (double)p->loss_rounds);
}

/* The flows of differ (mesh_peer_differing()). */
static void emit_flows(struct mesh_state *st, struct sample_sink *out, const struct mesh_peer *p,
		       const char *peer, uint64_t differ)
{
	for (unsigned f = 0; f < st->flows; f++) {
		const struct mesh_flow *fl = &p->flow[f];
		double rtt;
		char flow[12], path[12];
		struct label l[3] = { { "peer", peer }, { "flow", flow }, { "path", path } };

		if (!(differ >> f & 1))
			continue;
		rtt = mesh_flow_rtt(fl);
		snprintf(flow, sizeof(flow), "%u", f);
		if (fl->path.n)
			snprintf(path, sizeof(path), "%08x", fl->path.id);
		else
			snprintf(path, sizeof(path), "unknown");
		emit(st, out, &d_fsent, l, 3, (double)fl->sent);
		emit(st, out, &d_flost, l, 3, (double)fl->lost);
		/* a flow that loses from its start has no figure yet: the
		 * detector would judge its first answers */
		if (rtt > 0)
			emit(st, out, &d_frtt, l, 3, rtt);
	}
}

/* The hops of every flow to a peer one of whose flows stands out: what
 * the bad flows cross beside what their siblings cross (detect_mesh names
 * the difference). A peer whose flows agree shows none: at a thousand peers
 * its hops were most of the mesh's series. */
static void emit_hops(struct mesh_state *st, struct sample_sink *out, const struct mesh_peer *p,
		      const char *peer)
{
	for (unsigned f = 0; f < st->flows; f++) {
		const struct mesh_path *path = &p->flow[f].path;

		for (unsigned h = 0; h < path->n; h++) {
			char flow[12], hop[12], addr[INET_ADDRSTRLEN] = "unknown";
			struct in_addr a = { htonl(path->hop[h]) };
			struct label l[4] = { { "peer", peer },
					      { "flow", flow },
					      { "hop", hop },
					      { "address", addr } };

			snprintf(flow, sizeof(flow), "%u", f);
			snprintf(hop, sizeof(hop), "%u", h + 1);
			if (path->hop[h])
				inet_ntop(AF_INET, &a, addr, sizeof(addr));
			emit(st, out, &d_hop, l, 4, 1);
		}
	}
}

static void emit_counters(struct mesh_state *st, struct sample_sink *out, size_t n_peers)
{
	static const struct metric_desc answered = { "fabmon_mesh_responder_answered_total",
						     "Probes from peers this host answered.",
						     METRIC_COUNTER, 0, 0 };
	static const struct metric_desc refused = {
		"fabmon_mesh_responder_refused_total",
		"Datagrams to the responder not answered: reason \"source\" (not a target, not in "
		"mesh_allow) or \"malformed\" (truncated, oversized, not a probe).",
		METRIC_COUNTER, 0, 0
	};
	static const struct metric_desc limited = {
		"fabmon_mesh_responder_rate_limited_total",
		"Probes not answered because their source was over mesh_source_pps.",
		METRIC_COUNTER, 0, 0
	};
	static const struct metric_desc invalid = {
		"fabmon_mesh_replies_invalid_total",
		"Replies that answered no probe in flight: a wrong or late sequence number, an "
		"unknown peer, a malformed datagram.",
		METRIC_COUNTER, 0, 0
	};
	static const struct metric_desc deferred = {
		"fabmon_mesh_budget_deferred_total",
		"Rounds of probes put off because mesh_pps was spent.", METRIC_COUNTER, 0, 0
	};
	static const struct metric_desc terr = {
		"fabmon_mesh_targets_errors_total",
		"Reads of mesh_targets that failed; the previous list was kept.", METRIC_COUNTER, 0,
		0
	};
	static const struct metric_desc peers = { "fabmon_mesh_peers", "Peers being probed.",
						  METRIC_GAUGE, 0, 0 };
	static const struct metric_desc dropped = {
		"fabmon_mesh_series_dropped_total",
		"Mesh series not shown because mesh_max_series was reached.", METRIC_COUNTER, 0, 0
	};
	const struct mesh_responder_stats *r = mesh_engine_responder(st->engine);
	const struct mesh_engine_stats *e = mesh_engine_stats(st->engine);
	const struct label src[] = { { "reason", "source" } },
			   bad[] = { { "reason", "malformed" } };

	/* these are the collector's own: never dropped for the bound */
	(void)sample_counter(out, &answered, NULL, 0, r->answered);
	(void)sample_counter(out, &refused, src, 1, r->refused_source);
	(void)sample_counter(out, &refused, bad, 1, r->refused_malformed);
	(void)sample_counter(out, &limited, NULL, 0, r->rate_limited);
	(void)sample_counter(out, &invalid, NULL, 0, e->replies_invalid);
	(void)sample_counter(out, &deferred, NULL, 0, e->budget_deferred);
	(void)sample_counter(out, &terr, NULL, 0, e->targets_errors);
	(void)sample_gauge(out, &peers, NULL, 0, (double)n_peers);
	(void)sample_counter(out, &dropped, NULL, 0, st->dropped);
}

static int mesh_sample(void *state, const struct collector_env *env, struct sample_sink *out)
{
	struct mesh_state *st = state;
	const struct mesh_peer *peers;
	struct timespec ts;
	int64_t now_ns, since_ns;
	size_t n;

	(void)env;
	clock_gettime(CLOCK_REALTIME, &ts);
	now_ns = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	since_ns = now_ns - DIFFERS_FOR_NS;
	st->emitted = 0;
	mesh_engine_lock(st->engine);
	peers = mesh_engine_peers(st->engine, &n);
	/* per peer first, so that the bound cuts per-flow and hop series */
	for (size_t pass = 0; pass < 3; pass++)
		for (size_t i = 0; i < n; i++) {
			uint64_t differ =
				pass ? mesh_peer_differing(&peers[i], st->flows, since_ns) : 0;
			char peer[INET_ADDRSTRLEN];
			struct in_addr a = { htonl(peers[i].addr) };

			if (pass && !differ)
				continue;
			inet_ntop(AF_INET, &a, peer, sizeof(peer));
			if (pass == 0)
				emit_peer(st, out, &peers[i], peer, now_ns);
			else if (pass == 1) {
				emit_rounds(st, out, &peers[i], peer);
				emit_flows(st, out, &peers[i], peer, differ);
			} else
				emit_hops(st, out, &peers[i], peer);
		}
	emit_counters(st, out, n);
	mesh_engine_unlock(st->engine);
	return 0;
}

static void mesh_fini(void *state)
{
	struct mesh_state *st = state;

	if (!st)
		return;
	mesh_engine_free(st->engine);
	free(st);
}

static void mesh_news(void *state, char *buf, size_t len)
{
	struct mesh_state *st = state;

	mesh_engine_news(st->engine, buf, len);
}

const struct collector_ops mesh_collector = {
	.name = "mesh",
	.init = mesh_init,
	.sample = mesh_sample,
	.fini = mesh_fini,
	.news = mesh_news,
};
