/* SPDX-License-Identifier: MIT */
#ifndef FABMON_DETECT_H
#define FABMON_DETECT_H

#include <stddef.h>
#include <stdint.h>

#include "agent/config.h"
#include "agent/detect/stall.h"
#include "agent/detect/events.h"
#include "agent/registry/registry.h"

/*
 * The step between the registry and the events: reads this tick's series
 * each detector needs, runs the detectors (pure functions, detect_*.c) and
 * collects their verdicts.
 */

struct detect_config {
	struct stall_bounds stall; /* detect_stall's bounds */
	double pfc_paused_fraction; /* detect_pfc's: share of time paused */
	double hotspot_util; /* detect_hotspot's: share of capacity in use; detect_lossy's bound */
	double lossy_error_share; /* detect_lossy's: errors per packet */
	int64_t lossy_window_ms; /* over this long */
	int64_t path_window_ms; /* detect_path's: peers compared if active this recently */
	double incast_fraction; /* detect_path's: share of the others' delivery rate */
	double straggler_fraction;
	double handoff_ratio; /* detect_handoff's: transfer time over its baseline */
};

/* The detectors' settings from the agent's configuration. */
void detect_config_init(struct detect_config *d, const struct config *cfg);

/* Fills out (at most max) with this tick's verdicts, every field of each;
 * returns how many. */
size_t detect_run(const struct detect_config *cfg, struct registry *reg, struct event_verdict *out,
		  size_t max);

#endif
