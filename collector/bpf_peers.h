/* SPDX-License-Identifier: MIT */
#ifndef FABMON_BPF_PEERS_H
#define FABMON_BPF_PEERS_H

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
