/* SPDX-License-Identifier: MIT */
/*
 * GET /api/v1/events and /api/v1/events/ID: the events table as JSON, read
 * from the database on each request through a read-only connection of its
 * own (SQLite's WAL: the tick thread's writes never wait for it). Strict: an
 * unknown parameter, a bad time, an end before the start is a 400 whose JSON
 * body names the parameter; a response holds at most HTTP_API_EVENTS_MAX
 * events (then "truncated": true).
 */
#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "events.h"
#include "http_api.h"
#include "query_events.h"
#include "store.h"
#include "timefmt.h"

#define HTTP_API_EVENTS_MAX 10000
#define HTTP_API_DEFAULT_WINDOW_MS (24 * 3600 * 1000LL)

static int64_t wall_ms(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

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
};

static int collect_row(const struct event_row *r, void *arg)
{
	struct collect *col = arg;

	if (json_array_size(col->list) == HTTP_API_EVENTS_MAX) {
		col->truncated = 1;
		return 1;
	}
	return json_array_append_new(col->list, event_row_json(r, col->now_ms)) ? -ENOMEM : 0;
}

/* Runs q against the database and replies; id > 0 asks for one event. */
static enum MHD_Result answer(struct MHD_Connection *c, const char *db_path,
			      const struct events_query *q)
{
	struct collect col = { json_array(), wall_ms(), 0 };
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

enum MHD_Result http_api_serve(struct MHD_Connection *c, const char *url, const char *db_path)
{
	static const char *const list_params[] = { "start", "end", "kind", "subject", NULL };
	static const char *const none[] = { NULL };
	const char *prefix = "/api/v1/events", *rest;
	struct events_query q = { 0 };
	struct params p = { list_params, NULL };
	int64_t now = wall_ms();
	char *end;

	if (strncmp(url, prefix, strlen(prefix)) != 0)
		return reply_error(c, MHD_HTTP_NOT_FOUND, NULL,
				   "not found: /api/v1/events, /api/v1/events/ID");
	rest = url + strlen(prefix);
	if (*rest == '/') {
		q.id = strtoll(rest + 1, &end, 10);
		if (*end || end == rest + 1 || q.id <= 0)
			return reply_error(c, MHD_HTTP_BAD_REQUEST, "id",
					   "not an event id (a positive integer)");
		p.known = none;
	} else if (*rest) {
		return reply_error(c, MHD_HTTP_NOT_FOUND, NULL,
				   "not found: /api/v1/events, /api/v1/events/ID");
	}
	(void)MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, check_param, &p);
	if (p.unknown)
		return reply_error(c, MHD_HTTP_BAD_REQUEST, p.unknown, "unknown parameter");
	if (q.id > 0)
		return answer(c, db_path, &q);
	if (time_param(c, "start", now - HTTP_API_DEFAULT_WINDOW_MS, now, &q.since_ms) < 0 ||
	    time_param(c, "end", now, now, &q.until_ms) < 0)
		return MHD_YES;
	if (q.until_ms < q.since_ms)
		return reply_error(c, MHD_HTTP_BAD_REQUEST, "end", "end is before start");
	q.kind = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "kind");
	if (q.kind) {
		int k;

		for (k = 0; k < EVENT_KINDS && strcmp(q.kind, event_kind_name(k)) != 0; k++)
			;
		if (k == EVENT_KINDS)
			return reply_error(c, MHD_HTTP_BAD_REQUEST, "kind",
					   "not one of hotspot, incast, stall, pfc_storm, "
					   "straggler, slow_handoff");
	}
	q.subject = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "subject");
	return answer(c, db_path, &q);
}
