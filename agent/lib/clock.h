/* SPDX-License-Identifier: MIT */
#ifndef FABMON_CLOCK_H
#define FABMON_CLOCK_H

#include <stdint.h>
#include <time.h>

/*
 * The two clocks the agent uses: wall time stamps samples and events (what an
 * operator asks about); the monotonic clock schedules ticks and measures
 * durations, immune to NTP steps.
 */

static inline int64_t clock_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline double clock_mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline int64_t clock_mono_ms(void)
{
	return (int64_t)(clock_mono_s() * 1000.0);
}

/* True once the monotonic clock has reached deadline_ms; a deadline of 0
 * never passes. */
static inline int clock_past(int64_t deadline_ms)
{
	return deadline_ms && clock_mono_ms() >= deadline_ms;
}

#endif
