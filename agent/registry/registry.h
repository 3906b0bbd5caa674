/* SPDX-License-Identifier: MIT */
#ifndef FABMON_REGISTRY_H
#define FABMON_REGISTRY_H

#include <stdint.h>

#include "agent/lib/strbuf.h"
#include "collector/collector.h"

/*
 * The registry interns series (a metric name plus its labels), turns counter
 * readings into monotonic totals and per-second rates, holds gauges, bounds
 * the number of series, and expires series that stopped being reported (a
 * vanished interface). It is used from the tick thread only.
 */

struct registry;

/* One series as the store and the exposition see it. */
struct series {
	const char *name; /* family name: one pointer for all of a family's series */
	const char *help;
	enum metric_type type;
	const char *labels; /* Prometheus text: key="value",... (escaped), "" if none */
	double value; /* gauge value, or the counter's monotonic total */
	double rate; /* counters: per-second rate over the last interval */
	int has_rate; /* counters: 0 until two readings exist */
	int64_t last_ms; /* tick time of the last reading */
	int64_t store_id; /* the store's id for this series; 0 = not yet stored */
};

/*
 * Makes a registry holding at most max_series series; a series not reported
 * for expiry_ms is forgotten. Returns NULL on allocation failure.
 */
struct registry *registry_new(unsigned max_series, int64_t expiry_ms);
void registry_free(struct registry *reg);

/* Starts a tick at wall-clock time now_ms (milliseconds since the epoch). */
void registry_begin_tick(struct registry *reg, int64_t now_ms);

/*
 * The sink a collector writes into for this tick; samples are attributed to
 * the named collector (for fabmon_collector_skipped_values_total). The name
 * must outlive the registry (collector names are static). Valid until the
 * next call.
 */
struct sample_sink *registry_sink(struct registry *reg, const char *collector);

/* Values skipped by collector so far (see sample_skip()). */
uint64_t registry_skipped(const struct registry *reg, const char *collector);

/* Ends the tick: forgets series idle past the expiry. */
void registry_end_tick(struct registry *reg);

/* Number of series held (a histogram's buckets, _sum and _count each one),
 * and samples dropped because the registry was full. */
unsigned registry_count(const struct registry *reg);
uint64_t registry_dropped(const struct registry *reg);

/* Time of the current tick. */
int64_t registry_now(const struct registry *reg);

/*
 * Calls fn for each series reported in the current tick (fresh only), in order
 * of family name, then labels: a family's series come one after another,
 * under one name pointer. Stops at and returns the first non-zero fn
 * result. fn may change s->store_id and nothing else. The series of a
 * histogram sampled whole (sample_histogram()) are made for the call: s, and
 * a bucket's labels, are valid only until fn returns.
 */
int registry_foreach(struct registry *reg, int (*fn)(struct series *s, void *arg), void *arg);

/* Sets store_id to 0 on every series (the store lost a transaction). */
void registry_forget_store_ids(struct registry *reg);

#endif
