/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collector/kmap.h"
#include "collector/peer_totals.h"
#include "suites.h"
#include "testutil.h"

/* kmap against a plain array, through inserts, deletes and sweeps that force
 * long probe runs and wrap-around (a small table, many collisions). */
START_TEST(test_kmap_model)
{
	enum { N = 200, KEYS = 300 };
	struct kmap *m = kmap_new(sizeof(uint32_t), sizeof(uint64_t), N);
	uint64_t model[KEYS];
	int present[KEYS] = { 0 };
	unsigned count = 0, seed = 12345;

	ck_assert_ptr_nonnull(m);
	for (int step = 0; step < 20000; step++) {
		uint32_t k;
		uint64_t *v;
		int created;

		seed = seed * 1103515245 + 12345;
		k = (seed >> 8) % KEYS;
		if ((seed >> 4) % 3) {
			v = kmap_put(m, &k, &created);
			if (!present[k] && count == N) {
				ck_assert_ptr_null(v); /* full */
				continue;
			}
			ck_assert_ptr_nonnull(v);
			ck_assert_int_eq(created, !present[k]);
			if (created) {
				ck_assert(*v == 0);
				present[k] = 1;
				count++;
			}
			*v += step;
			model[k] = *v;
		} else {
			kmap_del(m, &k);
			if (present[k])
				count--;
			present[k] = 0;
		}
		ck_assert_uint_eq(kmap_count(m), count);
	}
	for (uint32_t k = 0; k < KEYS; k++) {
		uint64_t *v = kmap_get(m, &k);

		ck_assert_int_eq(v != NULL, present[k]);
		if (v)
			ck_assert(*v == model[k]);
	}
	kmap_free(m);
}
END_TEST

static int keep_even(const void *key, void *val, void *arg)
{
	(void)val;
	(*(int *)arg)++;
	return *(const uint32_t *)key % 2 == 0;
}

START_TEST(test_kmap_sweep)
{
	struct kmap *m = kmap_new(sizeof(uint32_t), sizeof(uint64_t), 100);
	int visited = 0;

	for (uint32_t k = 0; k < 100; k++)
		ck_assert_ptr_nonnull(kmap_put(m, &k, NULL));
	kmap_sweep(m, keep_even, &visited);
	ck_assert_int_eq(visited, 100);
	ck_assert_uint_eq(kmap_count(m), 50);
	for (uint32_t k = 0; k < 100; k++)
		ck_assert_int_eq(kmap_get(m, &k) != NULL, k % 2 == 0);
	kmap_clear(m);
	ck_assert_uint_eq(kmap_count(m), 0);
	kmap_free(m);
}
END_TEST

struct seen {
	int named, others;
	uint64_t named_bytes, other_bytes;
	uint8_t last_named_addr;
};

static void collect(const struct peer_id *id, const uint64_t *totals, int other, void *arg)
{
	struct seen *s = arg;

	if (other) {
		s->others++;
		s->other_bytes += totals[0];
	} else {
		s->named++;
		s->named_bytes += totals[0];
		s->last_named_addr = id->addr[3];
	}
}

static struct peer_id peer(uint8_t last)
{
	struct peer_id id = { .ifindex = 2, .dir = 0, .family = 4 };

	id.addr[0] = 198;
	id.addr[1] = 18;
	id.addr[3] = last;
	return id;
}

/* Top-K by bytes, the rest in one "other" row; nothing counted twice or lost. */
START_TEST(test_peers_top_k)
{
	struct peer_table *pt = peer_table_new(2, 2);
	struct seen s = { 0 };
	uint64_t total = 0;

	for (uint8_t p = 1; p <= 5; p++) {
		struct peer_id id = peer(p);
		uint64_t d[2] = { (uint64_t)p * 1000, p };

		peer_table_add(pt, &id, d, 1000);
		total += d[0];
	}
	peer_table_end_tick(pt, 1000, 60000);
	peer_table_foreach(pt, collect, &s);
	ck_assert_int_eq(s.named, 2);
	ck_assert_int_eq(s.others, 1);
	ck_assert_uint_eq(s.named_bytes, 5000 + 4000); /* the two busiest */
	ck_assert_uint_eq(s.named_bytes + s.other_bytes, total);
	ck_assert(peer_table_named(pt, &(struct peer_id){ 0 }) == 0);
	{
		struct peer_id p5 = peer(5), p1 = peer(1);

		ck_assert(peer_table_named(pt, &p5));
		ck_assert(!peer_table_named(pt, &p1));
	}
	peer_table_free(pt);
}
END_TEST

/* Totals never fall: a busier newcomer does not take a slot that is in use,
 * an idle peer gives its slot up, and the newcomer then takes it. */
START_TEST(test_peers_monotonic)
{
	struct peer_table *pt = peer_table_new(1, 1);
	struct peer_id a = peer(1), b = peer(2);
	uint64_t small = 10, big = 1000000;
	struct seen s = { 0 };

	peer_table_add(pt, &a, &small, 1000);
	peer_table_end_tick(pt, 1000, 5000);
	ck_assert(peer_table_named(pt, &a));
	peer_table_add(pt, &b, &big, 2000);
	peer_table_end_tick(pt, 2000, 5000);
	ck_assert(peer_table_named(pt, &a));
	ck_assert(!peer_table_named(pt, &b));
	peer_table_foreach(pt, collect, &s);
	ck_assert_uint_eq(s.other_bytes, big);
	/* a goes quiet past the idle bound: b takes the slot */
	peer_table_add(pt, &b, &big, 7000);
	peer_table_end_tick(pt, 7000, 5000);
	ck_assert(!peer_table_named(pt, &a));
	ck_assert(peer_table_named(pt, &b));
	memset(&s, 0, sizeof(s));
	peer_table_foreach(pt, collect, &s);
	ck_assert_uint_eq(s.named_bytes, big);
	ck_assert_uint_eq(s.other_bytes, big); /* "other" kept what it had */
	peer_table_free(pt);
}
END_TEST

Suite *bpf_peers_suite(void)
{
	const struct testutil_case cases[] = {
		{ "kmap_model", test_kmap_model, 0 },
		{ "kmap_sweep", test_kmap_sweep, 0 },
		{ "peers_top_k", test_peers_top_k, 0 },
		{ "peers_monotonic", test_peers_monotonic, 0 },
	};

	return TESTUTIL_SUITE("bpf_peers", cases);
}
