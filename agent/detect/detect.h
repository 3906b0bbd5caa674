/* SPDX-License-Identifier: MIT */
#ifndef FABMON_DETECT_H
#define FABMON_DETECT_H

#include <stddef.h>
#include <stdint.h>

#include "agent/config.h"
#include "agent/detect/events.h"
#include "agent/registry/registry.h"

/*
 * The step between the registry and the events: reads this tick's series
 * each detector needs, runs the detectors (pure functions, one file each) and
 * collects their verdicts.
 */

/*
 * All detector state: what each remembers from tick to tick (a path's
 * windows, a port's errors, open stalls) and each tick's gathered input.
 * The daemon and replay each own one; two never share state, so detectors
 * run as often in a process as there are objects.
 */
struct detect;

/* A detector set with cfg's bounds and no history. Returns 0, or -ENOMEM. */
int detect_new(const struct config *cfg, struct detect **ret);
/* New bounds (a reloaded config); the history is kept. */
void detect_configure(struct detect *d, const struct config *cfg);
void detect_free(struct detect *d);

/* Reads this tick's series in reg and fills out (at most max) with the
 * verdicts, every field of each; returns how many. */
size_t detect_run(struct detect *d, struct registry *reg, struct event_verdict *out, size_t max);

#endif
