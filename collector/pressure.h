/* SPDX-License-Identifier: MIT */
#ifndef FABMON_PRESSURE_H
#define FABMON_PRESSURE_H

#include <stdint.h>

/*
 * Pressure stall information (Documentation/accounting/psi.rst): a file of
 * /proc/pressure/ (cpu, io, memory) holds two lines,
 *   some avg10=0.00 avg60=0.00 avg300=0.00 total=12345
 *   full avg10=0.00 avg60=0.00 avg300=0.00 total=0
 * where total counts the microseconds in which some (or all) non-idle tasks
 * waited for the resource. The averages are the kernel's own decaying ones:
 * the agent rates the totals over its tick instead.
 */
#define PRESSURE_SOME 1
#define PRESSURE_FULL 2

/* Reads text's totals into *ret_some_us and *ret_full_us. Returns the lines
 * found (PRESSURE_SOME | PRESSURE_FULL), or -EINVAL if neither is there or
 * one is malformed. A line the kernel may add later is passed over. */
int pressure_parse(const char *text, uint64_t *ret_some_us, uint64_t *ret_full_us);

#endif
