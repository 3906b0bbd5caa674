/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdlib.h>

#include "agent/detect/window.h"

void window_add(struct window *w, double v)
{
	w->v[w->next] = v;
	w->next = (w->next + 1) % WINDOW_SAMPLES;
	if (w->count < WINDOW_SAMPLES)
		w->count++;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void sort_values(double *v, unsigned n)
{
	/* a window's few readings by insertion: qsort()'s calls through
	 * cmp_double() for the medians of 3 were a tenth of detect_run()'s
	 * instructions at 1000 peers (callgrind over tests/bench/detectcost.c) */
	if (n > WINDOW_SAMPLES) {
		qsort(v, n, sizeof(*v), cmp_double);
		return;
	}
	for (unsigned i = 1; i < n; i++) {
		double x = v[i];
		unsigned j = i;

		for (; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

double quantile_of(double *v, unsigned n, double q)
{
	sort_values(v, n);
	return quantile_without(v, n, NAN, q);
}

double window_quantile(const struct window *w, unsigned skip, unsigned k, double q)
{
	double v[WINDOW_SAMPLES];

	for (unsigned i = 0; i < k; i++)
		v[i] = w->v[(w->next + 2 * WINDOW_SAMPLES - 1 - skip - i) % WINDOW_SAMPLES];
	return quantile_of(v, k, q);
}

double quantile_without(const double *sorted, unsigned n, double x, double q)
{
	unsigned lo = 0, hi = n, skip = n, m = n, at;
	double pos, a, b;

	if (!isnan(x)) {
		/* the first reading not below x: x itself, as it is there */
		while (lo < hi) {
			unsigned mid = lo + (hi - lo) / 2;

			if (sorted[mid] < x)
				lo = mid + 1;
			else
				hi = mid;
		}
		skip = lo;
		m = n - 1;
	}
	if (m == 0)
		return NAN;
	pos = q * (m - 1);
	at = (unsigned)pos;
	/* rank r of the rest is sorted[r], or the one after where x was */
	a = sorted[at < skip ? at : at + 1];
	/* on a rank exactly, that reading: 0 * (INFINITY - a) would be NAN */
	if (at + 1 >= m || pos == at)
		return a;
	b = sorted[at + 1 < skip ? at + 1 : at + 2];
	return a + (pos - at) * (b - a);
}
