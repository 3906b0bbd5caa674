/* SPDX-License-Identifier: MIT */
#ifndef FABMON_BPF_PEERS_H
#define FABMON_BPF_PEERS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Per-peer counter totals with bounded cardinality: at most top_k peers get
 * series of their own, chosen by bytes as slots free up; every other peer's
 * counts go to one "other" row per interface and direction. Totals only grow
 * (a peer's series counts from the tick it got its slot), so every exported
 * counter stays monotonic whatever the ranking does.
 */

struct peer_id {
	uint32_t ifindex; /* 0 where no interface is known (TCP tracepoints) */
	uint8_t dir; /* enum fm_dir */
	uint8_t family; /* FM_FAMILY_*; 0 in an "other" row */
	uint8_t pad[2];
	uint8_t addr[16]; /* zero in an "other" row */
};

#define PEER_COUNTERS_MAX 24

/* The peer of a packet or connection between saddr and daddr seen in
 * direction dir on interface ifindex: the far end, the source of what
 * arrives and the destination of what leaves. */
void peer_id_of(struct peer_id *id, uint32_t ifindex, uint8_t dir, uint8_t family,
		const uint8_t *saddr, const uint8_t *daddr);

/* The peer label's value: the address, or "other". */
void peer_id_label(const struct peer_id *id, int other, char *buf, size_t len);

/* One counter of a per-peer set, with an optional label that tells it apart
 * within its family (class="send", kind="rnr"). */
struct peer_metric {
	unsigned counter; /* index into the peer's totals */
	const char *name;
	const char *help;
	const char *label, *value;
};

struct sample_sink;
struct label;

/* Emits metrics[0..n) of totals as counters with labels l[0..nl); l has room
 * for one more label after nl. */
void peer_metrics_emit(struct sample_sink *out, const struct peer_metric *metrics, size_t n,
		       struct label *l, size_t nl, const uint64_t *totals);

/*
 * A map entry's (a flow's, a QP's, a connection's) counters when last read,
 * and the tick that read them, in a kmap keyed as the map is; the value
 * holds ENTRY_LAST_SIZE(n) bytes for n counters.
 */
struct entry_last {
	uint64_t tick;
	uint64_t c[];
};

#define ENTRY_LAST_SIZE(n) (sizeof(struct entry_last) + (n) * sizeof(uint64_t))

struct kmap;

/*
 * Turns an entry's current counters cur[0..n) into deltas against what was
 * read last, and remembers them with tick. A counter below its last value
 * means the entry was deleted and made anew in between: it counts from zero.
 */
void entry_deltas(struct kmap *last, const void *key, const uint64_t *cur, unsigned n,
		  uint64_t tick, uint64_t *ret_deltas);

/* Forgets the entries that tick did not read. */
void entry_forget_unseen(struct kmap *last, uint64_t tick);

struct peer_table;

/* ncounters counters per peer (<= PEER_COUNTERS_MAX); counter 0 ranks peers. */
struct peer_table *peer_table_new(unsigned ncounters, unsigned top_k);
void peer_table_free(struct peer_table *pt);

/* Adds deltas[0..ncounters) to id's totals this tick. */
void peer_table_add(struct peer_table *pt, const struct peer_id *id, const uint64_t *deltas,
		    int64_t now_ms);

/*
 * Ends a tick: peers with no counts for idle_ms give up their slot, then the
 * busiest peers without a slot (by counter 0 this tick) take the free ones.
 */
void peer_table_end_tick(struct peer_table *pt, int64_t now_ms, int64_t idle_ms);

/* Calls fn for every peer with a slot and every "other" row (other = 1, id
 * with zero family and address). */
void peer_table_foreach(struct peer_table *pt,
			void (*fn)(const struct peer_id *id, const uint64_t *totals, int other,
				   void *arg),
			void *arg);

/* True if id has a slot of its own. */
int peer_table_named(const struct peer_table *pt, const struct peer_id *id);

#endif
