/* SPDX-License-Identifier: MIT */
#ifndef FABMON_FLOW_SERIES_H
#define FABMON_FLOW_SERIES_H

#include <stdint.h>

#include "collector/collector.h"

/*
 * Per-peer series of flows and RoCEv2 queue pairs (struct fm_flow_*, fm_qp_*
 * of bpf/fabmon.h), whoever counted them: the tc probe's maps (collector/bpf/flows.c)
 * or libpcap (collector/pcap/pcap.c, through collector/pcap/capture.h). Each tick every
 * live entry is added with its counters as read (totals since the entry was
 * made); the deltas go to its peer, the top peers by bytes get series of
 * their own and the rest share peer="other" (collector/peer_totals.h). Both sources emit
 * the same families, fabmon_flow_* and fabmon_roce_*, told apart by their
 * source label.
 */

struct flow_series;

/* Room for max_entries flows and as many QPs; top_peers named peers per
 * family. NULL on allocation failure. */
struct flow_series *flow_series_new(unsigned max_entries, unsigned top_peers);
void flow_series_free(struct flow_series *fs);

/* Adds one flow (struct fm_flow_key, fm_flow_val) or one QP (fm_qp_key,
 * fm_qp_val) as read this tick. Returns the entry's last_ns, so that the
 * caller can delete idle entries at their source. */
uint64_t flow_series_add_flow(struct flow_series *fs, const void *key, const void *val,
			      int64_t now_ms);
uint64_t flow_series_add_qp(struct flow_series *fs, const void *key, const void *val,
			    int64_t now_ms);

/* Ends the tick: forgets entries not added in it; peers idle past idle_ms
 * give up their slot to the busiest without one. */
void flow_series_end_tick(struct flow_series *fs, int64_t now_ms, int64_t idle_ms);

/*
 * Emits every named peer's and every "other" row's counters, labelled
 * interface (ifname, or if NULL the name of the entry's ifindex: an
 * interface that is gone is skipped, its series expire), direction
 * ("rx"/"tx") if with_direction, peer and source.
 */
void flow_series_emit(struct flow_series *fs, struct sample_sink *out, const char *ifname,
		      const char *source, int with_direction);

#endif
