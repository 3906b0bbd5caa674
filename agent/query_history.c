/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "query_history.h"
#include "timefmt.h"

const char *const history_agg_names[HISTORY_AGGS] = { "avg", "max", "min", "last" };

int history_agg_parse(const char *name)
{
	for (int a = 0; a < HISTORY_AGGS; a++)
		if (strcmp(name, history_agg_names[a]) == 0)
			return a;
	return -1;
}

int history_label_filter(const char *kv, char *out, size_t len)
{
	const char *eq = strchr(kv, '=');
	size_t n = 0;

	if (!eq || eq == kv || (size_t)(eq - kv) + 4 > len)
		return -EINVAL;
	memcpy(out, kv, (size_t)(eq - kv));
	n = (size_t)(eq - kv);
	out[n++] = '=';
	out[n++] = '"';
	/* text format 0.0.4: backslash, quote and newline are escaped */
	for (const char *p = eq + 1; *p; p++) {
		int esc = *p == '"' || *p == '\\' || *p == '\n';

		if (n + (size_t)esc + 3 > len)
			return -EINVAL;
		if (esc)
			out[n++] = '\\';
		out[n++] = *p == '\n' ? 'n' : *p;
	}
	out[n++] = '"';
	out[n] = '\0';
	return 0;
}

/* True if every filter is one of the labels (key="value" joined by commas). */
static int labels_match(const char *const *filters, int n, const char *labels)
{
	for (int i = 0; i < n; i++) {
		size_t len = strlen(filters[i]);
		const char *p = labels;
		int found = 0;

		for (; p && *p && !found; p = strstr(p, "\","), p = p ? p + 2 : NULL)
			found = strncmp(p, filters[i], len) == 0 && (p[len] == ',' || !p[len]);
		if (!found)
			return 0;
	}
	return 1;
}

size_t history_steps(const struct history_query *q)
{
	return (size_t)((q->until_ms - q->since_ms) / q->step_ms) + 1;
}

int history_list_series(sqlite3 *db, const char *metric, const char *const *labels, int nlabels,
			int (*fn)(int64_t id, const char *name, const char *labels,
				  const char *type, void *arg),
			void *arg)
{
	sqlite3_stmt *s = NULL;
	int rc, r = 0;

	if (sqlite3_prepare_v2(
		    db,
		    "SELECT id, name, labels, type FROM series WHERE ?1 IS NULL OR name = ?1 "
		    "ORDER BY name, labels",
		    -1, &s, NULL) != SQLITE_OK)
		return -EIO;
	if (metric)
		sqlite3_bind_text(s, 1, metric, -1, SQLITE_STATIC);
	while (!r && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *l = (const char *)sqlite3_column_text(s, 2);

		if (labels_match(labels, nlabels, l))
			r = fn(sqlite3_column_int64(s, 0), (const char *)sqlite3_column_text(s, 1),
			       l, (const char *)sqlite3_column_text(s, 3), arg);
	}
	if (!r && rc != SQLITE_DONE)
		r = -EIO;
	sqlite3_finalize(s);
	return r;
}

struct find {
	struct history_result *res;
	int max;
};

static int add_series(int64_t id, const char *name, const char *labels, const char *type, void *arg)
{
	struct find *f = arg;
	struct history_series *s;

	(void)name;
	if (f->res->n == f->max)
		return -E2BIG;
	s = &f->res->series[f->res->n];
	s->id = id;
	s->labels = strdup(labels);
	s->counter = strcmp(type, "counter") == 0;
	s->cells = calloc(f->res->steps, sizeof(*s->cells));
	if (!s->labels || !s->cells) {
		free(s->labels);
		free(s->cells);
		return -ENOMEM;
	}
	f->res->n++;
	return 0;
}

/* Scans the window's samples into the cells of the result's series. */
static int scan(sqlite3 *db, const struct history_query *q, struct history_result *res)
{
	static const char sql[] =
		"SELECT ts_ms, series_id, value, rate FROM samples WHERE rowid BETWEEN "
		"(SELECT min(first_rowid) FROM ticks WHERE ts_ms >= ?1 AND ts_ms <= ?2) AND "
		"(SELECT max(last_rowid) FROM ticks WHERE ts_ms >= ?1 AND ts_ms <= ?2)";
	sqlite3_stmt *s = NULL;
	int rc;

	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(s, 1, q->since_ms);
	sqlite3_bind_int64(s, 2, q->until_ms);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t ts = sqlite3_column_int64(s, 0), id = sqlite3_column_int64(s, 1);
		struct history_series *hs = NULL;
		struct history_cell *c;
		double v;

		for (int i = 0; i < res->n && !hs; i++)
			if (res->series[i].id == id)
				hs = &res->series[i];
		if (!hs || ts < q->since_ms || ts > q->until_ms)
			continue;
		/* a counter's first reading has no rate yet */
		if (hs->counter && sqlite3_column_type(s, 3) == SQLITE_NULL)
			continue;
		v = sqlite3_column_double(s, hs->counter ? 3 : 2);
		c = &hs->cells[(ts - q->since_ms) / q->step_ms];
		if (!c->n || v > c->max)
			c->max = v;
		if (!c->n || v < c->min)
			c->min = v;
		if (!c->n || ts >= c->last_ms) {
			c->last = v;
			c->last_ms = ts;
		}
		c->sum += v;
		c->n++;
	}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : -EIO;
}

static int count_metric(int64_t id, const char *name, const char *labels, const char *type,
			void *arg)
{
	(void)id;
	(void)name;
	(void)labels;
	(void)type;
	++*(int *)arg;
	return 1; /* one is enough */
}

int history_run(sqlite3 *db, const struct history_query *q, int max_series,
		struct history_result *ret)
{
	struct find f = { ret, max_series };
	int r, any = 0;

	memset(ret, 0, sizeof(*ret));
	ret->steps = history_steps(q);
	ret->series = calloc((size_t)max_series, sizeof(*ret->series));
	if (!ret->series)
		return -ENOMEM;
	r = history_list_series(db, q->metric, q->labels, q->nlabels, add_series, &f);
	if (!r && !ret->n) {
		r = history_list_series(db, q->metric, NULL, 0, count_metric, &any);
		r = r < 0 ? r : any ? 0 : -ENOENT;
	}
	if (!r)
		r = scan(db, q, ret);
	if (r < 0)
		history_result_free(ret);
	return r;
}

void history_result_free(struct history_result *r)
{
	for (int i = 0; r->series && i < r->n; i++) {
		free(r->series[i].labels);
		free(r->series[i].cells);
	}
	free(r->series);
	memset(r, 0, sizeof(*r));
}

double history_value(const struct history_query *q, const struct history_cell *c)
{
	switch (q->agg) {
	case HISTORY_MAX:
		return c->max;
	case HISTORY_MIN:
		return c->min;
	case HISTORY_LAST:
		return c->last;
	default:
		return c->sum / c->n;
	}
}

json_t *history_series_json(const struct history_query *q, const struct history_series *s,
			    size_t steps)
{
	json_t *points = json_array(), *o;
	char t[40];

	if (!points)
		return NULL;
	for (size_t k = 0; k < steps; k++) {
		if (!s->cells[k].n)
			continue;
		time_format_rfc3339(q->since_ms + (int64_t)k * q->step_ms, t, sizeof(t));
		if (json_array_append_new(
			    points, json_pack("[s,f]", t, history_value(q, &s->cells[k]))) < 0) {
			json_decref(points);
			return NULL;
		}
	}
	o = json_pack("{s:s,s:s,s:s,s:s,s:f,s:o}", "metric", q->metric, "labels", s->labels, "unit",
		      s->counter ? "per_second" : "value", "agg", history_agg_names[q->agg],
		      "step_seconds", q->step_ms / 1000.0, "points", points);
	return o;
}
