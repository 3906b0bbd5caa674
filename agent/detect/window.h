/* SPDX-License-Identifier: MIT */
#ifndef FABMON_WINDOW_H
#define FABMON_WINDOW_H

/*
 * The last WINDOW_SAMPLES readings of one thing (a path's delivery rate, a
 * peer's transfer duration), newest last, for the detectors' medians.
 */
#define WINDOW_SAMPLES 16

struct window {
	double v[WINDOW_SAMPLES];
	unsigned next; /* where the next reading goes */
	unsigned count; /* readings held, up to WINDOW_SAMPLES */
};

/* Adds a reading, dropping the oldest when full. */
void window_add(struct window *w, double v);

/*
 * The q-quantile (0..1, interpolated between ranks) of k readings, skipping
 * the newest skip: (0, 3, 0.5) is the median of the newest three. skip + k
 * must not exceed count; k >= 1.
 */
double window_quantile(const struct window *w, unsigned skip, unsigned k, double q);

static inline double window_median(const struct window *w, unsigned skip, unsigned k)
{
	return window_quantile(w, skip, k, 0.5);
}

/* The q-quantile of v[0..n), n >= 1; sorts v. */
double quantile_of(double *v, unsigned n, double q);

/* Sorts v[0..n) ascending (NANs not allowed), for quantile_without(). */
void sort_values(double *v, unsigned n);

/*
 * The q-quantile, as quantile_of()'s, of sorted[0..n) (sort_values()) less
 * one reading equal to x, which must be among them; of all n when x is NAN.
 * NAN when that leaves none. O(log n): each of n peers can be set against
 * the others' median of one sort, not n sorts.
 */
double quantile_without(const double *sorted, unsigned n, double x, double q);

#endif
