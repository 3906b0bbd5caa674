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

double median_of(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double window_median(const struct window *w, unsigned skip, unsigned k)
{
	double v[WINDOW_SAMPLES];

	for (unsigned i = 0; i < k; i++)
		v[i] = w->v[(w->next + 2 * WINDOW_SAMPLES - 1 - skip - i) % WINDOW_SAMPLES];
	return median_of(v, k);
}
