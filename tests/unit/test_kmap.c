/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <stdint.h>

#include "collector/kmap.h"
#include "suites.h"

struct key {
	uint32_t a, b;
};

static int keep_even(const void *key, void *val, void *arg)
{
	(void)val;
	(void)arg;
	return ((const struct key *)key)->a % 2 == 0;
}

/* A table grows from its first few slots to max_entries: every entry stays
 * where kmap_get finds it through each doubling, the bound holds, and a
 * sweep removes exactly what it is told to. */
START_TEST(test_grow_and_bound)
{
	enum { N = 5000 };
	struct kmap *m = kmap_new(sizeof(struct key), sizeof(uint64_t), N);
	int created;

	ck_assert_ptr_nonnull(m);
	for (uint32_t i = 0; i < N; i++) {
		struct key k = { i, ~i };
		uint64_t *v = kmap_put(m, &k, &created);

		ck_assert_ptr_nonnull(v);
		ck_assert_int_eq(created, 1);
		*v = i * 3;
	}
	ck_assert_uint_eq(kmap_count(m), N);
	ck_assert_ptr_null(kmap_put(m, &(struct key){ N, 0 }, &created));
	for (uint32_t i = 0; i < N; i++) {
		const uint64_t *v = kmap_get(m, &(struct key){ i, ~i });

		ck_assert_ptr_nonnull(v);
		ck_assert_uint_eq(*v, (uint64_t)i * 3);
	}
	kmap_sweep(m, keep_even, NULL);
	ck_assert_uint_eq(kmap_count(m), N / 2);
	for (uint32_t i = 0; i < N; i++)
		ck_assert(!kmap_get(m, &(struct key){ i, ~i }) == (i % 2 == 1));
	kmap_free(m);
}
END_TEST

Suite *kmap_suite(void)
{
	Suite *s = suite_create("kmap");
	TCase *tc = tcase_create("kmap");

	tcase_add_test(tc, test_grow_and_bound);
	suite_add_tcase(s, tc);
	return s;
}
