/* SPDX-License-Identifier: MIT */
#ifndef FABMON_PIPELINE_H
#define FABMON_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/config.h"
#include "agent/detect/detect.h"
#include "agent/detect/events.h"
#include "agent/registry/registry.h"
#include "agent/store/store.h"

/*
 * The step every tick takes, whoever drives it: the series the tick's
 * sources report go through the detectors into events, and the tick's
 * samples and changed events into the store. The daemon drives it with the
 * wall clock and its collectors (daemon/tick.c); fabmon replay with a
 * capture's timestamps and what the capture counted (cli/replay_tick.c).
 * A tick is pipeline_begin(), the sources into reg, pipeline_detect(), the
 * driver's own series, pipeline_end(), then the store.
 */
struct pipeline {
	struct registry *reg;
	struct detect *detect;
	struct events *events;
	struct event_verdict verdicts[EVENTS_TRACKED];
};

/* Series expire series_expiry_ms after their last sample. Returns 0, or
 * -ENOMEM with p released. */
int pipeline_init(struct pipeline *p, const struct config *cfg, int64_t series_expiry_ms);
void pipeline_release(struct pipeline *p);

/* Starts a tick at now_ms, wall or capture time: sources report into p->reg. */
void pipeline_begin(struct pipeline *p, int64_t now_ms);

/* Runs the detectors over the tick's series; the events they open, hold or
 * close go to the registry under source. */
void pipeline_detect(struct pipeline *p, const char *source);

/* Ends the tick: its series are what /metrics and the store see. */
void pipeline_end(struct pipeline *p);

/* Writes the tick's samples to store (store_write_tick()); collect_s is how
 * long collecting took. Returns 0 or -errno with a message in err. */
int pipeline_store_tick(struct pipeline *p, struct store *store, double collect_s, char *err,
			size_t err_len);

/* Each event that changed this tick: saved to store if not NULL (a failed
 * save is tried at its next change), then passed to changed if not NULL. */
void pipeline_store_events(struct pipeline *p, struct store *store,
			   void (*changed)(struct event *e, void *arg), void *arg);

#endif
