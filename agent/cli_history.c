/* SPDX-License-Identifier: MIT */
/*
 * fabmon history METRIC: one metric's stored samples over a window, per
 * series, aggregated per step. Counters show their per-second rate (what an
 * operator plots), gauges their value.
 *
 * Samples have no index by series (it cost ingest 13x: schema/001_init.sql);
 * the window is found through the ticks table's rowid ranges and scanned
 * once, keeping the rows of the matching series.
 */
#include <getopt.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_history.h"
#include "config.h"
#include "timefmt.h"

/* Series one query shows; a metric with more needs --label to narrow it. */
#define HISTORY_SERIES_MAX 64
/* Steps one query shows at most. */
#define HISTORY_STEPS_MAX 100000
#define HISTORY_LABELS_MAX 16
/* Steps the default --step divides the window into. */
#define HISTORY_STEPS_DEFAULT 60

static const char history_usage[] =
	"usage: fabmon history [OPTION]... METRIC\n"
	"Shows one metric's stored samples over a window, for each of its series\n"
	"that match the --label filters, aggregated per step: counters as their\n"
	"per-second rate, gauges as their value.\n"
	"\n"
	"  --label KEY=VALUE      only series with this label (repeatable)\n"
	"  --since TIME           window start (default 1h: an hour ago)\n"
	"  --until TIME           window end (default now)\n"
	"  --step DURATION        one row per step (default: the window / 60, at least 1s)\n"
	"  --agg avg|max|min|last how the samples of a step combine (default avg)\n"
	"  --db PATH              database (default " CONFIG_DEFAULT_DB ")\n"
	"  --json                 one JSON object a series, with its points\n"
	"  --csv                  CSV: time,labels,value\n"
	"  --utc                  table times in UTC instead of local time\n"
	"  -h, --help             this help\n"
	"\n"
	"TIME as for fabmon events. A step with no sample is left out. Exit status:\n"
	"0 shown (also when no sample is in the window), 1 the database is missing\n"
	"or unusable, 2 usage error (also: no such metric, or over 64 series).\n";

enum agg { AGG_AVG, AGG_MAX, AGG_MIN, AGG_LAST };
static const char *const agg_names[] = { "avg", "max", "min", "last" };

struct history_args {
	struct cli_common cm;
	const char *metric;
	const char *labels[HISTORY_LABELS_MAX]; /* key="value", as stored */
	char label_buf[HISTORY_LABELS_MAX][300];
	int nlabels;
	int64_t since_ms, until_ms, step_ms;
	enum agg agg;
};

/* One step of one series. */
struct cell {
	double sum, max, min, last;
	int64_t last_ms;
	unsigned n;
};

struct hseries {
	int64_t id;
	char *labels;
	int counter;
	struct cell *cells; /* one a step */
};

/* KEY=VALUE into key="value" (escaped as the store keeps labels). */
static int label_filter(struct history_args *a, const char *kv)
{
	const char *eq = strchr(kv, '=');
	char *out;
	size_t n = 0;

	if (!eq || eq == kv || a->nlabels == HISTORY_LABELS_MAX)
		return -1;
	out = a->label_buf[a->nlabels];
	n = (size_t)snprintf(out, sizeof(a->label_buf[0]), "%.*s=\"", (int)(eq - kv), kv);
	for (const char *p = eq + 1; *p && n + 4 < sizeof(a->label_buf[0]); p++) {
		if (*p == '"' || *p == '\\')
			out[n++] = '\\';
		out[n++] = *p == '\n' ? 'n' : *p;
	}
	if (n + 2 > sizeof(a->label_buf[0]))
		return -1;
	out[n++] = '"';
	out[n] = '\0';
	a->labels[a->nlabels++] = out;
	return 0;
}

static int parse_args(int argc, char **argv, struct history_args *a)
{
	static const struct option opts[] = {
		CLI_COMMON_OPTIONS,
		{ "label", required_argument, NULL, 'L' },
		{ "step", required_argument, NULL, 'S' },
		{ "agg", required_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *step = NULL;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if ((r = cli_common_option("history", c, optarg, &a->cm)) >= 0) {
			if (r)
				return r;
			continue;
		}
		switch (c) {
		case 'L':
			if (label_filter(a, optarg) < 0)
				return cli_usage_error(
					"history", "--label: '%s' is not KEY=VALUE (16 at most)",
					optarg);
			break;
		case 'S':
			step = optarg;
			break;
		case 'a':
			for (r = 0; r < 4 && strcmp(optarg, agg_names[r]) != 0; r++)
				;
			if (r == 4)
				return cli_usage_error("history",
						       "--agg: '%s' is not avg, max, min or last",
						       optarg);
			a->agg = (enum agg)r;
			break;
		case 'h':
			fputs(history_usage, stdout);
			return 1;
		default:
			fputs(history_usage, stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (argc - optind != 1)
		return cli_usage_error("history", "%s",
				       optind == argc ? "no METRIC given" : "one METRIC at a time");
	a->metric = argv[optind];
	r = cli_window("history", a->cm.since, a->cm.until, &a->since_ms, &a->until_ms);
	if (r)
		return r;
	if (step && (config_parse_duration(step, &a->step_ms) < 0 || a->step_ms < 1))
		return cli_usage_error("history", "--step: '%s' is not a duration (10s, 1m)", step);
	if (!step) {
		a->step_ms = (a->until_ms - a->since_ms) / HISTORY_STEPS_DEFAULT;
		a->step_ms = a->step_ms < 1000 ? 1000 : (a->step_ms + 999) / 1000 * 1000;
	}
	if ((a->until_ms - a->since_ms) / a->step_ms >= HISTORY_STEPS_MAX)
		return cli_usage_error(
			"history", "--step: the window would be over %d steps; take a longer one",
			HISTORY_STEPS_MAX);
	return 0;
}

/* True if every filter is one of the series' labels. */
static int labels_match(const struct history_args *a, const char *labels)
{
	for (int i = 0; i < a->nlabels; i++) {
		const char *p = labels;
		size_t n = strlen(a->labels[i]);
		int found = 0;

		/* labels are key="value" joined by commas; values are escaped */
		for (; p && *p && !found; p = strstr(p, "\","), p = p ? p + 2 : NULL)
			found = strncmp(p, a->labels[i], n) == 0 && (p[n] == ',' || !p[n]);
		if (!found)
			return 0;
	}
	return 1;
}

/* The metric's series that match; returns how many, -1 on a read error. */
static int find_series(const struct history_args *a, sqlite3 *db, struct hseries *ret, size_t steps)
{
	sqlite3_stmt *q = NULL;
	int n = 0, all = 0, rc;

	if (sqlite3_prepare_v2(db,
			       "SELECT id, labels, type FROM series WHERE name = ? ORDER BY labels",
			       -1, &q, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(q, 1, a->metric, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		const char *labels = (const char *)sqlite3_column_text(q, 1);

		all++;
		if (!labels_match(a, labels))
			continue;
		if (n == HISTORY_SERIES_MAX) {
			n++;
			break;
		}
		ret[n].id = sqlite3_column_int64(q, 0);
		ret[n].labels = strdup(labels);
		ret[n].counter = strcmp((const char *)sqlite3_column_text(q, 2), "counter") == 0;
		ret[n].cells = calloc(steps, sizeof(struct cell));
		if (!ret[n].labels || !ret[n].cells) {
			free(ret[n].labels);
			free(ret[n].cells);
			n = -1;
			break;
		}
		n++;
	}
	sqlite3_finalize(q);
	if (n >= 0 && rc != SQLITE_ROW && rc != SQLITE_DONE)
		return -1;
	if (n == 0 && all == 0)
		return -2;
	return n;
}

/* Scans the window's samples into the cells of the matching series. */
static int scan(const struct history_args *a, sqlite3 *db, struct hseries *s, int n)
{
	static const char sql[] =
		"SELECT ts_ms, series_id, value, rate FROM samples WHERE rowid BETWEEN "
		"(SELECT min(first_rowid) FROM ticks WHERE ts_ms >= ?1 AND ts_ms <= ?2) AND "
		"(SELECT max(last_rowid) FROM ticks WHERE ts_ms >= ?1 AND ts_ms <= ?2)";
	sqlite3_stmt *q = NULL;
	int rc;

	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(q, 1, a->since_ms);
	sqlite3_bind_int64(q, 2, a->until_ms);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		int64_t ts = sqlite3_column_int64(q, 0), id = sqlite3_column_int64(q, 1);
		struct cell *c;
		double v;
		int i;

		for (i = 0; i < n && s[i].id != id; i++)
			;
		if (i == n || ts < a->since_ms || ts > a->until_ms)
			continue;
		/* a counter's first reading has no rate yet */
		if (s[i].counter && sqlite3_column_type(q, 3) == SQLITE_NULL)
			continue;
		v = sqlite3_column_double(q, s[i].counter ? 3 : 2);
		c = &s[i].cells[(ts - a->since_ms) / a->step_ms];
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
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? 0 : -1;
}

static double cell_value(const struct history_args *a, const struct cell *c)
{
	switch (a->agg) {
	case AGG_MAX:
		return c->max;
	case AGG_MIN:
		return c->min;
	case AGG_LAST:
		return c->last;
	default:
		return c->sum / c->n;
	}
}

static void print(const struct history_args *a, const struct hseries *s, int n, size_t steps)
{
	struct strbuf sb;
	char t[64];

	strbuf_init(&sb);
	if (a->cm.format == CLI_CSV)
		strbuf_addstr(&sb, "time,labels,value\n");
	for (int i = 0; i < n; i++) {
		int first = 1;

		if (a->cm.format == CLI_TABLE)
			strbuf_addf(&sb, "%s{%s}  (%s, %s per %.0f s)\n", a->metric, s[i].labels,
				    s[i].counter ? "per-second rate" : "value", agg_names[a->agg],
				    a->step_ms / 1000.0);
		if (a->cm.format == CLI_JSON) {
			strbuf_addstr(&sb, "{\"metric\":");
			strbuf_addjson(&sb, a->metric);
			strbuf_addstr(&sb, ",\"labels\":");
			strbuf_addjson(&sb, s[i].labels);
			strbuf_addf(
				&sb,
				",\"unit\":\"%s\",\"agg\":\"%s\",\"step_seconds\":%.3f,\"points\":[",
				s[i].counter ? "per_second" : "value", agg_names[a->agg],
				a->step_ms / 1000.0);
		}
		for (size_t k = 0; k < steps; k++) {
			const struct cell *c = &s[i].cells[k];
			int64_t at = a->since_ms + (int64_t)k * a->step_ms;

			if (!c->n)
				continue;
			if (a->cm.format == CLI_TABLE) {
				time_format(at, a->cm.utc, t, sizeof(t));
				strbuf_addf(&sb, "  %s  %.6g\n", t, cell_value(a, c));
			} else {
				time_format_rfc3339(at, t, sizeof(t));
				if (a->cm.format == CLI_CSV) {
					strbuf_addf(&sb, "%s,", t);
					cli_csv_field(&sb, s[i].labels);
					strbuf_addf(&sb, ",%.17g\n", cell_value(a, c));
				} else {
					strbuf_addf(&sb, "%s[\"%s\",%.17g]", first ? "" : ",", t,
						    cell_value(a, c));
				}
			}
			first = 0;
		}
		if (a->cm.format == CLI_JSON)
			strbuf_addstr(&sb, "]}\n");
		else if (a->cm.format == CLI_TABLE && first)
			strbuf_addstr(&sb, "  (no samples in the window)\n");
	}
	if (!sb.failed)
		fwrite(sb.buf, 1, sb.len, stdout);
	strbuf_release(&sb);
}

int history_main(int argc, char **argv)
{
	static struct history_args a;
	static struct hseries s[HISTORY_SERIES_MAX + 1];
	struct store *st = NULL;
	size_t steps;
	int r, n = 0;

	memset(&a, 0, sizeof(a));
	a.cm = (struct cli_common){ .since = "1h", .until = "now", .db = CONFIG_DEFAULT_DB };
	r = parse_args(argc, argv, &a);
	if (r)
		return r == 1 ? 0 : r;
	if (cli_open("history", a.cm.db, &st))
		return 1;
	steps = (size_t)((a.until_ms - a.since_ms) / a.step_ms) + 1;
	r = 1;
	n = find_series(&a, store_db(st), s, steps);
	if (n == -2) {
		r = cli_usage_error("history", "no metric '%s' in %s", a.metric, a.cm.db);
		n = 0;
	} else if (n > HISTORY_SERIES_MAX) {
		r = cli_usage_error("history",
				    "'%s' has over %d series matching: narrow it with --label",
				    a.metric, HISTORY_SERIES_MAX);
		n = HISTORY_SERIES_MAX;
	} else if (n < 0 || scan(&a, store_db(st), s, n) < 0) {
		fprintf(stderr, "fabmon history: reading %s: %s\n", a.cm.db,
			sqlite3_errmsg(store_db(st)));
		n = n < 0 ? 0 : n;
	} else {
		print(&a, s, n, steps);
		r = 0;
	}
	for (int i = 0; i < n; i++) {
		free(s[i].labels);
		free(s[i].cells);
	}
	store_close(st);
	return r;
}
