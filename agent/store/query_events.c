/* SPDX-License-Identifier: MIT */
#include <errno.h>

#include "agent/store/query_events.h"
#include "agent/lib/clock.h"
#include "agent/lib/timefmt.h"

int query_events(sqlite3 *db, const struct events_query *q,
		 int (*fn)(const struct event_row *r, void *arg), void *arg)
{
	static const char sql[] =
		"SELECT id, kind, subject, start_ms, end_ms, peak_score, evidence, open_ms, cause "
		"FROM events "
		"WHERE (?5 > 0 AND id = ?5) OR (?5 <= 0 AND start_ms <= ?1 AND "
		"(end_ms IS NULL OR end_ms >= ?2) AND (?3 IS NULL OR kind = ?3) AND "
		"(?4 IS NULL OR instr(subject, ?4) > 0)) ORDER BY start_ms, id";
	sqlite3_stmt *s = NULL;
	int rc, r = 0;

	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(s, 1, q->until_ms);
	sqlite3_bind_int64(s, 2, q->since_ms);
	if (q->kind)
		sqlite3_bind_text(s, 3, q->kind, -1, SQLITE_STATIC);
	if (q->subject)
		sqlite3_bind_text(s, 4, q->subject, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 5, q->id);
	while (!r && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct event_row row = {
			.id = sqlite3_column_int64(s, 0),
			.kind = (const char *)sqlite3_column_text(s, 1),
			.subject = (const char *)sqlite3_column_text(s, 2),
			.start_ms = sqlite3_column_int64(s, 3),
			.end_ms = sqlite3_column_type(s, 4) == SQLITE_NULL
					  ? 0
					  : sqlite3_column_int64(s, 4),
			.peak = sqlite3_column_double(s, 5),
			.evidence = (const char *)sqlite3_column_text(s, 6),
			.open_ms = sqlite3_column_type(s, 7) == SQLITE_NULL
					   ? 0
					   : sqlite3_column_int64(s, 7),
			.cause = (const char *)sqlite3_column_text(s, 8),
		};

		r = fn(&row, arg);
		if (!r && clock_past(q->deadline_ms))
			r = -ETIMEDOUT;
	}
	if (!r && rc != SQLITE_DONE)
		r = -EIO;
	sqlite3_finalize(s);
	return r;
}

json_t *event_row_json(const struct event_row *r, int64_t now_ms)
{
	char t0[40], t1[40], topen[40];
	json_t *o, *evidence;

	time_format_rfc3339(r->start_ms, t0, sizeof(t0));
	time_format_rfc3339(r->end_ms, t1, sizeof(t1));
	time_format_rfc3339(r->open_ms, topen, sizeof(topen));
	/* the agent wrote a JSON object; anything else is shown as text */
	evidence = r->evidence ? json_loads(r->evidence, 0, NULL) : NULL;
	if (!evidence)
		evidence = json_string(r->evidence ? r->evidence : "");
	o = json_pack("{s:I,s:s,s:s,s:s,s:s,s:o,s:o,s:f,s:f,s:o}", "id", (json_int_t)r->id, "kind",
		      r->kind ? r->kind : "", "cause", r->cause ? r->cause : "", "subject",
		      r->subject ? r->subject : "", "start", t0, "opened",
		      r->open_ms ? json_string(topen) : json_null(), "end",
		      r->end_ms ? json_string(t1) : json_null(), "duration_seconds",
		      (double)((r->end_ms ? r->end_ms : now_ms) - r->start_ms) / 1000.0,
		      "peak_score", r->peak, "evidence", evidence);
	return o;
}
