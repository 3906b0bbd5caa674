/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdlib.h>

#include "suites.h"
#include "testutil.h"

#include "agent/detect/window.h"

/* Readings with repeats: a leave-one-out over equal values is the same. */
#define WINDOW_TEST_N 9

/* quantile_without() is quantile_of() over the readings less the one left out. */
START_TEST(test_without_matches)
{
	double v[WINDOW_TEST_N], sorted[WINDOW_TEST_N], rest[WINDOW_TEST_N];
	const double qs[] = { 0, 0.25, 0.5, 0.9, 1 };

	srand(7);
	for (int round = 0; round < 200; round++) {
		unsigned n = 1 + (unsigned)rand() % WINDOW_TEST_N;

		for (unsigned i = 0; i < n; i++)
			v[i] = sorted[i] = (double)(rand() % 5);
		sort_values(sorted, n);
		for (unsigned i = 0; i < n; i++)
			for (size_t q = 0; q < sizeof(qs) / sizeof(qs[0]); q++) {
				unsigned m = 0;

				for (unsigned j = 0; j < n; j++)
					if (j != i)
						rest[m++] = v[j];
				if (m == 0) {
					ck_assert(isnan(quantile_without(sorted, n, v[i], qs[q])));
					continue;
				}
				ck_assert_double_eq(quantile_without(sorted, n, v[i], qs[q]),
						    quantile_of(rest, m, qs[q]));
			}
		/* NAN leaves none out */
		for (unsigned j = 0; j < n; j++)
			rest[j] = v[j];
		ck_assert_double_eq(quantile_without(sorted, n, NAN, 0.5),
				    quantile_of(rest, n, 0.5));
	}
}
END_TEST

/* A median on a rank exactly is that reading, an INFINITY beside it or not. */
START_TEST(test_infinite_neighbour)
{
	double v[] = { INFINITY, 1, 2 };
	double sorted[] = { 1, 2, 3, INFINITY };

	ck_assert_double_eq(quantile_of(v, 3, 0.5), 2);
	ck_assert_double_eq(quantile_without(sorted, 4, 3, 0.5), 2);
	ck_assert_double_eq(quantile_without(sorted, 4, 1, 0.5), 3);
	ck_assert(isinf(quantile_without(sorted, 4, 1, 1)));
}
END_TEST

static int cmp_ref(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* sort_values() sorts as qsort() does, on both sides of its insertion
 * sort's bound (WINDOW_SAMPLES). */
START_TEST(test_sort_values)
{
	double v[3 * WINDOW_SAMPLES], ref[3 * WINDOW_SAMPLES];

	srand(11);
	for (int round = 0; round < 500; round++) {
		unsigned n = 1 + (unsigned)rand() % (3 * WINDOW_SAMPLES);

		for (unsigned i = 0; i < n; i++)
			v[i] = ref[i] = (double)(rand() % 7) - 3.5 * (rand() % 2);
		sort_values(v, n);
		qsort(ref, n, sizeof(ref[0]), cmp_ref);
		for (unsigned i = 0; i < n; i++)
			ck_assert_double_eq(v[i], ref[i]);
	}
}
END_TEST

Suite *window_suite(void)
{
	const struct testutil_case cases[] = {
		{ "sort_values", test_sort_values, 0 },
		{ "without_matches", test_without_matches, 0 },
		{ "infinite_neighbour", test_infinite_neighbour, 0 },
	};

	return TESTUTIL_SUITE("window", cases);
}
