/* SPDX-License-Identifier: MIT */
#ifndef FABMON_BPF_STATE_H
#define FABMON_BPF_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "collector/bpf/maps.h"
#include "collector/collector.h"

/*
 * The bpf collector's state, private to collector/bpf/: load.c loads and
 * attaches the probes, fills the map readers each tick and hands them to
 * flows.c (the tc probe's maps), tcp.c (the tracepoints' connections) and
 * drops.c (skb:kfree_skb's counts), which turn them into series. Each of
 * those owns the tables it keeps across ticks and frees them, built or not.
 */

/* The probes, each up or not on its own (fabmon_probe_up). */
enum bpf_probe {
	PROBE_TC,
	PROBE_TCP_RETRANSMIT,
	PROBE_TCP_PROBE,
	PROBE_TCP_STATE,
	PROBE_KFREE_SKB,
	PROBE_COUNT
};

struct bpf_link;
struct bpf_tc;
struct drop_reasons;
struct flow_bpf;
struct flow_series;
struct kmap;
struct peer_table;
struct tcp_bpf;
struct tcp_loss_pair;

struct bpf_state {
	/* load.c's: the probes, and the readers of their maps (fd -1 where
	 * the probe did not load) */
	struct flow_bpf *flow;
	struct tcp_bpf *tcp;
	struct bpf_link *links[PROBE_COUNT];
	struct bpf_tc *tc;
	struct drop_reasons *reasons; /* NULL: reasons show as numbers */
	int up[PROBE_COUNT];
	int tcp_probe_btf; /* tcp_probe attached through BTF (tp_btf), not raw */
	int ncpus;
	uint64_t tick;
	struct map_reader flows, qps, tcpm, ifslots, ifstats, dropm;
	/* flows.c's */
	struct kmap *if_totals; /* fm_if_key -> fm_if_val: slots and hash summed, this tick */
	struct flow_series *series; /* the tc probe's flows and QPs */
	/* tcp.c's */
	struct kmap *tcp_last;
	struct kmap *tcp_gauges; /* peer_id -> tcp_gauges, this tick */
	struct kmap *tcp_pairs; /* tcp_pair -> unused: who delivered to whom this tick */
	struct kmap *tcp_fanout; /* tcp_sender -> unsigned: peers it delivered to this tick */
	struct peer_table *tcp_peers;
	/* this tick's connections with retransmits; grown as needed */
	struct tcp_loss_pair *tcp_losses;
	size_t tcp_losses_room;
};

/*
 * Makes flows.c's tables, sized by env and st->ncpus (set first). Returns 0
 * or -ENOMEM; bpf_flows_release() frees them either way.
 */
int bpf_flows_init(struct bpf_state *st, const struct collector_env *env);
void bpf_flows_release(struct bpf_state *st);

/*
 * From this tick's reads of fm_ifslots, fm_ifstats, fm_flows and fm_qps:
 * emits each interface's totals and the flow and QP series, and deletes
 * entries idle for env->bpf_flow_idle_ms. now_ns: the tick's time, on the
 * probes' clock (CLOCK_MONOTONIC).
 */
void bpf_flows_sample(struct bpf_state *st, const struct collector_env *env,
		      struct sample_sink *out, int64_t now_ns);

/* As bpf_flows_init() and bpf_flows_release(), for tcp.c's tables. */
int bpf_tcp_init(struct bpf_state *st, const struct collector_env *env);
void bpf_tcp_release(struct bpf_state *st);

/*
 * From this tick's read of fm_tcp: emits the per-peer TCP counters, gauges
 * and transfer histograms, and deletes connections closed or idle for
 * env->bpf_flow_idle_ms. now_ns as bpf_flows_sample()'s.
 */
void bpf_tcp_sample(struct bpf_state *st, const struct collector_env *env, struct sample_sink *out,
		    int64_t now_ns);

/* From this tick's read of fm_drops: emits the kernel's drops by reason. */
void bpf_drops_emit(const struct bpf_state *st, struct sample_sink *out);

#endif
