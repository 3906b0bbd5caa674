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

#include "events.h"
#include "http_api.h"
#include "clock.h"
#include "config.h"
#include "query_events.h"
#include "query_history.h"
#include "store.h"
#include "timefmt.h"

#define HTTP_API_EVENTS_MAX 10000
/* series one query_range answer may hold, before its points are counted */
#define HTTP_API_SERIES_MAX 1000
/* An event's samples are shown from this long before it to this long after. */
#define EVENT_AROUND_MS 60000
#define HTTP_API_RANGE_DEFAULT_MS (3600 * 1000LL)
#define HTTP_API_DEFAULT_WINDOW_MS (24 * 3600 * 1000LL)
#define HTTP_API_PATHS                                                                             \
	"not found: /api/v1/events, /api/v1/events/ID, /api/v1/series, /api/v1/query_range"

/* Sends o (taking it) with status; NULL o is a 500. */
static enum MHD_Result reply_json(struct MHD_Connection *c, unsigned status, json_t *o)
{
	char *text = o ? json_dumps(o, QUERY_JSON_FLAGS) : NULL;
	struct MHD_Response *r;
	enum MHD_Result ret;

	json_decref(o);
	if (!text) {
		static const char oom[] = "{\"status\":\"error\",\"error\":\"out of memory\"}";

		status = MHD_HTTP_INTERNAL_SERVER_ERROR;
		r = MHD_create_response_from_buffer(sizeof(oom) - 1, (void *)oom,
						    MHD_RESPMEM_PERSISTENT);
	} else {
		r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	}
	if (!r) {
		free(text);
		return MHD_NO;
	}
	(void)MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_error(struct MHD_Connection *c, unsigned status, const char *param,
				   const char *why)
{
	json_t *o = json_pack("{s:s,s:s}", "status", "error", "error", why);

	if (o && param)
		json_object_set_new(o, "parameter", json_string(param));
	return reply_json(c, status, o);
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
	if (!step || config_parse_duration(step, &q->step_ms) < 0 || q->step_ms < 1)
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

/* Replies to a request whose parameters did not parse. */
static enum MHD_Result reply_parse_error(struct MHD_Connection *c, int r,
					 const struct http_api_error *e)
{
	if (r == -ENOMEM)
		return reply_json(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL);
	return reply_error(c, r == -ENOENT ? MHD_HTTP_NOT_FOUND : MHD_HTTP_BAD_REQUEST, e->param,
			   e->why);
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

/* Runs q against the database and replies; id > 0 asks for one event, and
 * its subject's samples from a minute before it to a minute after. */
static enum MHD_Result answer(struct MHD_Connection *c, const char *db_path,
			      const struct events_query *q, unsigned max_points)
{
	struct collect col = { json_array(), clock_wall_ms(), 0, "", 0, 0 };
	json_t *samples = NULL;
	struct store *st = NULL;
	char err[512];
	json_t *o;
	int r;

	if (!col.list)
		return reply_json(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL);
	if (store_open(db_path, STORE_READ_ONLY, &st, err, sizeof(err)) < 0) {
		json_decref(col.list);
		return reply_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, err);
	}
	r = query_events(store_db(st), q, collect_row, &col);
	if (!r && q->id > 0 && json_array_size(col.list))
		samples = history_around(store_db(st), col.subject, col.start_ms - EVENT_AROUND_MS,
					 col.end_ms + EVENT_AROUND_MS, max_points);
	store_close(st);
	if (r < 0 && r != -ENOMEM) {
		json_decref(col.list);
		return reply_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "database read failed");
	}
	if (q->id > 0) {
		o = json_incref(json_array_get(col.list, 0));
		json_decref(col.list);
		if (!o)
			return reply_error(c, MHD_HTTP_NOT_FOUND, NULL, "no such event");
		(void)json_object_set_new(o, "samples", samples ? samples : json_array());
		return reply_json(c, MHD_HTTP_OK,
				  json_pack("{s:s,s:o}", "status", "ok", "data", o));
	}
	return reply_json(c, MHD_HTTP_OK,
			  json_pack("{s:s,s:o,s:b}", "status", "ok", "data", col.list, "truncated",
				    col.truncated));
}

static enum MHD_Result serve_events(struct MHD_Connection *c, const char *rest, const char *db_path,
				    unsigned max_points)
{
	struct http_api_args args;
	struct http_api_error e;
	struct events_query q;
	enum MHD_Result ret;
	int r = request_args(c, &args);

	if (r == 0)
		r = http_api_parse_events(rest, &args, clock_wall_ms(), &q, &e);
	ret = r < 0 ? reply_parse_error(c, r, &e) : answer(c, db_path, &q, max_points);
	http_api_args_release(&args);
	return ret;
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

/* Opens the database for a request, or replies 503 and returns NULL. */
static struct store *open_db(struct MHD_Connection *c, const char *db_path)
{
	struct store *st = NULL;
	char err[512];

	if (store_open(db_path, STORE_READ_ONLY, &st, err, sizeof(err)) < 0) {
		reply_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, err);
		return NULL;
	}
	return st;
}

static enum MHD_Result serve_series(struct MHD_Connection *c, const char *db_path)
{
	char buf[HISTORY_LABELS_MAX][HISTORY_LABEL_LEN]; /* per request: two server threads */
	struct series_list sl = { NULL, 0 };
	struct http_api_args args;
	struct http_api_error e;
	struct history_query q;
	enum MHD_Result ret;
	struct store *st;
	int r = request_args(c, &args);

	if (r == 0)
		r = http_api_parse_series(&args, &q, buf, &e);
	if (r < 0) {
		ret = reply_parse_error(c, r, &e);
		goto out;
	}
	ret = MHD_YES;
	if (!(st = open_db(c, db_path)))
		goto out;
	sl.list = json_array();
	r = sl.list ? history_list_series(store_db(st), q.metric, q.labels, q.nlabels, list_one,
					  &sl)
		    : -ENOMEM;
	store_close(st);
	if (r < 0) {
		json_decref(sl.list);
		ret = reply_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "database read failed");
		goto out;
	}
	ret = reply_json(c, MHD_HTTP_OK,
			 json_pack("{s:s,s:o,s:b}", "status", "ok", "data", sl.list, "truncated",
				   sl.truncated));
out:
	http_api_args_release(&args);
	return ret;
}

static enum MHD_Result serve_range(struct MHD_Connection *c, const char *db_path,
				   unsigned max_points)
{
	char buf[HISTORY_LABELS_MAX][HISTORY_LABEL_LEN]; /* per request: two server threads */
	struct http_api_args args;
	struct http_api_error e;
	struct history_query q;
	struct history_result res;
	struct store *st;
	json_t *list, *o, *warnings;
	int r = request_args(c, &args);

	if (r == 0)
		r = http_api_parse_range(&args, clock_wall_ms(), max_points, &q, buf, &e);
	if (r < 0 || !(st = open_db(c, db_path))) {
		enum MHD_Result ret = r < 0 ? reply_parse_error(c, r, &e) : MHD_YES;

		http_api_args_release(&args);
		return ret;
	}
	r = history_run(store_db(st), &q, HTTP_API_SERIES_MAX, &res);
	http_api_args_release(&args);
	store_close(st);
	if (r == -ENOENT)
		return reply_error(c, MHD_HTTP_BAD_REQUEST, "metric", "no such metric");
	if (r == -E2BIG || (!r && (size_t)res.n * res.steps > max_points)) {
		if (!r)
			history_result_free(&res);
		return reply_error(c, MHD_HTTP_BAD_REQUEST, "label",
				   "too many points: narrow the series with label=K=V");
	}
	if (r < 0)
		return reply_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "database read failed");
	list = json_array();
	for (int i = 0; list && i < res.n; i++)
		if (json_array_append_new(list, history_series_json(&q, &res.series[i], res.steps)))
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
	return reply_json(c, MHD_HTTP_OK, o);
}

enum MHD_Result http_api_serve(struct MHD_Connection *c, const char *url, const char *db_path,
			       unsigned max_points)
{
	static const char events[] = "/api/v1/events";

	if (strncmp(url, events, sizeof(events) - 1) == 0)
		return serve_events(c, url + sizeof(events) - 1, db_path, max_points);
	if (strcmp(url, "/api/v1/series") == 0)
		return serve_series(c, db_path);
	if (strcmp(url, "/api/v1/query_range") == 0)
		return serve_range(c, db_path, max_points);
	return reply_error(c, MHD_HTTP_NOT_FOUND, NULL, HTTP_API_PATHS);
}
