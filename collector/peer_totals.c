/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/peer_totals.h"
#include "bpf/fabmon.h"
#include "collector/collector.h"
#include "collector/kmap.h"

/* Distinct interface/direction pairs with an "other" row, and peers without a
 * slot that one tick can rank. Past the second, counts go to "other" at once. */
#define PEER_OTHER_MAX 1024
#define PEER_CANDIDATES_MAX 1024

struct peer_totals {
	uint64_t tot[PEER_COUNTERS_MAX];
	int64_t active_ms;
};

/* A peer without a slot: its counts this tick, held until the tick ends so
 * that a peer that gets a slot keeps them and the rest go to "other". */
struct peer_candidate {
	uint64_t d[PEER_COUNTERS_MAX];
};

/* A candidate copied out for sorting. */
struct peer_ranked {
	struct peer_id id;
	uint64_t rank;
};

struct peer_table {
	unsigned ncounters, top_k;
	struct kmap *named; /* peer_id -> peer_totals */
	struct kmap *others; /* peer_id (no address) -> peer_totals */
	struct kmap *candidates; /* peer_id -> peer_candidate, this tick only */
	struct peer_ranked *order; /* scratch for ranking candidates */
};

struct peer_table *peer_table_new(unsigned ncounters, unsigned top_k)
{
	struct peer_table *pt = calloc(1, sizeof(*pt));

	if (!pt || ncounters == 0 || ncounters > PEER_COUNTERS_MAX)
		goto fail;
	pt->ncounters = ncounters;
	pt->top_k = top_k;
	pt->named = kmap_new(sizeof(struct peer_id), sizeof(struct peer_totals), top_k);
	pt->others = kmap_new(sizeof(struct peer_id), sizeof(struct peer_totals), PEER_OTHER_MAX);
	pt->candidates = kmap_new(sizeof(struct peer_id), sizeof(struct peer_candidate),
				  PEER_CANDIDATES_MAX);
	pt->order = malloc(PEER_CANDIDATES_MAX * sizeof(*pt->order));
	if (!pt->named || !pt->others || !pt->candidates || !pt->order)
		goto fail;
	return pt;
fail:
	peer_table_free(pt);
	return NULL;
}

void peer_table_free(struct peer_table *pt)
{
	if (!pt)
		return;
	kmap_free(pt->named);
	kmap_free(pt->others);
	kmap_free(pt->candidates);
	free(pt->order);
	free(pt);
}

static void totals_add(struct peer_totals *t, const uint64_t *deltas, unsigned n, int64_t now_ms)
{
	for (unsigned i = 0; i < n; i++)
		t->tot[i] += deltas[i];
	t->active_ms = now_ms;
}

void peer_table_add(struct peer_table *pt, const struct peer_id *id, const uint64_t *deltas,
		    int64_t now_ms)
{
	struct peer_totals *t = kmap_get(pt->named, id);
	struct peer_id other = { .ifindex = id->ifindex, .dir = id->dir };
	struct peer_candidate *c;
	int any = 0;

	for (unsigned i = 0; i < pt->ncounters; i++)
		any |= deltas[i] != 0;
	if (!any)
		return;
	if (t) {
		totals_add(t, deltas, pt->ncounters, now_ms);
		return;
	}
	c = kmap_put(pt->candidates, id, NULL);
	if (c) {
		for (unsigned i = 0; i < pt->ncounters; i++)
			c->d[i] += deltas[i];
		return;
	}
	t = kmap_put(pt->others, &other, NULL);
	if (t)
		totals_add(t, deltas, pt->ncounters, now_ms);
}

struct sweep_ctx {
	struct peer_table *pt;
	int64_t now_ms, idle_ms;
	unsigned n;
};

static int keep_active(const void *key, void *val, void *arg)
{
	const struct sweep_ctx *ctx = arg;
	const struct peer_totals *t = val;

	(void)key;
	return ctx->now_ms - t->active_ms <= ctx->idle_ms;
}

static int collect_candidate(const void *key, void *val, void *arg)
{
	struct sweep_ctx *ctx = arg;
	struct peer_ranked *r = &ctx->pt->order[ctx->n++];

	r->id = *(const struct peer_id *)key;
	/* a peer with packets but no bytes still ranks above none */
	r->rank = ((const struct peer_candidate *)val)->d[0] + 1;
	return 1;
}

/* Busiest first; ties by address, so the choice does not depend on hashing. */
static int by_rank_desc(const void *a, const void *b)
{
	const struct peer_ranked *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? 1 : -1;
	return memcmp(&x->id, &y->id, sizeof(x->id));
}

void peer_table_end_tick(struct peer_table *pt, int64_t now_ms, int64_t idle_ms)
{
	struct sweep_ctx ctx = { pt, now_ms, idle_ms, 0 };
	unsigned room;

	if (kmap_count(pt->named))
		kmap_sweep(pt->named, keep_active, &ctx);
	if (!kmap_count(pt->candidates))
		return;
	room = pt->top_k - kmap_count(pt->named);
	kmap_sweep(pt->candidates, collect_candidate, &ctx);
	qsort(pt->order, ctx.n, sizeof(*pt->order), by_rank_desc);
	for (unsigned i = 0; i < ctx.n; i++) {
		const struct peer_candidate *c = kmap_get(pt->candidates, &pt->order[i].id);
		struct peer_id other = { .ifindex = pt->order[i].id.ifindex,
					 .dir = pt->order[i].id.dir };
		struct peer_totals *t = NULL;

		/* the busiest take the free slots with this tick's counts; the
		 * rest add theirs to their interface's "other" row */
		if (i < room)
			t = kmap_put(pt->named, &pt->order[i].id, NULL);
		if (!t)
			t = kmap_put(pt->others, &other, NULL);
		if (t)
			totals_add(t, c->d, pt->ncounters, now_ms);
	}
	kmap_clear(pt->candidates);
}

int peer_table_named(const struct peer_table *pt, const struct peer_id *id)
{
	return kmap_get(pt->named, id) != NULL;
}

struct each_ctx {
	void (*fn)(const struct peer_id *id, const uint64_t *totals, int other, void *arg);
	void *arg;
	int other;
};

static int each(const void *key, void *val, void *arg)
{
	const struct each_ctx *ctx = arg;

	ctx->fn(key, ((const struct peer_totals *)val)->tot, ctx->other, ctx->arg);
	return 1;
}

void peer_table_foreach(struct peer_table *pt,
			void (*fn)(const struct peer_id *id, const uint64_t *totals, int other,
				   void *arg),
			void *arg)
{
	struct each_ctx ctx = { fn, arg, 0 };

	kmap_sweep(pt->named, each, &ctx);
	ctx.other = 1;
	kmap_sweep(pt->others, each, &ctx);
}

void peer_id_of(struct peer_id *id, uint32_t ifindex, uint8_t dir, uint8_t family,
		const uint8_t *saddr, const uint8_t *daddr)
{
	memset(id, 0, sizeof(*id));
	id->ifindex = ifindex;
	id->dir = dir;
	id->family = family;
	memcpy(id->addr, dir == FM_DIR_INGRESS ? saddr : daddr, sizeof(id->addr));
}

void peer_id_label(const struct peer_id *id, int other, char *buf, size_t len)
{
	if (other)
		snprintf(buf, len, "other");
	else if (!inet_ntop(id->family == FM_FAMILY_IPV4 ? AF_INET : AF_INET6, id->addr, buf,
			    (socklen_t)len))
		snprintf(buf, len, "unknown");
}

void peer_metrics_emit(struct sample_sink *out, const struct peer_metric *metrics, size_t n,
		       struct label *l, size_t nl, const uint64_t *totals)
{
	for (size_t i = 0; i < n; i++) {
		const struct peer_metric *m = &metrics[i];
		const struct metric_desc d = { .name = m->name,
					       .help = m->help,
					       .type = METRIC_COUNTER };

		l[nl] = (struct label){ m->label, m->value };
		(void)sample_counter(out, &d, l, m->label ? nl + 1 : nl, totals[m->counter]);
	}
}

void entry_deltas(struct kmap *last, const void *key, const uint64_t *cur, unsigned n,
		  uint64_t tick, uint64_t *ret_deltas)
{
	int created;
	struct entry_last *l = kmap_put(last, key, &created);

	for (unsigned i = 0; i < n; i++)
		ret_deltas[i] = !l || created || cur[i] < l->c[i] ? cur[i] : cur[i] - l->c[i];
	if (!l)
		return;
	memcpy(l->c, cur, n * sizeof(*cur));
	l->tick = tick;
}

static int entry_seen(const void *key, void *val, void *arg)
{
	(void)key;
	return ((struct entry_last *)val)->tick == *(const uint64_t *)arg;
}

void entry_forget_unseen(struct kmap *last, uint64_t tick)
{
	kmap_sweep(last, entry_seen, &tick);
}
