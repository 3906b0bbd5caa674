/* SPDX-License-Identifier: MIT */
/*
 * bpf: the kernel's view of this host's traffic, from the probes in bpf/.
 * The tc probe counts flows, ECN marks and RoCEv2 queue pairs on the
 * selected interfaces; raw tracepoints count TCP retransmits, RTT, window and
 * ack progress, and drops by reason. Each tick the maps are read (batch
 * lookups), turned into per-peer counters with bounded cardinality
 * (collector/peer_totals.h), and idle entries are deleted so the maps do not fill.
 *
 * Counters stay monotonic although map entries come and go: the collector
 * keeps each entry's last values (kmap.h) and adds only the deltas.
 */
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bpf/fabmon.h"
#include "collector/bpf/drop_reasons.h"
#include "collector/peer_totals.h"
#include "collector/bpf/tc.h"
#include "collector/bpf/tc_lock.h"
#include "collector/bpf/tcp_loss.h"
#include "collector/bpf/tcp_waits.h"
#include "collector/flow_series.h"
#include "collector/collector.h"
#include "flow.skel.h"
#include "collector/kmap.h"
#include "tcp.skel.h"

enum bpf_probe {
	PROBE_TC,
	PROBE_TCP_RETRANSMIT,
	PROBE_TCP_PROBE,
	PROBE_TCP_STATE,
	PROBE_KFREE_SKB,
	PROBE_COUNT
};

static const char *const probe_names[PROBE_COUNT] = { "tc", "tcp_retransmit", "tcp_probe",
						      "tcp_state", "kfree_skb" };

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

/* A BPF hash map read whole each tick, into buffers sized for all of it. */
struct map_reader {
	int fd;
	const char *name;
	size_t key_size, val_size; /* val_size: all CPUs for a per-CPU map */
	unsigned max_entries;
	void *keys, *vals;
	unsigned count; /* entries read this tick */
	uint64_t deleted; /* entries the collector deleted as idle */
	uint64_t made; /* entries the probe created (0: not counted for this map) */
	uint64_t evicted; /* monotonic: entries the kernel's LRU pushed out */
};

struct bpf_state {
	struct flow_bpf *flow;
	struct tcp_bpf *tcp;
	struct bpf_link *links[PROBE_COUNT];
	struct bpf_tc *tc;
	struct drop_reasons *reasons;
	int up[PROBE_COUNT];
	int tcp_probe_btf; /* tcp_probe attached through BTF (tp_btf), not raw */
	int ncpus;
	uint64_t tick;
	uint64_t evicted; /* monotonic: entries the kernel's LRU pushed out */
	struct map_reader flows, qps, tcpm, ifslots, ifstats, dropm;
	struct kmap *if_totals; /* fm_if_key -> fm_if_val: slots and hash summed, this tick */
	struct flow_series *series; /* the tc probe's flows and QPs */
	struct kmap *tcp_last;
	struct kmap *tcp_gauges; /* peer_id -> tcp_gauges, this tick */
	struct kmap *tcp_pairs; /* tcp_pair -> unused: who delivered to whom this tick */
	struct kmap *tcp_fanout; /* tcp_sender -> unsigned: peers it delivered to this tick */
	struct peer_table *tcp_peers;
	/* this tick's connections with retransmits; grown as needed */
	struct tcp_loss_pair *tcp_losses;
	size_t tcp_losses_room;
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	/* bpf_ktime_get_ns() is CLOCK_MONOTONIC */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* libbpf speaks on stderr by default; the agent says what failed itself. */
static int bpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG || !getenv("FABMON_LIBBPF_DEBUG"))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int map_reader_init(struct map_reader *r, const struct bpf_map *map, int percpu, int ncpus)
{
	size_t v = bpf_map__value_size(map);

	r->fd = bpf_map__fd(map);
	r->name = bpf_map__name(map);
	r->key_size = bpf_map__key_size(map);
	/* per-CPU values come as one 8-byte-aligned slot per possible CPU */
	r->val_size = percpu ? ((v + 7) & ~(size_t)7) * (size_t)ncpus : v;
	r->max_entries = bpf_map__max_entries(map);
	r->keys = calloc(r->max_entries, r->key_size);
	r->vals = calloc(r->max_entries, r->val_size);
	return r->keys && r->vals ? 0 : -ENOMEM;
}

static void map_reader_release(struct map_reader *r)
{
	free(r->keys);
	free(r->vals);
}

/*
 * Reads every entry into r->keys/r->vals: batch lookups where the kernel has
 * them (5.6+), one key at a time otherwise. Returns 0 or -errno.
 */
static int map_reader_read(struct map_reader *r)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	uint64_t batch = 0;
	int first = 1, err;

	r->count = 0;
	for (;;) {
		__u32 n = r->max_entries - r->count;

		if (n == 0)
			return 0;
		err = bpf_map_lookup_batch(r->fd, first ? NULL : &batch, &batch,
					   (char *)r->keys + (size_t)r->count * r->key_size,
					   (char *)r->vals + (size_t)r->count * r->val_size, &n,
					   &opts);
		if (err < 0)
			err = -errno;
		r->count += n;
		first = 0;
		if (err == -ENOENT)
			return 0;
		/* 524 is the kernel's ENOTSUPP, which the batch calls return where
		 * a map type lacks them (include/linux/errno.h, not in uapi) */
		if (err == -EINVAL || err == -EOPNOTSUPP || err == -524)
			break;
		if (err < 0)
			return err;
	}
	/* no batch operations: walk the keys */
	r->count = 0;
	for (const void *prev = NULL; r->count < r->max_entries;) {
		char *k = (char *)r->keys + (size_t)r->count * r->key_size;

		if (bpf_map_get_next_key(r->fd, prev, k) < 0)
			break;
		if (bpf_map_lookup_elem(r->fd, k,
					(char *)r->vals + (size_t)r->count * r->val_size) == 0)
			r->count++;
		prev = k;
	}
	return 0;
}

static void *map_key(const struct map_reader *r, unsigned i)
{
	return (char *)r->keys + (size_t)i * r->key_size;
}

static void *map_val(const struct map_reader *r, unsigned i)
{
	return (char *)r->vals + (size_t)i * r->val_size;
}

/* Deletes an idle entry; counted so evictions can be told from deletions. */
static void map_reader_delete(struct map_reader *r, const void *key)
{
	if (bpf_map_delete_elem(r->fd, key) == 0)
		r->deleted++;
}

/* Adds every entry's new counts to its peer and deletes idle entries. */
/* Adds every entry of a flow or QP map to the series, and deletes idle ones. */
static void sample_entries(struct bpf_state *st, struct map_reader *r,
			   uint64_t (*add)(struct flow_series *fs, const void *key, const void *val,
					   int64_t now_ms),
			   int64_t now_ns, int64_t idle_ns, int64_t now_ms)
{
	for (unsigned i = 0; i < r->count; i++)
		if (now_ns - (int64_t)add(st->series, map_key(r, i), map_val(r, i), now_ms) >
		    idle_ns)
			map_reader_delete(r, map_key(r, i));
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
		const struct fm_tcp_key *k = map_key(r, i);
		const struct fm_tcp_val *v = map_val(r, i);
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
		const struct fm_tcp_key *k = map_key(r, i);
		const struct fm_tcp_val *v = map_val(r, i);
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
	{ TCP_ACKED_BYTES, "fabmon_tcp_acked_bytes_total",
	  "Bytes the peer acknowledged (snd_una's advances): what TCP delivered to it.", NULL,
	  NULL },
	{ TCP_XFER_BYTES, "fabmon_tcp_transfer_bytes_total",
	  "Bytes of the bulk transfers in fabmon_tcp_transfer_duration_seconds: over its _sum, "
	  "what the path gave while there was data to move.",
	  NULL, NULL },
	{ TCP_RETRANSMITS, "fabmon_tcp_retransmits_total",
	  "Retransmissions to the peer (tcp:tcp_retransmit_skb; one per skb, which with TSO may "
	  "hold several segments).",
	  NULL, NULL },
	{ TCP_PATH_RETRANSMITS, "fabmon_tcp_path_retransmits_total",
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
	static const struct metric_desc bucket = {
		.name = "fabmon_tcp_transfer_duration_seconds_bucket",
		.help = XFER_HELP,
		.type = METRIC_HISTOGRAM
	};
	static const struct metric_desc sum = { .name = "fabmon_tcp_transfer_duration_seconds_sum",
						.help = XFER_HELP,
						.type = METRIC_HISTOGRAM,
						.scale = 1e-9 };
	static const struct metric_desc count = {
		.name = "fabmon_tcp_transfer_duration_seconds_count",
		.help = XFER_HELP,
		.type = METRIC_HISTOGRAM
	};
#undef XFER_HELP
	static const struct metric_desc busy = {
		.name = "fabmon_tcp_busy_seconds_total",
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
	{ .name = "fabmon_tcp_in_flight_bytes",
	  .help = "Bytes sent to the peer and not yet acknowledged (snd_nxt - snd_una), summed.",
	  .type = METRIC_GAUGE },
	{ .name = "fabmon_tcp_connections",
	  .help = "TCP connections to the peer seen by the probes and not idle.",
	  .type = METRIC_GAUGE },
	{ .name = "fabmon_tcp_zero_window_connections",
	  .help = "Connections to the peer with data queued and the peer's receive window closed "
		  "(the receiving application stopped reading).",
	  .type = METRIC_GAUGE },
	{ .name = "fabmon_tcp_window_limited_connections",
	  .help = "Connections to the peer with data queued that its receive window holds back "
		  "(closed ones included): the receiver reads slower than the path delivers.",
	  .type = METRIC_GAUGE },
	{ .name = "fabmon_tcp_ack_stall_seconds",
	  .help = "Longest time a connection to the peer has had data outstanding (in flight or "
		  "queued behind a closed window) without ack progress; 0 when all are "
		  "progressing or idle.",
	  .type = METRIC_GAUGE },
	{ .name = "fabmon_tcp_sender_ack_stall_seconds",
	  .help = "When the peer's address is also a local sender (a rank or pod in another "
		  "network namespace of this host): the longest its own connections have had data "
		  "outstanding without ack progress; 0 otherwise.",
	  .type = METRIC_GAUGE },
	{ .name = "fabmon_tcp_read_stall_seconds",
	  .help = "Longest time a connection to the peer has had data outstanding that the peer "
		  "acknowledged without its application reading any (the right edge of its "
		  "receive window stood still), counted once it has gone on acking for 100 ms or "
		  "closed its window: a paused or hung receiver, seen before its window closes; 0 "
		  "otherwise.",
	  .type = METRIC_GAUGE },
	{ .name = "fabmon_tcp_sender_read_stall_seconds",
	  .help = "When the peer's address is also a local sender: the same for its own "
		  "connections, whose receivers stopped reading; 0 otherwise.",
	  .type = METRIC_GAUGE },
	{ .name = "fabmon_tcp_sender_busy_seconds",
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
	{ .name = "fabmon_tcp_upstream_busy_rate_bytes_per_second",
	  .help = "When one local sender delivered this tick's data to the peer and this host's "
		  "connections deliver to that sender's address too (a ring's previous link): what "
		  "those had acknowledged this tick over the time they were busy, where that was 64 "
		  "KiB or more; 0 otherwise. A port congested towards that sender holds the ACKs of "
		  "what it sends to the peer: the peer's path slows with it.",
	  .type = METRIC_GAUGE },
	{ .name = "fabmon_tcp_delivery_rate_bytes_per_second",
	  .help = "The kernel's delivery rate estimate (tcp_rate.c, ss -i delivery_rate), best "
		  "among the connections that delivered data to the peer this tick: what the path "
		  "gives a sender; 0 when none delivered.",
	  .type = METRIC_GAUGE },
	{ .name = "fabmon_tcp_sender_fanout_peers",
	  .help = "Most peers that one local sender (namespace and address) of data to this peer "
		  "delivered to in the same tick: 1 in a ring, N-1 in an all-to-all; 0 when none "
		  "delivered.",
	  .type = METRIC_GAUGE },
	{ .name = "fabmon_tcp_transfer_open_seconds",
	  .help = "How long the longest bulk transfer to the peer still in progress has run (data "
		  "pending since the connection was last idle); 0 when none is.",
	  .type = METRIC_GAUGE },
	{ .name = "fabmon_tcp_transfer_open_bytes",
	  .help = "Bytes of that transfer acknowledged so far.",
	  .type = METRIC_GAUGE },
	{ .name = "fabmon_tcp_progress_age_seconds",
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

static const struct {
	size_t offset;
	const char *name;
	const char *help;
} if_counters[] = {
	{ offsetof(struct fm_if_val, packets), "fabmon_bpf_packets_total",
	  "Packets the tc probe saw on the interface." },
	{ offsetof(struct fm_if_val, bytes), "fabmon_bpf_bytes_total",
	  "Bytes the tc probe saw on the interface." },
	{ offsetof(struct fm_if_val, unparsed), "fabmon_bpf_unparsed_packets_total",
	  "Packets that were not IPv4/IPv6 TCP/UDP or were cut short (passed untouched)." },
	{ offsetof(struct fm_if_val, roce), "fabmon_bpf_roce_packets_total",
	  "RoCEv2 packets (UDP port 4791) the tc probe parsed." },
	{ offsetof(struct fm_if_val, roce_unparsed), "fabmon_bpf_roce_unparsed_packets_total",
	  "UDP port 4791 packets too short for a BTH, or for the AETH or RETH their opcode has." },
	{ offsetof(struct fm_if_val, flow_update_failed), "fabmon_bpf_flow_update_failures_total",
	  "New flows the tc probe could not store." },
	{ offsetof(struct fm_if_val, qp_update_failed), "fabmon_bpf_qp_update_failures_total",
	  "New RoCEv2 queue pairs the tc probe could not store." },
};

/* Adds n per-CPU values of interface ifindex, direction dir, stride bytes
 * apart from v, to its total this tick. */
static void if_total_add(struct bpf_state *st, __u32 ifindex, __u32 dir, const void *v, int n,
			 size_t stride)
{
	const struct fm_if_key k = { .ifindex = ifindex, .dir = dir };
	struct fm_if_val *sum = kmap_put(st->if_totals, &k, NULL);

	/* through the fields' own type (__u64 is unsigned long long,
	 * uint64_t unsigned long): with uint64_t the compiler may assume
	 * the sum's fields unchanged (strict aliasing) and read them as 0 */
	for (int c = 0; sum && c < n; c++)
		for (size_t f = 0; f < sizeof(*sum) / sizeof(__u64); f++)
			((__u64 *)sum)[f] += ((const __u64 *)(const void *)((const char *)v +
									    (size_t)c * stride))[f];
}

struct if_emit {
	struct bpf_state *st;
	struct sample_sink *out;
};

/* Emits one interface's totals; adds the entries the probe made in fm_flows
 * and fm_qps to their maps' running sums. A kmap_sweep() callback over
 * if_totals, arg a struct if_emit: keeps every entry. */
static int if_total_emit(const void *key, void *val, void *arg)
{
	const struct fm_if_key *k = key;
	const struct fm_if_val *sum = val;
	struct bpf_state *st = ((struct if_emit *)arg)->st;
	struct sample_sink *out = ((struct if_emit *)arg)->out;
	char ifname[IF_NAMESIZE];
	struct label l[2];

	st->flows.made += sum->flows_new;
	st->qps.made += sum->qps_new;
	if (!if_indextoname(k->ifindex, ifname))
		return 1;
	l[0] = (struct label){ "interface", ifname };
	l[1] = (struct label){ "direction", k->dir == FM_DIR_INGRESS ? "rx" : "tx" };
	for (size_t f = 0; f < sizeof(if_counters) / sizeof(if_counters[0]); f++) {
		const struct metric_desc d = { .name = if_counters[f].name,
					       .help = if_counters[f].help,
					       .type = METRIC_COUNTER };

		(void)sample_counter(
			out, &d, l, 2,
			*(const __u64 *)(const void *)((const char *)sum + if_counters[f].offset));
	}
	return 1;
}

/*
 * Sums each interface's counts over the CPUs, from its fm_ifslots slots (on
 * every CPU where the slot is its own) and its fm_ifstats entry, and emits
 * them; sums the entries the probe made in fm_flows and fm_qps too.
 */
static void emit_ifstats(struct bpf_state *st, struct sample_sink *out)
{
	/* a per-CPU value's stride: the reader holds all CPUs' */
	size_t slot = st->ifslots.val_size / (size_t)st->ncpus;
	struct if_emit arg = { st, out };

	kmap_clear(st->if_totals);
	for (unsigned i = 0; i < st->ifslots.count; i++) {
		const __u32 *idx = map_key(&st->ifslots, i);

		for (int c = 0; c < st->ncpus; c++) {
			const struct fm_if_slot *s =
				(const void *)((const char *)map_val(&st->ifslots, i) +
					       (size_t)c * slot);

			/* each CPU's slot may hold another interface */
			if (s->ifindex)
				if_total_add(st, s->ifindex, *idx & 1, &s->v, 1, 0);
		}
	}
	for (unsigned i = 0; i < st->ifstats.count; i++) {
		const struct fm_if_key *k = map_key(&st->ifstats, i);

		if_total_add(st, k->ifindex, k->dir, map_val(&st->ifstats, i), st->ncpus,
			     st->ifstats.val_size / (size_t)st->ncpus);
	}
	st->flows.made = st->qps.made = 0;
	kmap_sweep(st->if_totals, if_total_emit, &arg);
}

static void emit_maps(struct bpf_state *st, struct sample_sink *out)
{
	static const struct metric_desc entries = {
		.name = "fabmon_bpf_map_entries",
		.help = "Entries in the probe's map at the last read.",
		.type = METRIC_GAUGE
	};
	static const struct metric_desc max = { .name = "fabmon_bpf_map_max_entries",
						.help = "Capacity of the probe's map.",
						.type = METRIC_GAUGE };
	static const struct metric_desc evicted = {
		.name = "fabmon_bpf_map_evicted_entries_total",
		.help = "Entries the kernel pushed out of the full LRU map before fabmon read them "
			"as idle: their last counts are lost (raise bpf_max_flows if this grows).",
		.type = METRIC_COUNTER
	};
	struct map_reader *maps[] = { &st->flows, &st->qps, &st->tcpm };

	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		struct map_reader *r = maps[i];
		struct label l = { "map", r->name };
		uint64_t gone;

		if (r->fd < 0)
			continue;
		(void)sample_gauge(out, &entries, &l, 1, r->count);
		(void)sample_gauge(out, &max, &l, 1, r->max_entries);
		if (r == &st->tcpm)
			continue; /* the tracepoints do not count what they make */
		/* made = deleted by us + evicted + still there; the running sum
		 * only ever rises, whatever the per-CPU read raced with */
		gone = r->made > r->deleted + r->count ? r->made - r->deleted - r->count : 0;
		if (gone > r->evicted)
			r->evicted = gone;
		(void)sample_counter(out, &evicted, &l, 1, r->evicted);
	}
}

static void emit_drops(struct bpf_state *st, struct sample_sink *out)
{
	static const struct metric_desc d = {
		.name = "fabmon_kernel_drops_total",
		.help = "Packets the kernel freed as dropped, by reason (skb:kfree_skb).",
		.type = METRIC_COUNTER
	};
	const struct map_reader *r = &st->dropm;

	for (unsigned i = 0; i < r->count; i++) {
		__u32 reason = *(const __u32 *)map_key(r, i);
		const uint64_t *v = map_val(r, i);
		const char *name = st->reasons ? drop_reasons_name(st->reasons, reason) : NULL;
		char num[16];
		uint64_t sum = 0;
		struct label l = { "reason", name };

		for (int c = 0; c < st->ncpus; c++)
			sum += v[c];
		if (!sum)
			continue;
		if (!name) {
			snprintf(num, sizeof(num), "%u", reason);
			l.value = num;
		}
		(void)sample_counter(out, &d, &l, 1, sum);
	}
}

static void emit_probes(struct bpf_state *st, struct sample_sink *out)
{
	static const struct metric_desc up = {
		.name = "fabmon_probe_up",
		.help = "1 if the eBPF probe is loaded and attached, 0 if not (fabmon doctor says why).",
		.type = METRIC_GAUGE
	};
	static const struct metric_desc attached = {
		.name = "fabmon_bpf_attached_interfaces",
		.help = "Interfaces the tc probe is attached to.",
		.type = METRIC_GAUGE
	};

	for (int p = 0; p < PROBE_COUNT; p++) {
		struct label l = { "probe", probe_names[p] };

		(void)sample_gauge(out, &up, &l, 1, st->up[p]);
	}
	if (st->tc)
		(void)sample_gauge(out, &attached, NULL, 0, bpf_tc_count(st->tc));
}

static void bpf_fini(void *state)
{
	struct bpf_state *st = state;

	if (!st)
		return;
	bpf_tc_free(st->tc);
	for (int p = 0; p < PROBE_COUNT; p++)
		bpf_link__destroy(st->links[p]);
	flow_bpf__destroy(st->flow);
	tcp_bpf__destroy(st->tcp);
	drop_reasons_free(st->reasons);
	map_reader_release(&st->flows);
	map_reader_release(&st->qps);
	map_reader_release(&st->tcpm);
	map_reader_release(&st->ifslots);
	map_reader_release(&st->ifstats);
	map_reader_release(&st->dropm);
	flow_series_free(st->series);
	kmap_free(st->if_totals);
	kmap_free(st->tcp_last);
	kmap_free(st->tcp_gauges);
	kmap_free(st->tcp_pairs);
	kmap_free(st->tcp_fanout);
	peer_table_free(st->tcp_peers);
	free(st->tcp_losses);
	free(st);
}

/* Appends "probe: reason" to why. */
static void why_add(char *why, size_t len, const char *probe, const char *reason, int err)
{
	size_t used = strlen(why);

	snprintf(why + used, len - used, "%s%s: %s%s%s", used ? "; " : "", probe, reason,
		 err ? ": " : "", err ? strerror(err < 0 ? -err : err) : "");
}

/* Tells the lock file, for `fabmon doctor`, how the tc probe's filters are doing. */
static void tc_note(const struct bpf_state *st, const struct collector_env *env)
{
	char note[COLLECTOR_WHY_MAX];
	const char *wrong = bpf_tc_why(st->tc);

	snprintf(note, sizeof(note), "attached to %u interface(s)%s%s", bpf_tc_count(st->tc),
		 wrong[0] ? "; " : "", wrong);
	bpf_tc_lock_note(env->tc_lock, note);
}

/*
 * Loads the tc probe and, holding env->tc_lock, attaches it; without a lock
 * (`fabmon doctor`) it stays attached nowhere. Returns 0 or -errno (why
 * filled).
 */
static int load_flow(struct bpf_state *st, const struct collector_env *env, char *why, size_t len)
{
	char err[PATH_MAX + 64];
	int r, removed;

	st->flow = flow_bpf__open();
	if (!st->flow) {
		r = -errno;
		why_add(why, len, "tc", "unable to open the probe", r);
		return r;
	}
	(void)bpf_map__set_max_entries(st->flow->maps.fm_flows, env->bpf_max_flows);
	(void)bpf_map__set_max_entries(st->flow->maps.fm_qps, env->bpf_max_flows);
	(void)bpf_map__set_max_entries(st->flow->maps.fm_paths, env->bpf_max_flows);
	st->flow->rodata->fm_roce_pmtu_shift = roce_pmtu_shift(env->roce_pmtu);
	r = flow_bpf__load(st->flow);
	if (r < 0) {
		why_add(why, len, "tc", "unable to load the probe", r);
		return r;
	}
	if (!env->tc_lock) {
		why_add(why, len, "tc", "loaded, attached nowhere (doctor changes nothing)", 0);
		return 0;
	}
	/* another live agent's filters look just like stale ones */
	r = bpf_tc_lock_take(env->tc_lock, err, sizeof(err));
	if (r == -EBUSY)
		snprintf(err + strlen(err), sizeof(err) - strlen(err),
			 ": one agent per network namespace");
	if (r < 0) {
		why_add(why, len, "tc", err, r == -EBUSY ? 0 : r);
		return r;
	}
	removed = bpf_tc_remove_stale();
	if (removed > 0) {
		char note[96];

		snprintf(note, sizeof(note), "removed %d filter(s) an earlier fabmon left",
			 removed);
		why_add(why, len, "tc", note, 0);
	}
	st->tc = bpf_tc_new(bpf_program__fd(st->flow->progs.fabmon_tc_ingress),
			    bpf_program__fd(st->flow->progs.fabmon_tc_egress));
	if (!st->tc)
		return -ENOMEM;
	r = bpf_tc_sync(st->tc, env);
	if (r < 0) {
		why_add(why, len, "tc", bpf_tc_why(st->tc), 0);
		return r;
	}
	if (bpf_tc_why(st->tc)[0])
		why_add(why, len, "tc", bpf_tc_why(st->tc), 0);
	tc_note(st, env);
	r = map_reader_init(&st->flows, st->flow->maps.fm_flows, 0, st->ncpus);
	if (r == 0)
		r = map_reader_init(&st->qps, st->flow->maps.fm_qps, 0, st->ncpus);
	if (r == 0)
		r = map_reader_init(&st->ifslots, st->flow->maps.fm_ifslots, 1, st->ncpus);
	if (r == 0)
		r = map_reader_init(&st->ifstats, st->flow->maps.fm_ifstats, 1, st->ncpus);
	return r;
}

/* Loads the tracepoint probes; each that attaches is up. Returns 0 if any is. */
/*
 * Opens and loads the tracepoint probes, with tcp_probe through BTF (plain
 * loads) when use_btf, else through the raw tracepoint. Returns 0 or -errno.
 */
static int open_tcp(struct bpf_state *st, const struct collector_env *env, int use_btf)
{
	st->tcp = tcp_bpf__open();
	if (!st->tcp)
		return -errno;
	(void)bpf_map__set_max_entries(st->tcp->maps.fm_tcp, env->bpf_max_flows);
	(void)bpf_program__set_autoload(st->tcp->progs.fabmon_tcp_probe_btf, use_btf);
	(void)bpf_program__set_autoload(st->tcp->progs.fabmon_tcp_probe, !use_btf);
	st->tcp->rodata->fm_netns_filter = env->bpf_netns && *env->bpf_netns;
	return tcp_bpf__load(st->tcp);
}

/*
 * Puts the inode numbers of the namespace files in env->bpf_netns (comma
 * separated) into fm_netns. -ENOENT (and why) if one is missing: the probes
 * would miss the connections the operator asked for.
 */
static int tcp_netns_allow(struct bpf_state *st, const struct collector_env *env, char *why,
			   size_t len)
{
	int fd = bpf_map__fd(st->tcp->maps.fm_netns), r = 0;
	char list[1024], *save = NULL;

	snprintf(list, sizeof(list), "%s", env->bpf_netns ? env->bpf_netns : "");
	for (char *path = strtok_r(list, ",", &save); path && r == 0;
	     path = strtok_r(NULL, ",", &save)) {
		const __u8 one = 1;
		struct stat sb;
		__u32 inum;

		if (stat(path, &sb) < 0) {
			char reason[160];

			r = -errno;
			snprintf(reason, sizeof(reason), "unable to open network namespace '%s'",
				 path);
			why_add(why, len, "tracepoints", reason, r);
			break;
		}
		inum = (__u32)sb.st_ino;
		if (bpf_map_update_elem(fd, &inum, &one, BPF_ANY) < 0) {
			r = -errno;
			why_add(why, len, "tracepoints", "unable to fill fm_netns", r);
		}
	}
	return r;
}

/* Loads the tracepoint probes; each that attaches is up. Returns 0 if any is. */
static int load_tcp(struct bpf_state *st, const struct collector_env *env, char *why, size_t len)
{
	struct bpf_program *progs[PROBE_COUNT] = { NULL };
	static const char *const tps[PROBE_COUNT] = { NULL, "tcp_retransmit_skb", "tcp_probe",
						      "inet_sock_set_state", "kfree_skb" };
	int r, any = 0, btf = 1;

	r = open_tcp(st, env, 1);
	if (r < 0) {
		/* no BTF-typed tracepoints here: the raw one does the same */
		tcp_bpf__destroy(st->tcp);
		btf = 0;
		r = open_tcp(st, env, 0);
	}
	if (r < 0) {
		why_add(why, len, "tracepoints", "unable to load the probes", r);
		return r;
	}
	r = tcp_netns_allow(st, env, why, len);
	if (r < 0)
		return r;
	progs[PROBE_TCP_RETRANSMIT] = st->tcp->progs.fabmon_tcp_retransmit;
	progs[PROBE_TCP_PROBE] =
		btf ? st->tcp->progs.fabmon_tcp_probe_btf : st->tcp->progs.fabmon_tcp_probe;
	progs[PROBE_TCP_STATE] = st->tcp->progs.fabmon_tcp_state;
	progs[PROBE_KFREE_SKB] = st->tcp->progs.fabmon_kfree_skb;
	for (int p = PROBE_TCP_RETRANSMIT; p < PROBE_COUNT; p++) {
		/* tp_btf attaches by its section; raw ones by tracepoint name */
		st->links[p] = p == PROBE_TCP_PROBE && btf
				       ? bpf_program__attach(progs[p])
				       : bpf_program__attach_raw_tracepoint(progs[p], tps[p]);
		if (!st->links[p]) {
			char reason[96];

			snprintf(reason, sizeof(reason), "unable to attach to raw tracepoint %s",
				 tps[p]);
			why_add(why, len, probe_names[p], reason, -errno);
			continue;
		}
		st->up[p] = 1;
		any = 1;
	}
	st->tcp_probe_btf = btf;
	if (!any)
		return -EOPNOTSUPP;
	r = map_reader_init(&st->tcpm, st->tcp->maps.fm_tcp, 0, st->ncpus);
	if (r == 0)
		r = map_reader_init(&st->dropm, st->tcp->maps.fm_drops, 1, st->ncpus);
	if (r == 0 && drop_reasons_load(&st->reasons) < 0)
		st->reasons = NULL; /* reasons then show as numbers */
	return r;
}

static int bpf_init(const struct collector_env *env, void **ret_state, char *why, size_t why_len)
{
	struct bpf_state *st = calloc(1, sizeof(*st));
	int rf, rt, r = -ENOMEM;

	if (!st)
		return r;
	libbpf_set_print(bpf_quiet);
	st->flows.fd = st->qps.fd = st->tcpm.fd = st->ifslots.fd = st->ifstats.fd = st->dropm.fd =
		-1;
	st->ncpus = libbpf_num_possible_cpus();
	if (st->ncpus <= 0)
		goto fail;
	st->series = flow_series_new(env->bpf_max_flows, env->bpf_top_peers);
	/* every slot on every CPU held by a different interface, and the hash full */
	st->if_totals = kmap_new(sizeof(struct fm_if_key), sizeof(struct fm_if_val),
				 FM_IF_SLOTS * (unsigned)st->ncpus + FM_IF_HASH_MAX);
	st->tcp_last = kmap_new(sizeof(struct fm_tcp_key), ENTRY_LAST_SIZE(TCP_PATH_RETRANSMITS),
				env->bpf_max_flows);
	st->tcp_gauges =
		kmap_new(sizeof(struct peer_id), sizeof(struct tcp_gauges), env->bpf_max_flows);
	st->tcp_pairs = kmap_new(sizeof(struct tcp_pair), 1, env->bpf_max_flows);
	st->tcp_fanout = kmap_new(sizeof(struct tcp_sender), sizeof(unsigned), env->bpf_max_flows);
	st->tcp_peers = peer_table_new(TCP_N, env->bpf_top_peers);
	if (!st->series || !st->if_totals || !st->tcp_last || !st->tcp_gauges || !st->tcp_pairs ||
	    !st->tcp_fanout || !st->tcp_peers)
		goto fail;
	rf = load_flow(st, env, why, why_len);
	st->up[PROBE_TC] = rf >= 0 && st->tc;
	if (rf < 0) {
		bpf_tc_free(st->tc);
		st->tc = NULL;
		flow_bpf__destroy(st->flow);
		st->flow = NULL;
	}
	rt = load_tcp(st, env, why, why_len);
	if (rt < 0) {
		for (int p = 0; p < PROBE_COUNT; p++) {
			bpf_link__destroy(st->links[p]);
			st->links[p] = NULL;
			if (p != PROBE_TC)
				st->up[p] = 0;
		}
		tcp_bpf__destroy(st->tcp);
		st->tcp = NULL;
	}
	if (rf < 0 && rt < 0) {
		/* nothing works: name the likely cause once */
		r = rf == -EPERM || rt == -EPERM ? -EPERM : rf;
		if (r == -EPERM)
			why_add(why, why_len, "bpf",
				"needs root or CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN", 0);
		goto fail;
	}
	for (int p = 0; p < PROBE_COUNT; p++) {
		char note[96];

		if (!st->up[p])
			continue;
		if (p == PROBE_TC)
			snprintf(note, sizeof(note), "attached to %u interface(s)",
				 bpf_tc_count(st->tc));
		else
			snprintf(note, sizeof(note), "attached (%s)",
				 p == PROBE_TCP_PROBE && st->tcp_probe_btf ? "BTF tracepoint"
									   : "raw tracepoint");
		why_add(why, why_len, probe_names[p], note, 0);
	}
	*ret_state = st;
	return 0;
fail:
	bpf_fini(st);
	return r;
}

static int bpf_sample(void *state, const struct collector_env *env, struct sample_sink *out)
{
	struct bpf_state *st = state;
	int64_t now_ns = mono_ns(), idle_ns = env->bpf_flow_idle_ms * 1000000;
	int64_t now_ms = now_ns / 1000000;
	int r = 0;

	st->tick++;
	if (st->tc) {
		/* interfaces that appeared since the last tick get the probe,
		 * and those that lost it get it back in time */
		(void)bpf_tc_sync(st->tc, env);
		st->up[PROBE_TC] = bpf_tc_lost(st->tc) == 0;
		tc_note(st, env);
		r = map_reader_read(&st->ifslots);
		if (r == 0)
			r = map_reader_read(&st->ifstats);
		if (r == 0)
			r = map_reader_read(&st->flows);
		if (r == 0)
			r = map_reader_read(&st->qps);
		if (r < 0)
			return r;
		emit_ifstats(st, out);
		sample_entries(st, &st->flows, flow_series_add_flow, now_ns, idle_ns, now_ms);
		sample_entries(st, &st->qps, flow_series_add_qp, now_ns, idle_ns, now_ms);
		flow_series_end_tick(st->series, now_ms, env->bpf_flow_idle_ms);
		flow_series_emit(st->series, out, NULL, "bpf", 1);
	}
	if (st->tcp) {
		r = map_reader_read(&st->tcpm);
		if (r == 0)
			r = map_reader_read(&st->dropm);
		if (r < 0)
			return r;
		sample_tcp(st, now_ns, idle_ns, now_ms);
		entry_forget_unseen(st->tcp_last, st->tick);
		peer_table_end_tick(st->tcp_peers, now_ms, env->bpf_flow_idle_ms);
		emit_tcp_peers(st, out, now_ns);
		emit_drops(st, out);
	}
	emit_maps(st, out);
	emit_probes(st, out);
	return 0;
}

static void bpf_news(void *state, char *buf, size_t len)
{
	const struct bpf_state *st = state;
	const char *news = st->tc ? bpf_tc_news(st->tc) : "";

	snprintf(buf, len, "%s%s", news[0] ? "tc: " : "", news);
}

const struct collector_ops bpf_collector = {
	.name = "bpf",
	.init = bpf_init,
	.sample = bpf_sample,
	.fini = bpf_fini,
	.news = bpf_news,
};
