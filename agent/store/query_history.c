/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/store/query_history.h"
#include "agent/lib/clock.h"
#include "agent/lib/timefmt.h"
#include "agent/store/pack.h"
#include "agent/store/stage.h"
#include "agent/store/store_pack.h"

const char *const history_agg_names[HISTORY_AGGS] = { "avg", "max", "min", "last", "count" };

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
	const struct history_query *q;
	struct history_result *res;
	int max;
};

static int add_series(int64_t id, const char *name, const char *labels, const char *type, void *arg)
{
	struct find *f = arg;
	struct history_series *s;

	(void)name;
	/* refused before a sample is read, or a cell allocated for it */
	if (f->res->n == f->max ||
	    (f->q->max_points && (size_t)(f->res->n + 1) * f->res->steps > f->q->max_points))
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

#define MINUTE_MS 60000
#define HOUR_MS 3600000

/* Rollups serve a step of whole minutes. */
static int use_rollups(const struct history_query *q)
{
	return q->step_ms >= MINUTE_MS && q->step_ms % MINUTE_MS == 0;
}

static struct history_cell *cell_at(const struct history_query *q, struct history_series *hs,
				    int64_t ts)
{
	if (ts < q->since_ms || ts > q->until_ms)
		return NULL;
	return &hs->cells[(ts - q->since_ms) / q->step_ms];
}

/* Adds n values (sum, min, max, the last at ts) to the step holding ts. */
static void cell_add(const struct history_query *q, struct history_series *hs, int64_t ts,
		     unsigned n, double sum, double min, double max, double last)
{
	struct history_cell *c = cell_at(q, hs, ts);

	if (!c || !n)
		return;
	if (!c->n || max > c->max)
		c->max = max;
	if (!c->n || min < c->min)
		c->min = min;
	if (!c->n || ts >= c->last_ms) {
		c->last = last;
		c->last_ms = ts;
	}
	c->sum += sum;
	c->n += n;
}

static void sample_add(const struct history_query *q, struct history_series *hs, int64_t ts,
		       double v)
{
	cell_add(q, hs, ts, 1, v, v, v, v);
}

/* Per series: where raw samples take over from rollups, and the newest
 * packed sample (staged ones up to it are in a block already). */
struct scan_state {
	int64_t raw_from, packed_until;
};

struct scan {
	sqlite3 *db;
	const struct history_query *q;
	struct history_result *res;
	sqlite3_stmt *rollups, *blocks, *packed, *stage;
	struct pack_rows rows; /* a block or rollup row read whole */
	int skipped; /* corrupt rows skipped */
};

/* Names a corrupt row the scan skips (what of hs, or of every series when
 * hs is NULL) in the result's warnings, up to HISTORY_WARNINGS_MAX. */
static int scan_warn(struct scan *sc, const struct history_series *hs, const char *what,
		     int64_t from_ms, int64_t to_ms)
{
	char from[40], to[40], *w = NULL;
	int r;

	if (sc->skipped++ >= HISTORY_WARNINGS_MAX)
		return 0;
	time_format_rfc3339(from_ms, from, sizeof(from));
	time_format_rfc3339(to_ms, to, sizeof(to));
	if (hs)
		r = asprintf(&w, "skipped a corrupt %s of %s{%s} from %s to %s", what,
			     sc->q->metric, hs->labels, from, to);
	else
		r = asprintf(&w, "skipped a corrupt %s at %s", what, from);
	if (r < 0)
		return -ENOMEM;
	sc->res->warnings[sc->res->nwarnings++] = w;
	return 0;
}

/* Minutes of hs's rollup rows in the window; sets where raw samples start. */
static int scan_rollups(struct scan *sc, struct history_series *hs, struct scan_state *ss)
{
	const struct history_query *q = sc->q;
	sqlite3_stmt *s = sc->rollups;
	int rc = SQLITE_DONE, r = 0;

	ss->raw_from = q->since_ms;
	sqlite3_bind_int64(s, 1, hs->id);
	/* an hour row holds minutes after its start */
	sqlite3_bind_int64(s, 2, q->since_ms - HOUR_MS);
	sqlite3_bind_int64(s, 3, q->until_ms);
	while (!r && !clock_past(q->deadline_ms) && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t hour = sqlite3_column_int64(s, 0), n = sqlite3_column_int64(s, 1);
		const void *data = sqlite3_column_blob(s, 2);
		size_t len = (size_t)sqlite3_column_bytes(s, 2);

		r = -EBADMSG;
		sc->rows.n = 0;
		if (store_pack_crc_ok(s, 3, store_pack_rollup_crc(hs->id, hour, n, data, len)))
			r = pack_read_all(data, len, 5, (unsigned)n, hour, hour + HOUR_MS - 1,
					  &sc->rows);
		if (r == -EBADMSG)
			r = scan_warn(sc, hs, "rollup hour", hour, hour + HOUR_MS - 1);
		for (size_t i = 0; i < sc->rows.n; i++) {
			const double *v = sc->rows.vals + i * 5;
			int64_t m = sc->rows.ts[i];

			if (m < q->since_ms || m > q->until_ms)
				continue;
			/* samples, min, max, sum, last */
			cell_add(q, hs, m, (unsigned)v[0], v[3], v[1], v[2], v[4]);
			if (m + MINUTE_MS > ss->raw_from)
				ss->raw_from = m + MINUTE_MS;
		}
	}
	(void)sqlite3_reset(s);
	if (r < 0)
		return r;
	if (clock_past(q->deadline_ms))
		return -ETIMEDOUT;
	return rc == SQLITE_DONE ? 0 : -EIO;
}

/* Reads the block in s's row whole into sc->rows: its checksum, its rows
 * from its start to its end. 0, -ENOMEM, or -EBADMSG (skip it). */
static int read_block(struct scan *sc, sqlite3_stmt *s, const struct history_series *hs)
{
	int64_t n = sqlite3_column_int64(s, 0), start = sqlite3_column_int64(s, 3),
		end = sqlite3_column_int64(s, 4);
	double rate = sqlite3_column_double(s, 1);
	const void *data = sqlite3_column_blob(s, 2);
	size_t len = (size_t)sqlite3_column_bytes(s, 2);
	int r;

	sc->rows.n = 0;
	if (!store_pack_crc_ok(
		    s, 5,
		    store_pack_block_crc(hs->id, start, end, n,
					 sqlite3_column_type(s, 1) == SQLITE_NULL ? NULL : &rate,
					 data, len)))
		return -EBADMSG;
	r = pack_read_all(data, len, 1, (unsigned)n, start, end, &sc->rows);
	if (!r && (!sc->rows.n || sc->rows.ts[0] != start || sc->rows.ts[sc->rows.n - 1] != end))
		r = -EBADMSG; /* a block begins and ends at its samples */
	if (r < 0)
		sc->rows.n = 0;
	return r;
}

/* hs's packed samples from ss->raw_from on. */
static int scan_blocks(struct scan *sc, struct history_series *hs, struct scan_state *ss)
{
	const struct history_query *q = sc->q;
	sqlite3_stmt *s = sc->blocks;
	int rc, r = 0;

	sqlite3_bind_int64(sc->packed, 1, hs->id);
	ss->packed_until = INT64_MIN;
	if ((rc = sqlite3_step(sc->packed)) == SQLITE_ROW &&
	    sqlite3_column_type(sc->packed, 0) != SQLITE_NULL)
		ss->packed_until = sqlite3_column_int64(sc->packed, 0);
	(void)sqlite3_reset(sc->packed);
	if (rc != SQLITE_ROW)
		return -EIO;
	sqlite3_bind_int64(s, 1, hs->id);
	sqlite3_bind_int64(s, 2, ss->raw_from);
	sqlite3_bind_int64(s, 3, q->until_ms);
	while (!r && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		int has_rate = sqlite3_column_type(s, 1) != SQLITE_NULL;
		double rate = sqlite3_column_double(s, 1);

		r = read_block(sc, s, hs);
		if (r == -EBADMSG)
			r = scan_warn(sc, hs, "block", sqlite3_column_int64(s, 3),
				      sqlite3_column_int64(s, 4));
		for (size_t i = 0; i < sc->rows.n; i++) {
			int64_t ts = sc->rows.ts[i];
			double v = sc->rows.vals[i];

			/* a counter's rate as the registry reckoned it: the
			 * increase over the time since its last reading */
			if (hs->counter && i > 0) {
				int64_t pts = sc->rows.ts[i - 1];

				rate = (v - sc->rows.vals[i - 1]) * 1000.0 / (double)(ts - pts);
				has_rate = 1;
			}
			if (ts < ss->raw_from)
				continue;
			if (!hs->counter || q->raw)
				sample_add(q, hs, ts, v);
			else if (has_rate)
				sample_add(q, hs, ts, rate);
		}
		if (!r && clock_past(q->deadline_ms))
			r = -ETIMEDOUT;
	}
	(void)sqlite3_reset(s);
	if (r < 0)
		return r;
	return rc == SQLITE_DONE ? 0 : -EIO;
}

/* The staged ticks of the window, for every series at once. */
static int scan_stage(struct scan *sc, struct history_result *res, struct scan_state *ss)
{
	const struct history_query *q = sc->q;
	sqlite3_stmt *s = sc->stage;
	int64_t from = q->until_ms;
	int rc = SQLITE_DONE, r = 0;

	for (int i = 0; i < res->n; i++)
		if (ss[i].raw_from < from)
			from = ss[i].raw_from;
	sqlite3_bind_int64(s, 1, from);
	sqlite3_bind_int64(s, 2, q->until_ms);
	while (!r && !clock_past(q->deadline_ms) && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t ts = sqlite3_column_int64(s, 0);
		const void *blob = sqlite3_column_blob(s, 1);
		long n = stage_count(blob, (size_t)sqlite3_column_bytes(s, 1));
		struct stage_rec rec;

		if (n < 0)
			r = scan_warn(sc, NULL, "staged tick", ts, ts);
		for (int i = 0; n > 0 && i < res->n; i++) {
			struct history_series *hs = &res->series[i];

			if (ts < ss[i].raw_from || ts <= ss[i].packed_until ||
			    !stage_find(blob, (size_t)n, hs->id, &rec))
				continue;
			if (!hs->counter || q->raw)
				sample_add(q, hs, ts, rec.value);
			else if (rec.flags & STAGE_HAS_RATE)
				sample_add(q, hs, ts, rec.rate);
		}
	}
	(void)sqlite3_reset(s);
	if (r < 0)
		return r;
	if (clock_past(q->deadline_ms))
		return -ETIMEDOUT;
	return rc == SQLITE_DONE ? 0 : -EIO;
}

/*
 * Fills the cells of the result's series from the three places samples
 * live: 1-minute rollups (for steps of whole minutes), packed blocks, and
 * the staged newest ticks, in one read transaction so that a block the
 * agent closes meanwhile is seen once.
 */
static int scan(sqlite3 *db, const struct history_query *q, struct history_result *res)
{
	struct scan sc = { .db = db, .q = q, .res = res };
	struct scan_state *ss = calloc((size_t)res->n + 1, sizeof(*ss));
	int r = -EIO;

	/* room for the warnings kept and the one that counts the rest */
	res->warnings = calloc(HISTORY_WARNINGS_MAX + 1, sizeof(*res->warnings));
	if (!ss || !res->warnings) {
		free(ss);
		return -ENOMEM;
	}
	if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		goto out;
	if (sqlite3_prepare_v2(db,
			       "SELECT hour_ms, n, data, crc FROM rollups WHERE series_id = ?1 AND "
			       "hour_ms >= ?2 AND hour_ms <= ?3 ORDER BY hour_ms",
			       -1, &sc.rollups, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(
		    db,
		    "SELECT n, first_rate, data, start_ms, end_ms, crc FROM blocks WHERE "
		    "series_id = ?1 AND end_ms >= ?2 AND start_ms <= ?3 ORDER BY end_ms",
		    -1, &sc.blocks, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT max(end_ms) FROM blocks WHERE series_id = ?1", -1,
			       &sc.packed, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT ts_ms, data FROM stage WHERE ts_ms BETWEEN ?1 AND ?2",
			       -1, &sc.stage, NULL) != SQLITE_OK)
		goto out;
	r = 0;
	for (int i = 0; !r && i < res->n; i++) {
		ss[i].raw_from = q->since_ms;
		if (use_rollups(q))
			r = scan_rollups(&sc, &res->series[i], &ss[i]);
		if (!r)
			r = scan_blocks(&sc, &res->series[i], &ss[i]);
	}
	if (!r)
		r = scan_stage(&sc, res, ss);
	if (!r && sc.skipped > HISTORY_WARNINGS_MAX &&
	    asprintf(&res->warnings[res->nwarnings++], "skipped %d more corrupt rows",
		     sc.skipped - HISTORY_WARNINGS_MAX) < 0)
		r = -ENOMEM;
out:
	pack_rows_release(&sc.rows);
	sqlite3_finalize(sc.rollups);
	sqlite3_finalize(sc.blocks);
	sqlite3_finalize(sc.packed);
	sqlite3_finalize(sc.stage);
	(void)sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	free(ss);
	return r;
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
	struct find f = { q, ret, max_series };
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
	for (int i = 0; i < r->nwarnings; i++)
		free(r->warnings[i]);
	free(r->warnings);
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
	case HISTORY_COUNT:
		return c->n;
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

struct around {
	char names[HISTORY_AROUND_SERIES][128];
	int n, metrics;
};

/* Counts the series and their distinct metrics (listed in name order). */
static int around_add(int64_t id, const char *name, const char *labels, const char *type, void *arg)
{
	struct around *a = arg;

	(void)id;
	(void)labels;
	(void)type;
	if (a->n == HISTORY_AROUND_SERIES)
		return 1;
	a->n++;
	if (!a->metrics || strcmp(a->names[a->metrics - 1], name) != 0)
		snprintf(a->names[a->metrics++], sizeof(a->names[0]), "%s", name);
	return 0;
}

json_t *history_around(sqlite3 *db, const char *subject, int64_t since_ms, int64_t until_ms,
		       size_t max_points)
{
	char buf[HISTORY_LABELS_MAX][HISTORY_LABEL_LEN], kv[HISTORY_LABEL_LEN];
	struct history_query q = { .since_ms = since_ms, .until_ms = until_ms };
	struct around *a = calloc(1, sizeof(*a));
	json_t *out = json_array();
	const char *p = subject;

	if (!a || !out)
		goto fail;
	/* "peer=198.18.0.6", "interface=eth0", "device=mlx5_0,port=1" */
	while (*p && q.nlabels < HISTORY_LABELS_MAX) {
		size_t len = strcspn(p, ",");

		snprintf(kv, sizeof(kv), "%.*s", (int)len, p);
		if (history_label_filter(kv, buf[q.nlabels], sizeof(buf[0])) < 0)
			goto done; /* not labels: no samples to show */
		q.labels[q.nlabels] = buf[q.nlabels];
		q.nlabels++;
		p += len + (p[len] == ',');
	}
	if (!q.nlabels || history_list_series(db, NULL, q.labels, q.nlabels, around_add, a) < 0 ||
	    !a->n)
		goto done;
	/* every series' points together within max_points, at least a second
	 * a step */
	q.step_ms = (until_ms - since_ms) / (int64_t)(max_points / (size_t)a->n + 1) + 1;
	if (q.step_ms < 1000)
		q.step_ms = 1000;
	for (int m = 0; m < a->metrics; m++) {
		struct history_result res;

		q.metric = a->names[m];
		if (history_run(db, &q, HISTORY_AROUND_SERIES, &res) < 0)
			continue;
		for (int i = 0; i < res.n; i++)
			(void)json_array_append_new(
				out, history_series_json(&q, &res.series[i], res.steps));
		history_result_free(&res);
	}
done:
	free(a);
	return out;
fail:
	free(a);
	json_decref(out);
	return NULL;
}
