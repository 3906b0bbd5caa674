/* SPDX-License-Identifier: MIT */
#ifndef FABMON_QUERY_JSON_H
#define FABMON_QUERY_JSON_H

#include <jansson.h>

/* json_dumps() flags for what the review paths (CLI and /api/v1/) print:
 * compact, and reals to 10 significant digits (a double's 17 show its binary
 * noise). */
#define QUERY_JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(10))

#endif
