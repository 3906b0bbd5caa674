/* SPDX-License-Identifier: MIT */
#ifndef FABMON_QUERY_HISTORY_H
#define FABMON_QUERY_HISTORY_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/store/query_json.h"

/*
 * Stored samples as the review paths read them: `fabmon history` and GET
 * /api/v1/query_range and /api/v1/series ask the same questions.
 *
 * Samples live in three places (schema/003_packed.sql): the staged newest
 * ticks, packed blocks per series, and 1-minute rollups per series and
 * hour. A step of whole minutes reads rollups, then raw samples for the
 * minutes no rollup row holds yet; other steps read raw samples. A minute
 * of rollup counts in the step where it starts.
 */

#define HISTORY_LABELS_MAX 16
#define HISTORY_LABEL_LEN 300

enum history_agg {
	HISTORY_AVG,
	HISTORY_MAX,
	HISTORY_MIN,
	HISTORY_LAST,
	HISTORY_COUNT, /* the samples a step holds */
	HISTORY_AGGS
};

/* "avg", "max", "min", "last", "count". */
extern const char *const history_agg_names[HISTORY_AGGS];

/* What an error lists: the names above. */
#define HISTORY_AGG_LIST "avg, max, min, last or count"

/* The aggregation named name, or -1. */
int history_agg_parse(const char *name);

struct history_query {
	const char *metric;
	/* each key="value" as the store keeps labels (history_label_filter) */
	const char *labels[HISTORY_LABELS_MAX];
	int nlabels;
	int64_t since_ms, until_ms, step_ms;
	enum history_agg agg;
	int raw; /* counters keep their stored totals, not their rates (export) */
	size_t max_points; /* series x steps history_run takes on; 0: no bound */
	int64_t deadline_ms; /* monotonic: history_run gives up then; 0: never */
};

/* One step of one series. */
struct history_cell {
	double sum, max, min, last;
	int64_t last_ms;
	unsigned n;
};

struct history_series {
	int64_t id;
	char *labels;
	int counter; /* values are per-second rates */
	struct history_cell *cells; /* one a step */
};

/* Warnings a result keeps: past them, one more says how many there were. */
#define HISTORY_WARNINGS_MAX 16

struct history_result {
	struct history_series *series;
	int n;
	size_t steps;
	/* stored rows the query skipped as corrupt (a checksum or a decoding
	 * that fails), each named: "skipped a corrupt block of
	 * METRIC{labels} from RFC 3339 to RFC 3339" */
	char **warnings;
	int nwarnings;
};

/*
 * Writes KEY=VALUE as key="value" into out[len], escaped as the store keeps
 * labels. Returns 0, or -EINVAL (no '=', empty key, too long).
 */
int history_label_filter(const char *kv, char *out, size_t len);

/* Steps the window takes at q's step. */
size_t history_steps(const struct history_query *q);

/*
 * Runs q: the metric's series matching every label filter, at most
 * max_series of them, each step's samples combined. A stored row that is
 * corrupt is skipped and named in ret->warnings; the rest is returned.
 * Returns 0 and fills *ret (free with history_result_free), or -ENOENT (no
 * such metric), -E2BIG (more series than max_series, or more values than
 * q->max_points: found before any sample is read), -ETIMEDOUT
 * (q->deadline_ms passed between two rows), -ENOMEM, -EIO
 * (sqlite3_errmsg(db) says why; also a statement interrupted by the
 * connection's progress handler).
 */
int history_run(sqlite3 *db, const struct history_query *q, int max_series,
		struct history_result *ret);
void history_result_free(struct history_result *r);

/* A step's value under q's aggregation (the cell has samples). */
double history_value(const struct history_query *q, const struct history_cell *c);

/* {"metric","labels","unit":"per_second"|"value","agg","step_seconds",
 * "points":[[RFC 3339, value],...]}, steps with no sample left out. */
json_t *history_series_json(const struct history_query *q, const struct history_series *s,
			    size_t steps);

/*
 * Calls fn for each stored series of metric (every metric if NULL) that
 * matches the label filters, ordered by name and labels, until fn returns
 * non-zero (returned). Returns 0 or -EIO.
 */
int history_list_series(sqlite3 *db, const char *metric, const char *const *labels, int nlabels,
			int (*fn)(int64_t id, const char *name, const char *labels,
				  const char *type, void *arg),
			void *arg);

/* Series history_around shows at most. */
#define HISTORY_AROUND_SERIES 32

/*
 * The stored samples of an event's subject ("peer=ADDR", "interface=IF",
 * "device=D,port=P": the series that carry those labels, at most
 * HISTORY_AROUND_SERIES) over [since_ms, until_ms], one value a step, the
 * step long enough that all the points stay within max_points: a JSON
 * array of history_series_json objects, empty when the subject is not
 * labels or nothing is stored. NULL only when out of memory.
 */
json_t *history_around(sqlite3 *db, const char *subject, int64_t since_ms, int64_t until_ms,
		       size_t max_points);

#endif
