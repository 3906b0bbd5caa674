/* SPDX-License-Identifier: MIT */
/*
 * flows: what the tc probe (bpf/flow.bpf.c) counted, as series. Each
 * interface's totals come from its per-CPU slots and hash entry; flows and
 * RoCEv2 queue pairs become per-peer counters with bounded cardinality
 * (collector/flow_series.h), and idle entries are deleted so the maps do
 * not fill.
 */
#include <errno.h>
#include <net/if.h>
#include <stddef.h>

#include "bpf/fabmon.h"
#include "collector/bpf/state.h"
#include "collector/flow_series.h"
#include "collector/kmap.h"

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

int bpf_flows_init(struct bpf_state *st, const struct collector_env *env)
{
	st->series = flow_series_new(env->bpf_max_flows, env->bpf_top_peers);
	/* every slot on every CPU held by a different interface, and the hash full */
	st->if_totals = kmap_new(sizeof(struct fm_if_key), sizeof(struct fm_if_val),
				 FM_IF_SLOTS * (unsigned)st->ncpus + FM_IF_HASH_MAX);
	return st->series && st->if_totals ? 0 : -ENOMEM;
}

void bpf_flows_release(struct bpf_state *st)
{
	flow_series_free(st->series);
	kmap_free(st->if_totals);
}

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
		const __u32 *idx = map_reader_key(&st->ifslots, i);

		for (int c = 0; c < st->ncpus; c++) {
			const struct fm_if_slot *s =
				(const void *)((const char *)map_reader_val(&st->ifslots, i) +
					       (size_t)c * slot);

			/* each CPU's slot may hold another interface */
			if (s->ifindex)
				if_total_add(st, s->ifindex, *idx & 1, &s->v, 1, 0);
		}
	}
	for (unsigned i = 0; i < st->ifstats.count; i++) {
		const struct fm_if_key *k = map_reader_key(&st->ifstats, i);

		if_total_add(st, k->ifindex, k->dir, map_reader_val(&st->ifstats, i), st->ncpus,
			     st->ifstats.val_size / (size_t)st->ncpus);
	}
	st->flows.made = st->qps.made = 0;
	kmap_sweep(st->if_totals, if_total_emit, &arg);
}

/* Adds every entry of a flow or QP map to the series, and deletes idle ones. */
static void sample_entries(struct bpf_state *st, struct map_reader *r,
			   uint64_t (*add)(struct flow_series *fs, const void *key, const void *val,
					   int64_t now_ms),
			   int64_t now_ns, int64_t idle_ns, int64_t now_ms)
{
	for (unsigned i = 0; i < r->count; i++)
		if (now_ns - (int64_t)add(st->series, map_reader_key(r, i), map_reader_val(r, i),
					  now_ms) >
		    idle_ns)
			map_reader_delete(r, map_reader_key(r, i));
}

void bpf_flows_sample(struct bpf_state *st, const struct collector_env *env,
		      struct sample_sink *out, int64_t now_ns)
{
	int64_t idle_ns = env->bpf_flow_idle_ms * 1000000, now_ms = now_ns / 1000000;

	emit_ifstats(st, out);
	sample_entries(st, &st->flows, flow_series_add_flow, now_ns, idle_ns, now_ms);
	sample_entries(st, &st->qps, flow_series_add_qp, now_ns, idle_ns, now_ms);
	flow_series_end_tick(st->series, now_ms, env->bpf_flow_idle_ms);
	flow_series_emit(st->series, out, NULL, "bpf", 1);
}
