/* SPDX-License-Identifier: MIT */
#ifndef FABMON_AGENT_H
#define FABMON_AGENT_H

#include "agent/config.h"

/*
 * Runs the agent until SIGTERM or SIGINT: opens the store, starts HTTP, then
 * ticks every cfg->interval_ms (collect -> registry -> store -> snapshot).
 * SIGHUP rebuilds the config from src (borrowed until it returns) in a
 * thread, and the ticks go on meanwhile; a bad one is reported and the
 * running one kept. Logs its own errors once. Returns the process exit status: 0 on a
 * clean stop, 1 if the store or the listener could not be set up.
 */
int agent_run(const struct config_source *src, const struct config *cfg);

#endif
