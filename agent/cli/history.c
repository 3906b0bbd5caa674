/* SPDX-License-Identifier: MIT */
/*
 * fabmon history METRIC: one metric's stored samples over a window, per
 * series, aggregated per step (agent/store/query_history.c). Counters show their
 * per-second rate (what an operator plots), gauges their value.
 */
#include <getopt.h>
#include <errno.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cli/history.h"
#include "agent/cli/cli.h"
#include "agent/config.h"
#include "agent/lib/timefmt.h"
#include "agent/store/query_history.h"

/* Series one query shows; a metric with more needs --label to narrow it. */
#define HISTORY_SERIES_MAX 64
/* Steps one query shows at most. */
#define HISTORY_STEPS_MAX 100000
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
	"  --agg avg|max|min|last|count  how the samples of a step combine (default avg;\n"
	"                         count: how many there are)\n"
	"  --db PATH              database (default " CONFIG_DEFAULT_DB ")\n"
	"  --json                 one JSON object a series, with its points\n"
	"  --csv                  CSV: time,labels,value\n"
	"  --utc                  table times in UTC instead of local time\n"
	"  -h, --help             this help\n"
	"\n"
	"TIME as for fabmon events. A step with no sample is left out. A stored\n"
	"block that is corrupt is skipped with a warning on stderr naming its series\n"
	"and time range. Exit status: 0 shown (also when no sample is in the window\n"
	"or a block was skipped), 1 the database is missing or unusable, 2 usage\n"
	"error (also: no such metric, or over 64 series).\n";

struct history_args {
	struct cli_common cm;
	struct history_query q;
	char label_buf[HISTORY_LABELS_MAX][HISTORY_LABEL_LEN];
};

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
	struct history_query *q = &a->q;
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
			if (q->nlabels == HISTORY_LABELS_MAX ||
			    history_label_filter(optarg, a->label_buf[q->nlabels],
						 sizeof(a->label_buf[0])) < 0)
				return cli_usage_error(
					"history", "--label: '%s' is not KEY=VALUE (16 at most)",
					optarg);
			q->labels[q->nlabels] = a->label_buf[q->nlabels];
			q->nlabels++;
			break;
		case 'S':
			step = optarg;
			break;
		case 'a':
			r = history_agg_parse(optarg);
			if (r < 0)
				return cli_usage_error(
					"history", "--agg: '%s' is not " HISTORY_AGG_LIST, optarg);
			q->agg = (enum history_agg)r;
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
	q->metric = argv[optind];
	r = cli_window("history", a->cm.since, a->cm.until, &q->since_ms, &q->until_ms);
	if (r)
		return r;
	if (step && (duration_parse(step, &q->step_ms) < 0 || q->step_ms < 1))
		return cli_usage_error("history", "--step: '%s' is not a duration (10s, 1m)", step);
	if (!step) {
		q->step_ms = (q->until_ms - q->since_ms) / HISTORY_STEPS_DEFAULT;
		q->step_ms = q->step_ms < 1000 ? 1000 : (q->step_ms + 999) / 1000 * 1000;
	}
	if ((q->until_ms - q->since_ms) / q->step_ms >= HISTORY_STEPS_MAX)
		return cli_usage_error(
			"history", "--step: the window would be over %d steps; take a longer one",
			HISTORY_STEPS_MAX);
	return 0;
}

static void print(const struct history_args *a, const struct history_result *res)
{
	const struct history_query *q = &a->q;
	struct strbuf sb;
	char t[64], *js;

	strbuf_init(&sb);
	if (a->cm.format == CLI_CSV)
		strbuf_addstr(&sb, "time,labels,value\n");
	for (int i = 0; i < res->n; i++) {
		const struct history_series *s = &res->series[i];
		int any = 0;

		if (a->cm.format == CLI_JSON) {
			json_t *o = history_series_json(q, s, res->steps);

			js = o ? json_dumps(o, QUERY_JSON_FLAGS) : NULL;
			if (js)
				strbuf_addf(&sb, "%s\n", js);
			else
				sb.failed = 1;
			free(js);
			json_decref(o);
			continue;
		}
		if (a->cm.format == CLI_TABLE)
			strbuf_addf(&sb, "%s{%s}  (%s, %s per %.0f s)\n", q->metric, s->labels,
				    s->counter ? "per-second rate" : "value",
				    history_agg_names[q->agg], q->step_ms / 1000.0);
		for (size_t k = 0; k < res->steps; k++) {
			int64_t at = q->since_ms + (int64_t)k * q->step_ms;

			if (!s->cells[k].n)
				continue;
			any = 1;
			if (a->cm.format == CLI_TABLE) {
				time_format(at, a->cm.utc, t, sizeof(t));
				strbuf_addf(&sb, "  %s  %.6g\n", t, history_value(q, &s->cells[k]));
			} else {
				time_format_rfc3339(at, t, sizeof(t));
				strbuf_addf(&sb, "%s,", t);
				cli_csv_field(&sb, s->labels);
				strbuf_addf(&sb, ",%.17g\n", history_value(q, &s->cells[k]));
			}
		}
		if (a->cm.format == CLI_TABLE && !any)
			strbuf_addstr(&sb, "  (no samples in the window)\n");
	}
	cli_print("history", &sb);
}

int history_main(int argc, char **argv)
{
	static struct history_args a;
	struct history_result res;
	struct store *st = NULL;
	int r;

	memset(&a, 0, sizeof(a));
	a.cm = (struct cli_common){ .since = "1h", .until = "now", .db = CONFIG_DEFAULT_DB };
	r = parse_args(argc, argv, &a);
	if (r)
		return r == 1 ? 0 : r;
	if (cli_open("history", a.cm.db, &st))
		return 1;
	r = history_run(store_db(st), &a.q, HISTORY_SERIES_MAX, &res);
	if (r == -ENOENT) {
		r = cli_usage_error("history", "no metric '%s' in %s", a.q.metric, a.cm.db);
	} else if (r == -E2BIG) {
		r = cli_usage_error("history",
				    "'%s' has over %d series matching: narrow it with --label",
				    a.q.metric, HISTORY_SERIES_MAX);
	} else if (r < 0) {
		r = cli_read_error("history", a.cm.db, store_db(st), r);
	} else {
		print(&a, &res);
		/* after the answer: what it lacks, on stderr so that --csv and
		 * --json stay parseable */
		for (int i = 0; i < res.nwarnings; i++)
			fprintf(stderr, "fabmon history: warning: %s\n", res.warnings[i]);
		history_result_free(&res);
	}
	store_close(st);
	return r;
}
