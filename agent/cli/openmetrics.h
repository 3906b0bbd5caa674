/* SPDX-License-Identifier: MIT */
#ifndef FABMON_CLI_OPENMETRICS_H
#define FABMON_CLI_OPENMETRICS_H

#include <stdint.h>

#include "agent/lib/strbuf.h"

/*
 * The OpenMetrics 1.0 text format as `promtool tsdb create-blocks-from
 * openmetrics` reads it: a "# TYPE" line per family, then its samples with
 * a timestamp in seconds, and "# EOF" last. Labels are written as the store
 * keeps them (key="value", text-format escaping, which OpenMetrics shares).
 */

/*
 * Appends the TYPE line of a stored metric. A counter's family is its name
 * without "_total" (OpenMetrics names the samples, not the family, with the
 * suffix); a counter whose name lacks the suffix cannot be one in
 * OpenMetrics and is typed "unknown", which keeps its samples as they are.
 */
void openmetrics_type(struct strbuf *sb, const char *metric, int counter);

/*
 * Appends one sample line: metric{extra,labels} value seconds. extra and
 * labels are key="value" lists joined by commas, either may be empty; a
 * key of extra that labels also has is left out (the stored label wins, so
 * no line carries a label twice). NaN and infinities are written as
 * OpenMetrics spells them.
 */
void openmetrics_sample(struct strbuf *sb, const char *metric, const char *extra,
			const char *labels, int64_t ts_ms, double value);

/* Appends "# EOF\n", the line a consumer needs to accept the exposition. */
void openmetrics_eof(struct strbuf *sb);

#endif
