/* SPDX-License-Identifier: MIT */
#ifndef FABMON_QUERY_EVENTS_H
#define FABMON_QUERY_EVENTS_H

#include <sqlite3.h>
#include <stdint.h>

#include "agent/store/query_json.h"

/*
 * The events table as the review paths read it: `fabmon events` and
 * GET /api/v1/events ask the same question and give the same JSON.
 */

struct events_query {
	int64_t since_ms, until_ms; /* events that overlap [since, until] */
	const char *kind; /* NULL: any */
	const char *subject; /* NULL: any; else a substring of the subject */
	int64_t id; /* > 0: only this event, whatever the window */
	int64_t deadline_ms; /* monotonic: query_events gives up then; 0: never */
};

/* One row; strings valid during the callback only. */
struct event_row {
	int64_t id;
	const char *kind, *cause, *subject, *evidence; /* cause: "network" or "host" */
	int64_t start_ms, end_ms; /* end_ms 0: still open */
	int64_t open_ms; /* 0: stored before the agent recorded it (schema 4) */
	double peak;
};

/*
 * Calls fn for each matching event, oldest first, until fn returns non-zero
 * (returned). Returns 0, -ETIMEDOUT (q->deadline_ms passed between two
 * rows), or -EIO with the reason from sqlite3_errmsg(db).
 */
int query_events(sqlite3 *db, const struct events_query *q,
		 int (*fn)(const struct event_row *r, void *arg), void *arg);

/*
 * The row as a JSON object: id, kind, cause, subject, start, opened and end (RFC
 * 3339 UTC; opened null if not recorded, end null while open), duration_seconds (to now_ms while open), peak_score,
 * evidence (the detector's JSON object). NULL on allocation failure.
 */
json_t *event_row_json(const struct event_row *r, int64_t now_ms);

#endif
