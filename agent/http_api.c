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

/* The parameters a request may carry; the first unknown one, if any. */
struct params {
	const char *const *known;
	const char *unknown;
};

static enum MHD_Result check_param(void *cls, enum MHD_ValueKind kind, const char *key,
				   const char *value)
{
	struct params *p = cls;

	(void)kind;
	(void)value;
	for (const char *const *k = p->known; *k; k++)
		if (strcmp(*k, key) == 0)
			return MHD_YES;
	p->unknown = key;
	return MHD_NO;
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

/* A time parameter, or def if absent; 0 or -1 after replying 400. */
static int time_param(struct MHD_Connection *c, const char *name, int64_t def, int64_t now,
		      int64_t *ret)
{
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);

	*ret = def;
	if (!v)
		return 0;
	if (time_parse(v, now, ret) == 0)
		return 0;
	reply_error(c, MHD_HTTP_BAD_REQUEST, name,
		    "not a time: RFC 3339, Unix seconds, or now-15m");
	return -1;
}

static enum MHD_Result serve_events(struct MHD_Connection *c, const char *rest, const char *db_path,
				    unsigned max_points)
{
	static const char *const list_params[] = { "start", "end", "kind", "subject", NULL };
	static const char *const none[] = { NULL };
	struct events_query q = { 0 };
	struct params p = { list_params, NULL };
	int64_t now = clock_wall_ms();
	char *end;

	if (*rest == '/') {
		q.id = strtoll(rest + 1, &end, 10);
		if (*end || end == rest + 1 || q.id <= 0)
			return reply_error(c, MHD_HTTP_BAD_REQUEST, "id",
					   "not an event id (a positive integer)");
		p.known = none;
	} else if (*rest) {
		return reply_error(c, MHD_HTTP_NOT_FOUND, NULL, HTTP_API_PATHS);
	}
	(void)MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, check_param, &p);
	if (p.unknown)
		return reply_error(c, MHD_HTTP_BAD_REQUEST, p.unknown, "unknown parameter");
	if (q.id > 0)
		return answer(c, db_path, &q, max_points);
	if (time_param(c, "start", now - HTTP_API_DEFAULT_WINDOW_MS, now, &q.since_ms) < 0 ||
	    time_param(c, "end", now, now, &q.until_ms) < 0)
		return MHD_YES;
	if (q.until_ms < q.since_ms)
		return reply_error(c, MHD_HTTP_BAD_REQUEST, "end", "end is before start");
	q.kind = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "kind");
	if (q.kind && event_kind_parse(q.kind) < 0)
		return reply_error(c, MHD_HTTP_BAD_REQUEST, "kind",
				   "not one of hotspot, incast, stall, pfc_storm, "
				   "straggler, slow_handoff");
	q.subject = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "subject");
	return answer(c, db_path, &q, max_points);
}

/* The label=K=V filters of a request, into q's buffers. */
struct label_args {
	struct history_query *q;
	char (*buf)[HISTORY_LABEL_LEN];
	const char *bad; /* a value that is not KEY=VALUE, or one too many */
};

static enum MHD_Result take_label(void *cls, enum MHD_ValueKind kind, const char *key,
				  const char *value)
{
	struct label_args *la = cls;
	struct history_query *q = la->q;

	(void)kind;
	if (strcmp(key, "label") != 0)
		return MHD_YES;
	if (!value || q->nlabels == HISTORY_LABELS_MAX ||
	    history_label_filter(value, la->buf[q->nlabels], HISTORY_LABEL_LEN) < 0) {
		la->bad = value ? value : "";
		return MHD_NO;
	}
	q->labels[q->nlabels] = la->buf[q->nlabels];
	q->nlabels++;
	return MHD_YES;
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

/* Checks that the request has only these parameters; replies 400 if not. */
static int only_params(struct MHD_Connection *c, const char *const *known)
{
	struct params p = { known, NULL };

	(void)MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, check_param, &p);
	if (!p.unknown)
		return 0;
	reply_error(c, MHD_HTTP_BAD_REQUEST, p.unknown, "unknown parameter");
	return -1;
}

/* The label filters into q; replies 400 if one is bad. */
static int labels_param(struct MHD_Connection *c, struct history_query *q,
			char (*buf)[HISTORY_LABEL_LEN])
{
	struct label_args la = { q, buf, NULL };

	(void)MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, take_label, &la);
	if (!la.bad)
		return 0;
	reply_error(c, MHD_HTTP_BAD_REQUEST, "label", "not KEY=VALUE (16 at most)");
	return -1;
}

static enum MHD_Result serve_series(struct MHD_Connection *c, const char *db_path)
{
	static const char *const known[] = { "match", "label", NULL };
	char buf[HISTORY_LABELS_MAX][HISTORY_LABEL_LEN]; /* per request: two server threads */
	struct history_query q = { 0 };
	struct series_list sl = { json_array(), 0 };
	struct store *st;
	int r;

	if (only_params(c, known) < 0 || labels_param(c, &q, buf) < 0 ||
	    !(st = open_db(c, db_path))) {
		json_decref(sl.list);
		return MHD_YES;
	}
	r = sl.list ? history_list_series(
			      store_db(st),
			      MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "match"),
			      q.labels, q.nlabels, list_one, &sl)
		    : -ENOMEM;
	store_close(st);
	if (r < 0) {
		json_decref(sl.list);
		return reply_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "database read failed");
	}
	return reply_json(c, MHD_HTTP_OK,
			  json_pack("{s:s,s:o,s:b}", "status", "ok", "data", sl.list, "truncated",
				    sl.truncated));
}

/* The query_range parameters into q; replies 400 and returns -1 if bad. */
static int range_params(struct MHD_Connection *c, struct history_query *q, unsigned max_points,
			char (*buf)[HISTORY_LABEL_LEN])
{
	static const char *const known[] = {
		"metric", "label", "start", "end", "step", "agg", NULL
	};
	const char *step = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "step");
	const char *agg = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "agg");
	int64_t now = clock_wall_ms();

	q->metric = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "metric");
	if (only_params(c, known) < 0 || labels_param(c, q, buf) < 0)
		return -1;
	if (!q->metric || !*q->metric) {
		reply_error(c, MHD_HTTP_BAD_REQUEST, "metric", "a metric name is needed");
		return -1;
	}
	if (time_param(c, "start", now - HTTP_API_RANGE_DEFAULT_MS, now, &q->since_ms) < 0 ||
	    time_param(c, "end", now, now, &q->until_ms) < 0)
		return -1;
	if (q->until_ms < q->since_ms) {
		reply_error(c, MHD_HTTP_BAD_REQUEST, "end", "end is before start");
		return -1;
	}
	if (!step || config_parse_duration(step, &q->step_ms) < 0 || q->step_ms < 1) {
		reply_error(c, MHD_HTTP_BAD_REQUEST, "step", "a duration is needed: 10s, 1m");
		return -1;
	}
	if (agg && history_agg_parse(agg) < 0) {
		reply_error(c, MHD_HTTP_BAD_REQUEST, "agg", "not avg, max, min, last or count");
		return -1;
	}
	q->agg = agg ? (enum history_agg)history_agg_parse(agg) : HISTORY_AVG;
	if (history_steps(q) > max_points) {
		reply_error(c, MHD_HTTP_BAD_REQUEST, "step",
			    "too many points: take a longer step or a shorter window");
		return -1;
	}
	return 0;
}

static enum MHD_Result serve_range(struct MHD_Connection *c, const char *db_path,
				   unsigned max_points)
{
	char buf[HISTORY_LABELS_MAX][HISTORY_LABEL_LEN]; /* per request: two server threads */
	struct history_query q = { 0 };
	struct history_result res;
	struct store *st;
	json_t *list;
	int r;

	if (range_params(c, &q, max_points, buf) < 0 || !(st = open_db(c, db_path)))
		return MHD_YES;
	r = history_run(store_db(st), &q, HTTP_API_SERIES_MAX, &res);
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
	history_result_free(&res);
	return reply_json(c, MHD_HTTP_OK,
			  list ? json_pack("{s:s,s:o}", "status", "ok", "data", list) : NULL);
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
