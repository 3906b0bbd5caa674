/* SPDX-License-Identifier: MIT */
#ifndef FABMON_HTTP_API_H
#define FABMON_HTTP_API_H

#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/store/query_events.h"
#include "agent/store/query_history.h"

/*
 * The JSON API under /api/v1/, read from the database at db_path, opened
 * read-only for each request:
 *  - /api/v1/events?start=&end=&kind=&subject=  the events overlapping the
 *    window (default the last 24 h; times as fabmon events takes them):
 *    {"status":"ok","data":[...],"truncated":false};
 *  - /api/v1/events/ID  one event: {"status":"ok","data":{...}}, 404 if none;
 *  - /api/v1/series?match=NAME&label=K=V...  the stored series (all of
 *    them without match), {"metric","labels","type"} each;
 *  - /api/v1/query_range?metric=&label=K=V...&start=&end=&step=&agg=  each
 *    matching series' values a step (fabmon history's), at most max_points
 *    values in all.
 * Errors are JSON, {"status":"error","error":"...","parameter":"..."}: 400
 * for an unknown parameter, a bad value or too many values, 404 for another
 * path, 503 when the database cannot be opened or the query outlives its
 * deadline.
 *
 * A request is parsed on libmicrohttpd's thread (http_api_prepare), which
 * answers bad ones at once, and run elsewhere (http_api_run), which builds
 * the answer without touching the connection.
 */

/* What to send: status and response (NULL: it could not be built). */
struct http_api_answer {
	unsigned status;
	struct MHD_Response *response;
};

struct http_api_request;

/*
 * Parses GET url under /api/v1/. Returns a request to run, or NULL with the
 * answer in *ret (400 naming the parameter, 404, or 500 out of memory).
 * The request borrows the connection's strings: it must be run or freed
 * before the connection's request completes.
 */
struct http_api_request *http_api_prepare(struct MHD_Connection *c, const char *url,
					  unsigned max_points, struct http_api_answer *ret);

/*
 * Runs req against the database at db_path, and frees it. The answer goes
 * in *ret: a 503 with a JSON error when deadline_ms (monotonic) passes
 * before the answer is built, checked between rows and, through SQLite's
 * progress handler, inside long statements.
 */
void http_api_run(struct http_api_request *req, const char *db_path, int64_t deadline_ms,
		  struct http_api_answer *ret);

/* Frees a request that will not be run. Accepts NULL. */
void http_api_request_free(struct http_api_request *req);

/* A 503 with Retry-After and a JSON error saying why. */
void http_api_busy(const char *why, struct http_api_answer *ret);

/*
 * The parsing of a request's query parameters, apart from the connection
 * (so that it can be fuzzed): the parameters in request order, as MHD
 * decoded them (value NULL for "?key" without "="); strings are borrowed.
 */
struct http_api_arg {
	const char *key, *value;
};

struct http_api_args {
	struct http_api_arg *arg;
	size_t n, cap;
};

/* Appends a parameter. Returns 0 or -ENOMEM. */
int http_api_args_add(struct http_api_args *args, const char *key, const char *value);

/* Frees the list (not the strings). */
void http_api_args_release(struct http_api_args *args);

/* Why a request's parameters were refused: the parameter (NULL if none is
 * to blame) and a static message. */
struct http_api_error {
	const char *param;
	const char *why;
};

/*
 * /api/v1/events (rest "") or /api/v1/events/ID (rest "/ID") into q, at
 * time now_ms. Returns 0, -EINVAL (a 400: unknown parameter, bad time, end
 * before start, unknown kind, bad id) or -ENOENT (a 404: another path), with
 * e set.
 */
int http_api_parse_events(const char *rest, const struct http_api_args *args, int64_t now_ms,
			  struct events_query *q, struct http_api_error *e);

/* /api/v1/series into q (labels held in buf). Returns 0 or -EINVAL with e. */
int http_api_parse_series(const struct http_api_args *args, struct history_query *q,
			  char (*buf)[HISTORY_LABEL_LEN], struct http_api_error *e);

/* /api/v1/query_range into q (labels held in buf): at most max_points steps.
 * Returns 0 or -EINVAL with e. */
int http_api_parse_range(const struct http_api_args *args, int64_t now_ms, unsigned max_points,
			 struct history_query *q, char (*buf)[HISTORY_LABEL_LEN],
			 struct http_api_error *e);

#endif
