/* SPDX-License-Identifier: MIT */
#ifndef FABMON_REPLAY_TICK_H
#define FABMON_REPLAY_TICK_H

#include <stddef.h>
#include <stdint.h>

#include "agent/config.h"
#include "agent/detect/events.h"
#include "collector/pcap/capture.h"

/*
 * The agent's pipeline run in a capture's own time for `fabmon replay`: at
 * each tick boundary (every interval of packet time) the capture's counts so
 * far become series (collector/flow_series.h, interface="capture",
 * source="pcap"), the detectors judge them, events open and close with the
 * agent's hysteresis, and with a database the tick and its events are
 * stored as the agent would store them, stamped with capture time.
 */

struct replay_ticks;

/*
 * Makes the pipeline: detector thresholds and hysteresis from cfg, ticks of
 * cfg->interval_ms, the database cfg->db_path if db (created or migrated).
 * Returns 0, or -errno with the reason in err.
 */
int replay_ticks_new(const struct config *cfg, int db, struct replay_ticks **ret, char *err,
		     size_t err_len);
void replay_ticks_free(struct replay_ticks *t);

/*
 * Takes ts_ns, the timestamp of the packet about to be counted in cap, runs
 * the ticks that ended at or before it and returns the time to count it at.
 * That time never goes back: where the timestamps step back (captures
 * concatenated with `mergecap -a`), the packet is counted at the time of the
 * one before it and the clock goes on from there, so that what comes after
 * a step keeps its own pace. Without a step the time is ts_ns. A gap in the
 * capture runs a few empty ticks (so that events can close) and then jumps.
 */
uint64_t replay_ticks_advance(struct replay_ticks *t, struct capture *cap, uint64_t ts_ns);

/* Runs the tick that holds the last packet. Events still open are stored
 * as ending there (the report keeps them open). */
void replay_ticks_finish(struct replay_ticks *t, struct capture *cap);

/* Ticks run, and how many of them could not be stored (the first reason in
 * *ret_err, "" if none). */
uint64_t replay_ticks_count(const struct replay_ticks *t, uint64_t *ret_store_errors,
			    const char **ret_err);

/* How often the timestamps stepped back, and the largest step in *ret_max_ns. */
uint64_t replay_ticks_steps_back(const struct replay_ticks *t, uint64_t *ret_max_ns);

/* The events found, in the order they opened (end_ms 0: still open when the
 * capture ended). */
size_t replay_ticks_events(const struct replay_ticks *t, const struct event **ret);

#endif
