/* SPDX-License-Identifier: MIT */
/*
 * tcp: what the raw tracepoints (bpf/tcp.bpf.c) saw of this host's TCP
 * connections, per peer. Each tick every connection's new counts go to its
 * peer, with bounded cardinality (collector/peer_totals.h); its waits
 * (collector/bpf/tcp_waits.h), losses (collector/bpf/tcp_loss.h), window
 * and transfers become the peer's gauges; connections closed or idle are
 * deleted so the map does not fill.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/fabmon.h"
#include "collector/bpf/state.h"
#include "collector/bpf/tcp_loss.h"
#include "collector/bpf/tcp_waits.h"
#include "collector/kmap.h"
#include "collector/metric_names.h"
#include "collector/peer_totals.h"

enum {
	TCP_ACKS,
	TCP_RETRANSMITS,
	TCP_ACKED_BYTES,
	TCP_XFERS,
	TCP_XFER_NS,
	TCP_XFER_BYTES,
	TCP_BUSY_NS,
	TCP_XFER_B0, /* FM_XFER_BUCKETS transfer-duration buckets from here */
	/* the counters above are a connection's; this one the tick's, from
	 * every connection's retransmits (collector/bpf/tcp_loss.h) */
	TCP_PATH_RETRANSMITS = TCP_XFER_B0 + FM_XFER_BUCKETS,
	TCP_N
};

/* A connection that sends bulk data: this much in flight now (a few
 * segments), or this much acknowledged over its life. Its srtt, even while it
 * waits between collectives, was measured on data, not on small replies. */
#define TCP_BULK_IN_FLIGHT 4096
/* A window this close to full takes no more segments: a jumbo frame's MSS. */
#define TCP_WINDOW_SLACK 9000
#define TCP_BULK_ACKED 65536

/* A local sending endpoint (a rank: its namespace and address), and one of
 * its (endpoint, peer) pairs, for the fan-out of this tick's senders. */
struct tcp_sender {
	uint32_t netns;
	uint8_t family;
	uint8_t pad[3];
	uint8_t addr[16];
};

struct tcp_pair {
	struct tcp_sender from;
	uint8_t to[16];
};

/* Per-peer gauges of the TCP connections seen this tick. */
struct tcp_gauges {
	double srtt_max_s; /* over the connections carrying bulk data */
	double stall_max_s;
	double sender_stall_max_s; /* of connections from the peer's address, when it is local */
	double read_stall_max_s; /* acknowledged since the peer last read: how long ago that was */
	double sender_read_stall_max_s; /* the same of connections from the peer's address */
	double sender_busy_max_s; /* the longest busy period under way of those, so far */
	uint64_t sender_acked; /* bytes those acknowledged this tick */
	uint64_t sender_busy_ns; /* and the time they were busy */
	/* the latest ack progress of a live connection to the peer or from
	 * its address (fm_tcp_val's progress_ns); 0 if none */
	uint64_t progress_ns;
	uint64_t acked; /* bytes the connections to the peer acknowledged this tick */
	uint64_t busy_ns; /* and the time they were busy */
	/* how many local senders delivered to the peer this tick, and the
	 * first of them (tcp_pair_fanout()) */
	unsigned senders;
	struct tcp_sender sender;
	uint64_t in_flight;
	uint64_t connections;
	uint64_t zero_window; /* connections with data queued and the peer's window closed */
	uint64_t window_limited; /* connections whose queued data the peer's window holds back */
	/* a connection to the peer waited for acks FM_ACK_WAIT_NS or more with
	 * data in flight: now if one waits, else when the last wait ended
	 * (tcp_loss_ns()); 0 if none */
	int64_t loss_ns;
	double delivery_rate; /* bytes/s: the best among connections that delivered this tick */
	uint64_t fanout; /* most peers one local sender to this peer delivered to this tick */
	double xfer_open_s; /* the longest-running transfer still in progress: how long */
	uint64_t xfer_open_bytes; /* and what of it was acknowledged so far */
};

int bpf_tcp_init(struct bpf_state *st, const struct collector_env *env)
{
	st->tcp_last = kmap_new(sizeof(struct fm_tcp_key), ENTRY_LAST_SIZE(TCP_PATH_RETRANSMITS),
				env->bpf_max_flows);
	st->tcp_gauges =
		kmap_new(sizeof(struct peer_id), sizeof(struct tcp_gauges), env->bpf_max_flows);
	st->tcp_pairs = kmap_new(sizeof(struct tcp_pair), 1, env->bpf_max_flows);
	st->tcp_fanout = kmap_new(sizeof(struct tcp_sender), sizeof(unsigned), env->bpf_max_flows);
	st->tcp_peers = peer_table_new(TCP_N, env->bpf_top_peers);
	return st->tcp_last && st->tcp_gauges && st->tcp_pairs && st->tcp_fanout && st->tcp_peers
		       ? 0
		       : -ENOMEM;
}

void bpf_tcp_release(struct bpf_state *st)
{
	kmap_free(st->tcp_last);
	kmap_free(st->tcp_gauges);
	kmap_free(st->tcp_pairs);
	kmap_free(st->tcp_fanout);
	peer_table_free(st->tcp_peers);
	free(st->tcp_losses);
}

/* Notes that the connection k delivered data to its peer this tick. */
static void tcp_note_pair(struct bpf_state *st, const struct fm_tcp_key *k)
{
	struct tcp_pair pair;
	unsigned *peers;
	int created;

	memset(&pair, 0, sizeof(pair));
	pair.from.netns = k->netns;
	pair.from.family = k->family;
	memcpy(pair.from.addr, k->saddr, sizeof(pair.from.addr));
	memcpy(pair.to, k->daddr, sizeof(pair.to));
	if (!kmap_put(st->tcp_pairs, &pair, &created) || !created)
		return;
	peers = kmap_put(st->tcp_fanout, &pair.from, NULL);
	if (peers)
		(*peers)++;
}

/* Gives each peer the largest fan-out among the endpoints that delivered to
 * it, and counts those endpoints. */
static int tcp_pair_fanout(const void *key, void *val, void *arg)
{
	const struct tcp_pair *pair = key;
	struct bpf_state *st = arg;
	const unsigned *peers = kmap_get(st->tcp_fanout, &pair->from);
	struct tcp_gauges *g;
	struct peer_id id;

	(void)val;
	peer_id_of(&id, 0, FM_DIR_EGRESS, pair->from.family, pair->from.addr, pair->to);
	g = kmap_get(st->tcp_gauges, &id);
	if (!g)
		return 1;
	if (peers && *peers > g->fanout)
		g->fanout = *peers;
	if (!g->senders++)
		g->sender = pair->from;
	return 1;
}

/* How long connection v's busy period under way has run at now_ns; 0 when
 * it is idle. */
static double tcp_open_s(const struct fm_tcp_val *v, int64_t now_ns)
{
	return v->xfer_start_ns && now_ns > (int64_t)v->xfer_start_ns
		       ? (double)(now_ns - (int64_t)v->xfer_start_ns) / 1e9
		       : 0;
}

/* Connection v's busy time so far: its ended busy periods and the one under
 * way, up to its last event (so with the bytes acknowledged by then). */
static uint64_t tcp_busy_ns(const struct fm_tcp_val *v)
{
	return v->busy_ns + (v->xfer_start_ns && v->last_ns > v->xfer_start_ns
				     ? v->last_ns - v->xfer_start_ns
				     : 0);
}

/*
 * Connection k (v) seen from its sender, in the gauges of the sender's
 * address (a peer too, where it is a local rank: another namespace): its
 * waits (waits set; waited and unread from tcp_waits()), which say the
 * sender is blocked and tell victims from culprits, what it moved this
 * tick (deltas d), and when it last had ack progress. Leaves pointers into
 * the gauges' table invalid (a kmap_put()).
 */
static void tcp_note_sender(struct bpf_state *st, const struct fm_tcp_key *k,
			    const struct fm_tcp_val *v, int64_t now_ns, int waits, double waited,
			    double unread, const uint64_t *d)
{
	struct tcp_gauges *from;
	struct peer_id id;

	peer_id_of(&id, 0, FM_DIR_EGRESS, k->family, NULL, k->saddr);
	from = kmap_put(st->tcp_gauges, &id, NULL);
	if (!from)
		return;
	if (v->progress_ns > from->progress_ns)
		from->progress_ns = v->progress_ns;
	if (waits) {
		if (waited > from->sender_stall_max_s)
			from->sender_stall_max_s = waited;
		if (unread > from->sender_read_stall_max_s)
			from->sender_read_stall_max_s = unread;
		if (tcp_open_s(v, now_ns) > from->sender_busy_max_s)
			from->sender_busy_max_s = tcp_open_s(v, now_ns);
	}
	if (d[TCP_BUSY_NS]) {
		from->sender_acked += d[TCP_ACKED_BYTES];
		from->sender_busy_ns += d[TCP_BUSY_NS];
	}
}

/* Whether st->tcp_losses has room for entry n, growing it if need be (a
 * clean tick has few; without memory, the rest of the tick's go uncounted). */
static int tcp_losses_room(struct bpf_state *st, size_t n)
{
	size_t room = st->tcp_losses_room ? 2 * st->tcp_losses_room : 64;
	struct tcp_loss_pair *grown;

	if (n < st->tcp_losses_room)
		return 1;
	grown = realloc(st->tcp_losses, room * sizeof(grown[0]));
	if (!grown)
		return 0;
	st->tcp_losses = grown;
	st->tcp_losses_room = room;
	return 1;
}

/* Counts the tick's retransmits of st->tcp_losses[0..n) that speak of the
 * peer's path, not the sender's port (collector/bpf/tcp_loss.h). */
static void tcp_path_losses(struct bpf_state *st, size_t n, int64_t now_ms)
{
	tcp_loss_attribute(st->tcp_losses, n);
	for (size_t i = 0; i < n; i++) {
		const struct tcp_loss_pair *l = &st->tcp_losses[i];
		uint64_t d[TCP_N] = { 0 };
		struct peer_id id;

		if (l->senders_port)
			continue;
		d[TCP_PATH_RETRANSMITS] = l->retransmits;
		peer_id_of(&id, 0, FM_DIR_EGRESS, l->family, l->saddr, l->daddr);
		peer_table_add(st->tcp_peers, &id, d, now_ms);
	}
}

/* Whether connection v is over: closed, or idle past idle_ns. */
static int tcp_gone(const struct fm_tcp_val *v, int64_t now_ns, int64_t idle_ns)
{
	return v->closed || now_ns - (int64_t)v->last_ns > idle_ns;
}

/* Each peer's latest loss (tcp_gauges.loss_ns), before any connection's
 * read stall is judged against it. */
static void tcp_note_losses(struct bpf_state *st, int64_t now_ns, int64_t idle_ns)
{
	const struct map_reader *r = &st->tcpm;

	for (unsigned i = 0; i < r->count; i++) {
		const struct fm_tcp_key *k = map_reader_key(r, i);
		const struct fm_tcp_val *v = map_reader_val(r, i);
		int64_t loss = tcp_loss_ns(v, now_ns, st->up[PROBE_TCP_RETRANSMIT]);
		struct tcp_gauges *g;
		struct peer_id id;

		if (!loss || tcp_gone(v, now_ns, idle_ns))
			continue;
		peer_id_of(&id, 0, FM_DIR_EGRESS, k->family, k->saddr, k->daddr);
		g = kmap_put(st->tcp_gauges, &id, NULL);
		if (g && loss > g->loss_ns)
			g->loss_ns = loss;
	}
}

static void sample_tcp(struct bpf_state *st, int64_t now_ns, int64_t idle_ns, int64_t now_ms)
{
	struct map_reader *r = &st->tcpm;
	size_t nlosses = 0;

	kmap_clear(st->tcp_gauges);
	kmap_clear(st->tcp_pairs);
	kmap_clear(st->tcp_fanout);
	tcp_note_losses(st, now_ns, idle_ns);
	for (unsigned i = 0; i < r->count; i++) {
		const struct fm_tcp_key *k = map_reader_key(r, i);
		const struct fm_tcp_val *v = map_reader_val(r, i);
		/* ACKs processed rank the peers: a healthy connection has no
		 * retransmits but is still worth a series */
		uint64_t cur[TCP_PATH_RETRANSMITS] = { v->probes,      v->retransmits,
						       v->bytes_acked, v->xfers,
						       v->xfer_ns,     v->xfer_bytes,
						       tcp_busy_ns(v) },
			 d[TCP_N] = { 0 };
		struct tcp_gauges *g;
		struct peer_id id;
		double waited = 0, unread = 0;
		int waits;

		memcpy(&cur[TCP_XFER_B0], v->xfer_hist, sizeof(v->xfer_hist));
		entry_deltas(st->tcp_last, k, cur, TCP_PATH_RETRANSMITS, st->tick, d);
		/* tracepoints know no interface: one row per peer */
		peer_id_of(&id, 0, FM_DIR_EGRESS, k->family, k->saddr, k->daddr);
		peer_table_add(st->tcp_peers, &id, d, now_ms);
		if (d[TCP_RETRANSMITS] && tcp_losses_room(st, nlosses)) {
			struct tcp_loss_pair *l = &st->tcp_losses[nlosses++];

			l->family = k->family;
			memcpy(l->saddr, k->saddr, sizeof(l->saddr));
			memcpy(l->daddr, k->daddr, sizeof(l->daddr));
			l->retransmits = d[TCP_RETRANSMITS];
		}
		/* closed (its last deltas are counted now) or idle: gone */
		if (tcp_gone(v, now_ns, idle_ns)) {
			map_reader_delete(r, k);
			continue;
		}
		g = kmap_put(st->tcp_gauges, &id, NULL);
		if (!g)
			continue;
		g->connections++;
		g->in_flight += v->in_flight;
		/* A connection that mostly receives measures its RTT on small
		 * replies the peer acks late (delayed ACK): only bulk senders say
		 * how long the path's queue is. */
		if ((v->in_flight >= TCP_BULK_IN_FLIGHT || v->bytes_acked >= TCP_BULK_ACKED) &&
		    v->srtt_us / 1e6 > g->srtt_max_s)
			g->srtt_max_s = v->srtt_us / 1e6;
		if (v->unsent && v->snd_wnd == 0)
			g->zero_window++;
		/* data waits and what is in flight fills the peer's window (to
		 * within a jumbo segment, which the sender would not split): the
		 * receiver, not the path, sets the pace */
		if (v->unsent && (uint64_t)v->in_flight + TCP_WINDOW_SLACK >= v->snd_wnd)
			g->window_limited++;
		/* a hand-off still under way: how far it got, so that a slow one
		 * is seen before it ends */
		if (tcp_open_s(v, now_ns) > g->xfer_open_s) {
			g->xfer_open_s = tcp_open_s(v, now_ns);
			g->xfer_open_bytes = v->bytes_acked - v->xfer_acked0;
		}
		/* a barrier or a request is not a path's measure: bulk only */
		if (d[TCP_ACKED_BYTES] >= TCP_BULK_ACKED) {
			tcp_note_pair(st, k);
			if ((double)v->delivery_rate > g->delivery_rate)
				g->delivery_rate = (double)v->delivery_rate;
		}
		waits = (v->in_flight || v->unsent) &&
			tcp_waits(v, now_ns, st->up[PROBE_TCP_RETRANSMIT], g->loss_ns, &waited,
				  &unread);
		if (waits && waited > g->stall_max_s)
			g->stall_max_s = waited;
		if (waits && unread > g->read_stall_max_s)
			g->read_stall_max_s = unread;
		if (d[TCP_BUSY_NS]) {
			g->acked += d[TCP_ACKED_BYTES];
			g->busy_ns += d[TCP_BUSY_NS];
		}
		if (v->progress_ns > g->progress_ns)
			g->progress_ns = v->progress_ns;
		/* g is not used past this: the sender's gauges may move it */
		tcp_note_sender(st, k, v, now_ns, waits, waited, unread, d);
	}
	kmap_sweep(st->tcp_pairs, tcp_pair_fanout, st);
	tcp_path_losses(st, nlosses, now_ms);
}

static const struct peer_metric tcp_metrics[] = {
	{ TCP_ACKS, "fabmon_tcp_acks_total",
	  "ACKs the host processed on its TCP connections to the peer (tcp:tcp_probe).", NULL,
	  NULL },
	{ TCP_ACKED_BYTES, M_TCP_ACKED_BYTES_TOTAL,
	  "Bytes the peer acknowledged (snd_una's advances): what TCP delivered to it.", NULL,
	  NULL },
	{ TCP_XFER_BYTES, M_TCP_TRANSFER_BYTES_TOTAL,
	  "Bytes of the bulk transfers in fabmon_tcp_transfer_duration_seconds: over its _sum, "
	  "what the path gave while there was data to move.",
	  NULL, NULL },
	{ TCP_RETRANSMITS, "fabmon_tcp_retransmits_total",
	  "Retransmissions to the peer (tcp:tcp_retransmit_skb; one per skb, which with TSO may "
	  "hold several segments).",
	  NULL, NULL },
	{ TCP_PATH_RETRANSMITS, M_TCP_PATH_RETRANSMITS_TOTAL,
	  "The retransmissions of fabmon_tcp_retransmits_total that the peer's path's loss "
	  "explains: less those from a local sender (a rank or pod in another namespace) that "
	  "other senders lost data towards in the same tick, whose port drops the peer's ACKs "
	  "too. What the incast and straggler detectors count as loss.",
	  NULL, NULL },
};

struct emit_ctx {
	struct bpf_state *st;
	struct sample_sink *out;
	int64_t now_ns; /* the tick's, on the probes' clock */
};

_Static_assert(TCP_N <= PEER_COUNTERS_MAX, "TCP counters exceed a peer's");

/* The peer's bulk transfer durations (fm_tcp_val's xfer_*) as a histogram,
 * and its busy time; l has room for one more label after n. */
static void emit_transfers(struct sample_sink *out, struct label *l, size_t n,
			   const uint64_t *totals)
{
#define XFER_HELP                                                                                  \
	"Bulk transfers to the peer (64 KiB or more, from data pending on an idle connection "     \
	"to the last of it acknowledged), by duration."
	static const struct metric_desc bucket = { .name = M_TCP_TRANSFER_DURATION_SECONDS_BUCKET,
						   .help = XFER_HELP,
						   .type = METRIC_HISTOGRAM };
	static const struct metric_desc sum = { .name = M_TCP_TRANSFER_DURATION_SECONDS_SUM,
						.help = XFER_HELP,
						.type = METRIC_HISTOGRAM,
						.scale = 1e-9 };
	static const struct metric_desc count = { .name = M_TCP_TRANSFER_DURATION_SECONDS_COUNT,
						  .help = XFER_HELP,
						  .type = METRIC_HISTOGRAM };
#undef XFER_HELP
	static const struct metric_desc busy = {
		.name = M_TCP_BUSY_SECONDS_TOTAL,
		.help = "Time the connections to the peer had data to move (pending since idle, of any "
			"size), summed: fabmon_tcp_acked_bytes_total over it is the path's rate while "
			"busy, which idle time between a collective's steps does not dilute.",
		.type = METRIC_COUNTER,
		.scale = 1e-9
	};
	uint64_t cumulative = 0;
	char le[24];

	for (unsigned b = 0; b < FM_XFER_BUCKETS; b++) {
		cumulative += totals[TCP_XFER_B0 + b];
		if (b == FM_XFER_BUCKETS - 1)
			snprintf(le, sizeof(le), "+Inf");
		else
			snprintf(le, sizeof(le), "%g", (double)(FM_XFER_BUCKET0_NS << b) / 1e9);
		l[n] = (struct label){ "le", le };
		(void)sample_counter(out, &bucket, l, n + 1, cumulative);
	}
	(void)sample_counter(out, &sum, l, n, totals[TCP_XFER_NS]);
	(void)sample_counter(out, &count, l, n, totals[TCP_XFERS]);
	(void)sample_counter(out, &busy, l, n, totals[TCP_BUSY_NS]);
}

/* The per-peer gauges of struct tcp_gauges, in the order tcp_gauge_values()
 * gives their values. */
static const struct metric_desc tcp_gauge_descs[] = {
	{ .name = "fabmon_tcp_srtt_seconds",
	  .help = "Largest smoothed RTT among the connections sending bulk data to the peer (4 "
		  "KiB in flight, or 64 KiB acknowledged so far); 0 while none is "
		  "(tcp:tcp_probe).",
	  .type = METRIC_GAUGE },
	{ .name = M_TCP_IN_FLIGHT_BYTES,
	  .help = "Bytes sent to the peer and not yet acknowledged (snd_nxt - snd_una), summed.",
	  .type = METRIC_GAUGE },
	{ .name = "fabmon_tcp_connections",
	  .help = "TCP connections to the peer seen by the probes and not idle.",
	  .type = METRIC_GAUGE },
	{ .name = M_TCP_ZERO_WINDOW_CONNECTIONS,
	  .help = "Connections to the peer with data queued and the peer's receive window closed "
		  "(the receiving application stopped reading).",
	  .type = METRIC_GAUGE },
	{ .name = M_TCP_WINDOW_LIMITED_CONNECTIONS,
	  .help = "Connections to the peer with data queued that its receive window holds back "
		  "(closed ones included): the receiver reads slower than the path delivers.",
	  .type = METRIC_GAUGE },
	{ .name = M_TCP_ACK_STALL_SECONDS,
	  .help = "Longest time a connection to the peer has had data outstanding (in flight or "
		  "queued behind a closed window) without ack progress; 0 when all are "
		  "progressing or idle.",
	  .type = METRIC_GAUGE },
	{ .name = M_TCP_SENDER_ACK_STALL_SECONDS,
	  .help = "When the peer's address is also a local sender (a rank or pod in another "
		  "network namespace of this host): the longest its own connections have had data "
		  "outstanding without ack progress; 0 otherwise.",
	  .type = METRIC_GAUGE },
	{ .name = M_TCP_READ_STALL_SECONDS,
	  .help = "Longest time a connection to the peer has had data outstanding that the peer "
		  "acknowledged without its application reading any (the right edge of its "
		  "receive window stood still), counted once it has gone on acking for 100 ms or "
		  "closed its window: a paused or hung receiver, seen before its window closes; 0 "
		  "otherwise.",
	  .type = METRIC_GAUGE },
	{ .name = M_TCP_SENDER_READ_STALL_SECONDS,
	  .help = "When the peer's address is also a local sender: the same for its own "
		  "connections, whose receivers stopped reading; 0 otherwise.",
	  .type = METRIC_GAUGE },
	{ .name = M_TCP_SENDER_BUSY_SECONDS,
	  .help = "When the peer's address is also a local sender: how long the longest busy period "
		  "(data pending since idle) of its own connections has run so far; 0 when none is "
		  "under way, or otherwise.",
	  .type = METRIC_GAUGE },
	{ .name = "fabmon_tcp_sender_busy_rate_bytes_per_second",
	  .help = "When the peer's address is also a local sender: what its own connections had "
		  "acknowledged this tick over the time they were busy, where that was 64 KiB or "
		  "more; 0 otherwise. A port congested towards the peer holds the ACKs of what it "
		  "sends: its own sending slows too.",
	  .type = METRIC_GAUGE },
	{ .name = M_TCP_UPSTREAM_BUSY_RATE_BYTES_PER_SECOND,
	  .help = "When one local sender delivered this tick's data to the peer and this host's "
		  "connections deliver to that sender's address too (a ring's previous link): what "
		  "those had acknowledged this tick over the time they were busy, where that was 64 "
		  "KiB or more; 0 otherwise. A port congested towards that sender holds the ACKs of "
		  "what it sends to the peer: the peer's path slows with it.",
	  .type = METRIC_GAUGE },
	{ .name = M_TCP_DELIVERY_RATE_BYTES_PER_SECOND,
	  .help = "The kernel's delivery rate estimate (tcp_rate.c, ss -i delivery_rate), best "
		  "among the connections that delivered data to the peer this tick: what the path "
		  "gives a sender; 0 when none delivered.",
	  .type = METRIC_GAUGE },
	{ .name = M_TCP_SENDER_FANOUT_PEERS,
	  .help = "Most peers that one local sender (namespace and address) of data to this peer "
		  "delivered to in the same tick: 1 in a ring, N-1 in an all-to-all; 0 when none "
		  "delivered.",
	  .type = METRIC_GAUGE },
	{ .name = M_TCP_TRANSFER_OPEN_SECONDS,
	  .help = "How long the longest bulk transfer to the peer still in progress has run (data "
		  "pending since the connection was last idle); 0 when none is.",
	  .type = METRIC_GAUGE },
	{ .name = "fabmon_tcp_transfer_open_bytes",
	  .help = "Bytes of that transfer acknowledged so far.",
	  .type = METRIC_GAUGE },
	{ .name = M_TCP_PROGRESS_AGE_SECONDS,
	  .help = "How long ago data was last acknowledged on any open connection to the peer, or "
		  "from its address where that is a local sender too (a rank or pod in another "
		  "network namespace of this host), either way; 0 when it has none. A peer cut "
		  "off from the fabric has none for as long as it is cut off; one whose "
		  "connection with a single other peer waits on a retransmission timeout still "
		  "moves on the rest.",
	  .type = METRIC_GAUGE },
};

#define TCP_GAUGES (sizeof(tcp_gauge_descs) / sizeof(tcp_gauge_descs[0]))

/* Bytes a second while busy: acked over busy_ns, where acked is a bulk
 * transfer's (a few segments' rate is their RTT's); else 0. */
static double tcp_busy_rate(uint64_t acked, uint64_t busy_ns)
{
	return acked >= TCP_BULK_ACKED && busy_ns ? (double)acked * 1e9 / (double)busy_ns : 0;
}

/* up: the gauges of the peer's one local sender, as a peer; NULL if none.
 * now_ns: the tick's time, on the probes' clock. */
static void tcp_gauge_values(const struct tcp_gauges *g, const struct tcp_gauges *up,
			     int64_t now_ns, double v[TCP_GAUGES])
{
	_Static_assert(TCP_GAUGES == 17, "a value for each of tcp_gauge_descs");
	v[0] = g->srtt_max_s;
	v[1] = (double)g->in_flight;
	v[2] = (double)g->connections;
	v[3] = (double)g->zero_window;
	v[4] = (double)g->window_limited;
	v[5] = g->stall_max_s;
	v[6] = g->sender_stall_max_s;
	v[7] = g->read_stall_max_s;
	v[8] = g->sender_read_stall_max_s;
	v[9] = g->sender_busy_max_s;
	v[10] = tcp_busy_rate(g->sender_acked, g->sender_busy_ns);
	v[11] = up ? tcp_busy_rate(up->acked, up->busy_ns) : 0;
	v[12] = g->delivery_rate;
	v[13] = (double)g->fanout;
	v[14] = g->xfer_open_s;
	v[15] = (double)g->xfer_open_bytes;
	v[16] = g->progress_ns && now_ns > (int64_t)g->progress_ns
			? (double)(now_ns - (int64_t)g->progress_ns) / 1e9
			: 0;
}

static void emit_peer(const struct peer_id *id, const uint64_t *totals, int other, void *arg)
{
	const struct emit_ctx *ctx = arg;
	char peer[INET6_ADDRSTRLEN];
	/* tracepoints know no interface: peer and source */
	struct label l[3] = { { "peer", peer }, { "source", "bpf" } };
	size_t n = 2;

	peer_id_label(id, other, peer, sizeof(peer));
	peer_metrics_emit(ctx->out, tcp_metrics, sizeof(tcp_metrics) / sizeof(tcp_metrics[0]), l, n,
			  totals);
	emit_transfers(ctx->out, l, n, totals);
	if (!other) {
		const struct tcp_gauges *g = kmap_get(ctx->st->tcp_gauges, id), *up = NULL;
		struct tcp_gauges none = { 0 };
		struct peer_id sender;
		double v[TCP_GAUGES];

		if (g && g->senders == 1) {
			peer_id_of(&sender, 0, FM_DIR_EGRESS, g->sender.family, NULL,
				   g->sender.addr);
			up = kmap_get(ctx->st->tcp_gauges, &sender);
		}
		tcp_gauge_values(g ? g : &none, up, ctx->now_ns, v);
		for (size_t i = 0; i < TCP_GAUGES; i++)
			(void)sample_gauge(ctx->out, &tcp_gauge_descs[i], l, n, v[i]);
	}
}

static void emit_tcp_peers(struct bpf_state *st, struct sample_sink *out, int64_t now_ns)
{
	struct emit_ctx ctx = { st, out, now_ns };

	peer_table_foreach(st->tcp_peers, emit_peer, &ctx);
}

void bpf_tcp_sample(struct bpf_state *st, const struct collector_env *env, struct sample_sink *out,
		    int64_t now_ns)
{
	int64_t idle_ns = env->bpf_flow_idle_ms * 1000000, now_ms = now_ns / 1000000;

	sample_tcp(st, now_ns, idle_ns, now_ms);
	entry_forget_unseen(st->tcp_last, st->tick);
	peer_table_end_tick(st->tcp_peers, now_ms, env->bpf_flow_idle_ms);
	emit_tcp_peers(st, out, now_ns);
}
