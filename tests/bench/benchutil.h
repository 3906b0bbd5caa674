/* SPDX-License-Identifier: MIT */
#ifndef FABMON_BENCHUTIL_H
#define FABMON_BENCHUTIL_H

#include <errno.h>
#include <stdlib.h>

/* The agent's clocks (clock_mono_s() and friends): one definition for all. */
#include "agent/lib/clock.h"

/* Parses a decimal from 1 to max. Returns 0 and sets *ret, or -EINVAL. */
static inline int parse_uint(const char *s, unsigned max, unsigned *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v == 0 || v > max)
		return -EINVAL;
	*ret = (unsigned)v;
	return 0;
}

#endif
