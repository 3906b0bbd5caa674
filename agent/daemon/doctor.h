/* SPDX-License-Identifier: MIT */
#ifndef FABMON_DOCTOR_H
#define FABMON_DOCTOR_H

#include <stdio.h>

#include "agent/config.h"

/*
 * Tells, for every collector (not only the configured ones), whether its
 * source is available on this host and why not; where the tc probe would
 * attach, which fabmon filters are attached and which agent holds them; and
 * whether the database and the listen address would work. Prints to out and
 * changes nothing on the host. An absent source is a fact about the host,
 * not a failure: returns 0, or 1 if the database exists but cannot be used.
 */
int doctor_run(const struct config *cfg, FILE *out);

#endif
