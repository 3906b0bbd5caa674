/* SPDX-License-Identifier: MIT */
#ifndef FABMON_TIMEFMT_H
#define FABMON_TIMEFMT_H

#include <stddef.h>
#include <stdint.h>

/*
 * Times as operators type them and read them, for the review commands
 * (fabmon events) and the replay report.
 */

/*
 * Parses "1s", "100ms", "5m", "48h", "2d" (a bare number is seconds) into
 * milliseconds: config durations, --step and "now-15m". Returns 0 or -EINVAL.
 */
int duration_parse(const char *text, int64_t *ret_ms);

/*
 * Parses text into milliseconds since the epoch, against now_ms:
 *  - "now", "now-15m", "now+1h": relative, with a duration_parse()
 *    unit (ms s m h d);
 *  - "2h", "90m": a duration alone means that long ago (for --since);
 *  - "1764641400" or "1764641400.250": Unix seconds;
 *  - RFC 3339: "2026-12-02T02:10:00Z", "...T02:10:00.5+01:00"; a space for
 *    the T; without a zone, and "2026-12-02 02:10" or "02:10" (today), it
 *    is local time (the TZ environment).
 * Returns 0, or -EINVAL.
 */
int time_parse(const char *text, int64_t now_ms, int64_t *ret_ms);

/* "2026-12-02 02:10:00.123 CET" in local time, or "...Z" in UTC with utc. */
void time_format(int64_t ms, int utc, char *buf, size_t len);

/* "2026-12-02T02:10:00.123Z": RFC 3339 in UTC, for JSON and CSV. */
void time_format_rfc3339(int64_t ms, char *buf, size_t len);

#endif
