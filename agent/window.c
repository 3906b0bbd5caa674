/* SPDX-License-Identifier: MIT */
#include <stdlib.h>

#include "window.h"

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

double quantile_of(double *v, unsigned n, double q)
{
	double pos = q * (n - 1);
	unsigned lo = (unsigned)pos;

	qsort(v, n, sizeof(*v), cmp_double);
	if (lo + 1 >= n)
		return v[n - 1];
	return v[lo] + (pos - lo) * (v[lo + 1] - v[lo]);
}

double window_quantile(const struct window *w, unsigned skip, unsigned k, double q)
{
	double v[WINDOW_SAMPLES];

	for (unsigned i = 0; i < k; i++)
		v[i] = w->v[(w->next + 2 * WINDOW_SAMPLES - 1 - skip - i) % WINDOW_SAMPLES];
	return quantile_of(v, k, q);
}
