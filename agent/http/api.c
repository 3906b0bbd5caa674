/* SPDX-License-Identifier: MIT */
/*
 * The JSON API under /api/v1/: events, series and query_range, read from the
 * database on each request through a read-only connection of its own
 * (SQLite's WAL: the tick thread's writes never wait for it). Strict: an
 * unknown parameter, a bad time, an end before the start is a 400 whose JSON
 * body names the parameter. Answers are bounded: at most HTTP_API_EVENTS_MAX
 * events or series (then "truncated": true), and api_max_points values.
 */
#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#include "agent/http/api.h"
#include "agent/config.h"
#include "agent/detect/events.h"
#include "agent/lib/clock.h"
#include "agent/lib/timefmt.h"
#include "agent/store/query_events.h"
#include "agent/store/query_history.h"
#include "agent/store/store.h"

#define HTTP_API_EVENTS_MAX 10000
/* series one query_range answer may hold, before its points are counted */
#define HTTP_API_SERIES_MAX 1000
/* An event's samples are shown from this long before it to this long after. */
#define EVENT_AROUND_MS 60000
#define HTTP_API_RANGE_DEFAULT_MS (3600 * 1000LL)
#define HTTP_API_DEFAULT_WINDOW_MS (24 * 3600 * 1000LL)
#define HTTP_API_PATHS                                                                             \
	"not found: /api/v1/events, /api/v1/events/ID, /api/v1/series, /api/v1/query_range"

/* The answer: o (taken) as JSON with status; NULL o is a 500. */
static void answer_json(struct http_api_answer *ans, unsigned status, json_t *o)
{
	char *text = o ? json_dumps(o, QUERY_JSON_FLAGS) : NULL;
	struct MHD_Response *r;

	json_decref(o);
	if (!text) {
		static const char oom[] = "{\"status\":\"error\",\"error\":\"out of memory\"}";

		status = MHD_HTTP_INTERNAL_SERVER_ERROR;
		r = MHD_create_response_from_buffer(sizeof(oom) - 1, (void *)oom,
						    MHD_RESPMEM_PERSISTENT);
	} else {
		r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	}
	if (!r)
		free(text);
	else
		(void)MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	ans->status = status;
	ans->response = r;
}

static void answer_error(struct http_api_answer *ans, unsigned status, const char *param,
			 const char *why)
{
	json_t *o = json_pack("{s:s,s:s}", "status", "error", "error", why);

	if (o && param)
		json_object_set_new(o, "parameter", json_string(param));
	answer_json(ans, status, o);
}

void http_api_busy(const char *why, struct http_api_answer *ret)
{
	answer_error(ret, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, why);
	/* a client that retries at once would find the queue as full */
	if (ret->response)
		(void)MHD_add_response_header(ret->response, MHD_HTTP_HEADER_RETRY_AFTER, "1");
}

/* The first value of key (NULL for "?key" without "="), as
 * MHD_lookup_connection_value gives it; def if absent. */
static const char *arg_value(const struct http_api_args *args, const char *key, int *present)
{
	for (size_t i = 0; i < args->n; i++)
		if (strcmp(args->arg[i].key, key) == 0) {
			if (present)
				*present = 1;
			return args->arg[i].value;
		}
	if (present)
		*present = 0;
	return NULL;
}

static int parse_error(struct http_api_error *e, const char *param, const char *why)
{
	e->param = param;
	e->why = why;
	return -EINVAL;
}

/* The first parameter that is not one of known, or NULL. */
static const char *unknown_param(const struct http_api_args *args, const char *const *known)
{
	for (size_t i = 0; i < args->n; i++) {
		const char *const *k = known;

		while (*k && strcmp(*k, args->arg[i].key) != 0)
			k++;
		if (!*k)
			return args->arg[i].key;
	}
	return NULL;
}

static int only_params(const struct http_api_args *args, const char *const *known,
		       struct http_api_error *e)
{
	const char *u = unknown_param(args, known);

	return u ? parse_error(e, u, "unknown parameter") : 0;
}

/* A time parameter, or def if absent (or without a value). */
static int time_param(const struct http_api_args *args, const char *name, int64_t def, int64_t now,
		      int64_t *ret, struct http_api_error *e)
{
	const char *v = arg_value(args, name, NULL);

	*ret = def;
	if (!v || time_parse(v, now, ret) == 0)
		return 0;
	return parse_error(e, name, "not a time: RFC 3339, Unix seconds, or now-15m");
}

/* The label=K=V filters, into q and buf. */
static int labels_param(const struct http_api_args *args, struct history_query *q,
			char (*buf)[HISTORY_LABEL_LEN], struct http_api_error *e)
{
	for (size_t i = 0; i < args->n; i++) {
		const char *v = args->arg[i].value;

		if (strcmp(args->arg[i].key, "label") != 0)
			continue;
		if (!v || q->nlabels == HISTORY_LABELS_MAX ||
		    history_label_filter(v, buf[q->nlabels], HISTORY_LABEL_LEN) < 0)
			return parse_error(e, "label", "not KEY=VALUE (16 at most)");
		q->labels[q->nlabels] = buf[q->nlabels];
		q->nlabels++;
	}
	return 0;
}

int http_api_parse_events(const char *rest, const struct http_api_args *args, int64_t now,
			  struct events_query *q, struct http_api_error *e)
{
	static const char *const list_params[] = { "start", "end", "kind", "subject", NULL };
	static const char *const none[] = { NULL };
	char *end;

	*q = (struct events_query){ 0 };
	if (*rest == '/') {
		q->id = strtoll(rest + 1, &end, 10);
		if (*end || end == rest + 1 || q->id <= 0)
			return parse_error(e, "id", "not an event id (a positive integer)");
		return only_params(args, none, e);
	}
	if (*rest) {
		e->param = NULL;
		e->why = HTTP_API_PATHS;
		return -ENOENT;
	}
	if (only_params(args, list_params, e) < 0 ||
	    time_param(args, "start", now - HTTP_API_DEFAULT_WINDOW_MS, now, &q->since_ms, e) < 0 ||
	    time_param(args, "end", now, now, &q->until_ms, e) < 0)
		return -EINVAL;
	if (q->until_ms < q->since_ms)
		return parse_error(e, "end", "end is before start");
	q->kind = arg_value(args, "kind", NULL);
	if (q->kind && event_kind_parse(q->kind) < 0)
		return parse_error(e, "kind",
				   "not one of hotspot, incast, stall, pfc_storm, straggler, "
				   "slow_handoff");
	q->subject = arg_value(args, "subject", NULL);
	return 0;
}

int http_api_parse_series(const struct http_api_args *args, struct history_query *q,
			  char (*buf)[HISTORY_LABEL_LEN], struct http_api_error *e)
{
	static const char *const known[] = { "match", "label", NULL };

	*q = (struct history_query){ 0 };
	if (only_params(args, known, e) < 0 || labels_param(args, q, buf, e) < 0)
		return -EINVAL;
	q->metric = arg_value(args, "match", NULL);
	return 0;
}

int http_api_parse_range(const struct http_api_args *args, int64_t now, unsigned max_points,
			 struct history_query *q, char (*buf)[HISTORY_LABEL_LEN],
			 struct http_api_error *e)
{
	static const char *const known[] = {
		"metric", "label", "start", "end", "step", "agg", NULL
	};
	const char *step = arg_value(args, "step", NULL);
	const char *agg = arg_value(args, "agg", NULL);

	*q = (struct history_query){ 0 };
	q->metric = arg_value(args, "metric", NULL);
	if (only_params(args, known, e) < 0 || labels_param(args, q, buf, e) < 0)
		return -EINVAL;
	if (!q->metric || !*q->metric)
		return parse_error(e, "metric", "a metric name is needed");
	if (time_param(args, "start", now - HTTP_API_RANGE_DEFAULT_MS, now, &q->since_ms, e) < 0 ||
	    time_param(args, "end", now, now, &q->until_ms, e) < 0)
		return -EINVAL;
	if (q->until_ms < q->since_ms)
		return parse_error(e, "end", "end is before start");
	if (!step || duration_parse(step, &q->step_ms) < 0 || q->step_ms < 1)
		return parse_error(e, "step", "a duration is needed: 10s, 1m");
	if (agg && history_agg_parse(agg) < 0)
		return parse_error(e, "agg", "not " HISTORY_AGG_LIST);
	q->agg = agg ? (enum history_agg)history_agg_parse(agg) : HISTORY_AVG;
	if (history_steps(q) > max_points)
		return parse_error(e, "step",
				   "too many points: take a longer step or a shorter window");
	return 0;
}

int http_api_args_add(struct http_api_args *args, const char *key, const char *value)
{
	if (args->n == args->cap) {
		size_t cap = args->cap ? args->cap * 2 : 16;
		struct http_api_arg *n = realloc(args->arg, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		args->arg = n;
		args->cap = cap;
	}
	args->arg[args->n].key = key;
	args->arg[args->n].value = value;
	args->n++;
	return 0;
}

void http_api_args_release(struct http_api_args *args)
{
	free(args->arg);
	*args = (struct http_api_args){ 0 };
}

static enum MHD_Result take_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				const char *value)
{
	(void)kind;
	return http_api_args_add(cls, key, value) == 0 ? MHD_YES : MHD_NO;
}

/* The request's query parameters in order, as MHD decoded them; borrowed
 * from the connection. Returns 0 or -ENOMEM. */
static int request_args(struct MHD_Connection *c, struct http_api_args *args)
{
	size_t want = (size_t)MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, NULL, NULL);

	*args = (struct http_api_args){ 0 };
	return (size_t)MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, take_arg, args) ==
				       want &&
			       args->n == want
		       ? 0
		       : -ENOMEM;
}

/* The answer to a request whose parameters did not parse. */
static void answer_parse_error(struct http_api_answer *ans, int r, const struct http_api_error *e)
{
	if (r == -ENOMEM)
		answer_json(ans, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL);
	else
		answer_error(ans, r == -ENOENT ? MHD_HTTP_NOT_FOUND : MHD_HTTP_BAD_REQUEST,
			     e->param, e->why);
}

enum api_kind { API_EVENTS, API_SERIES, API_RANGE };

struct http_api_request {
	enum api_kind kind;
	unsigned max_points;
	struct http_api_args args;
	struct events_query ev;
	struct history_query hq; /* series and query_range */
	char buf[HISTORY_LABELS_MAX][HISTORY_LABEL_LEN]; /* hq's labels */
};

/* Parses req's parameters as url asks. Returns 0 or -errno with e set. */
static int parse_request(struct http_api_request *req, const char *url, int64_t now,
			 struct http_api_error *e)
{
	static const char events[] = "/api/v1/events";

	if (strncmp(url, events, sizeof(events) - 1) == 0) {
		req->kind = API_EVENTS;
		return http_api_parse_events(url + sizeof(events) - 1, &req->args, now, &req->ev,
					     e);
	}
	if (strcmp(url, "/api/v1/series") == 0) {
		req->kind = API_SERIES;
		return http_api_parse_series(&req->args, &req->hq, req->buf, e);
	}
	if (strcmp(url, "/api/v1/query_range") == 0) {
		req->kind = API_RANGE;
		return http_api_parse_range(&req->args, now, req->max_points, &req->hq, req->buf,
					    e);
	}
	e->param = NULL;
	e->why = HTTP_API_PATHS;
	return -ENOENT;
}

struct http_api_request *http_api_prepare(struct MHD_Connection *c, const char *url,
					  unsigned max_points, struct http_api_answer *ret)
{
	struct http_api_request *req = calloc(1, sizeof(*req));
	struct http_api_error e;
	int r = req ? request_args(c, &req->args) : -ENOMEM;

	if (r == 0) {
		req->max_points = max_points;
		r = parse_request(req, url, clock_wall_ms(), &e);
	}
	if (r < 0) {
		answer_parse_error(ret, r, &e);
		http_api_request_free(req);
		return NULL;
	}
	/* so that a query_range with too many values is refused before a
	 * sample is read */
	req->hq.max_points = max_points;
	return req;
}

void http_api_request_free(struct http_api_request *req)
{
	if (!req)
		return;
	http_api_args_release(&req->args);
	free(req);
}

struct collect {
	json_t *list;
	int64_t now_ms;
	int truncated;
	/* the last event's subject and times, for the samples around it */
	char subject[256];
	int64_t start_ms, end_ms;
};

static int collect_row(const struct event_row *r, void *arg)
{
	struct collect *col = arg;

	if (json_array_size(col->list) == HTTP_API_EVENTS_MAX) {
		col->truncated = 1;
		return 1;
	}
	snprintf(col->subject, sizeof(col->subject), "%s", r->subject ? r->subject : "");
	col->start_ms = r->start_ms;
	col->end_ms = r->end_ms ? r->end_ms : col->now_ms;
	return json_array_append_new(col->list, event_row_json(r, col->now_ms)) ? -ENOMEM : 0;
}

/* The events q asks for; id > 0 asks for one event, and its subject's
 * samples from a minute before it to a minute after. Returns 0 or -errno. */
static int run_events(sqlite3 *db, const struct events_query *q, unsigned max_points,
		      struct http_api_answer *ans)
{
	struct collect col = { json_array(), clock_wall_ms(), 0, "", 0, 0 };
	json_t *samples = NULL, *o;
	int r;

	if (!col.list)
		return -ENOMEM;
	r = query_events(db, q, collect_row, &col);
	if (!r && q->id > 0 && json_array_size(col.list))
		samples = history_around(db, col.subject, col.start_ms - EVENT_AROUND_MS,
					 col.end_ms + EVENT_AROUND_MS, max_points);
	if (!r && clock_past(q->deadline_ms))
		r = -ETIMEDOUT; /* history_around may have been cut short */
	if (r < 0 && r != -ENOMEM) {
		json_decref(samples);
		json_decref(col.list);
		return r;
	}
	if (q->id > 0) {
		o = json_incref(json_array_get(col.list, 0));
		json_decref(col.list);
		if (!o) {
			answer_error(ans, MHD_HTTP_NOT_FOUND, NULL, "no such event");
			return 0;
		}
		(void)json_object_set_new(o, "samples", samples ? samples : json_array());
		answer_json(ans, MHD_HTTP_OK, json_pack("{s:s,s:o}", "status", "ok", "data", o));
		return 0;
	}
	answer_json(ans, MHD_HTTP_OK,
		    json_pack("{s:s,s:o,s:b}", "status", "ok", "data", col.list, "truncated",
			      col.truncated));
	return 0;
}

struct series_list {
	json_t *list;
	int truncated;
};

static int list_one(int64_t id, const char *name, const char *labels, const char *type, void *arg)
{
	struct series_list *sl = arg;

	(void)id;
	if (json_array_size(sl->list) == HTTP_API_EVENTS_MAX) {
		sl->truncated = 1;
		return 1;
	}
	return json_array_append_new(sl->list, json_pack("{s:s,s:s,s:s}", "metric", name, "labels",
							 labels, "type", type))
		       ? -ENOMEM
		       : 0;
}

static int run_series(sqlite3 *db, const struct history_query *q, struct http_api_answer *ans)
{
	struct series_list sl = { json_array(), 0 };
	int r = sl.list ? history_list_series(db, q->metric, q->labels, q->nlabels, list_one, &sl)
			: -ENOMEM;

	if (r < 0) {
		json_decref(sl.list);
		return r;
	}
	answer_json(ans, MHD_HTTP_OK,
		    json_pack("{s:s,s:o,s:b}", "status", "ok", "data", sl.list, "truncated",
			      sl.truncated));
	return 0;
}

static int run_range(sqlite3 *db, const struct history_query *q, struct http_api_answer *ans)
{
	struct history_result res;
	json_t *list, *o, *warnings;
	int r = history_run(db, q, HTTP_API_SERIES_MAX, &res);

	if (r == -ENOENT) {
		answer_error(ans, MHD_HTTP_BAD_REQUEST, "metric", "no such metric");
		return 0;
	}
	if (r == -E2BIG) {
		answer_error(ans, MHD_HTTP_BAD_REQUEST, "label",
			     "too many points: narrow the series with label=K=V");
		return 0;
	}
	if (r < 0)
		return r;
	list = json_array();
	for (int i = 0; list && i < res.n && !clock_past(q->deadline_ms); i++)
		if (json_array_append_new(list, history_series_json(q, &res.series[i], res.steps)))
			break;
	o = list ? json_pack("{s:s,s:o}", "status", "ok", "data", list) : NULL;
	/* as Prometheus' API: present only when there is something to say */
	warnings = res.nwarnings ? json_array() : NULL;
	for (int i = 0; warnings && i < res.nwarnings; i++)
		(void)json_array_append_new(warnings, json_string(res.warnings[i]));
	if (o && warnings)
		(void)json_object_set(o, "warnings", warnings);
	json_decref(warnings);
	history_result_free(&res);
	if (clock_past(q->deadline_ms)) {
		json_decref(o);
		return -ETIMEDOUT;
	}
	answer_json(ans, MHD_HTTP_OK, o);
	return 0;
}

/* SQLite's progress handler: a long statement is interrupted once the
 * request's deadline has passed. */
static int past_deadline(void *arg)
{
	return clock_past(*(const int64_t *)arg);
}

void http_api_run(struct http_api_request *req, const char *db_path, int64_t deadline_ms,
		  struct http_api_answer *ret)
{
	struct store *st = NULL;
	sqlite3 *db;
	char err[512];
	int r;

	req->ev.deadline_ms = req->hq.deadline_ms = deadline_ms;
	r = store_open(db_path, STORE_READ_ONLY, &st, err, sizeof(err));
	if (r < 0) {
		answer_error(ret, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, err);
		goto out;
	}
	db = store_db(st);
	/* a statement's own loops, a sort or a scan of a table, between rows */
	sqlite3_progress_handler(db, 1000, past_deadline, &deadline_ms);
	r = req->kind == API_EVENTS   ? run_events(db, &req->ev, req->max_points, ret)
	    : req->kind == API_SERIES ? run_series(db, &req->hq, ret)
				      : run_range(db, &req->hq, ret);
	store_close(st);
	if (r < 0 && clock_past(deadline_ms))
		answer_error(ret, MHD_HTTP_SERVICE_UNAVAILABLE, NULL,
			     "the query took longer than api_timeout: narrow the window or the "
			     "series, or take a longer step");
	else if (r == -ENOMEM)
		answer_json(ret, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL);
	else if (r < 0)
		answer_error(ret, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "database read failed");
out:
	http_api_request_free(req);
}
