/* SPDX-License-Identifier: MIT */
/*
 * fabmon export: a node's stored history as OpenMetrics, read through the
 * same query as fabmon history (agent/store/query_history.c) with counters
 * kept as their totals, a metric at a time and the window in chunks so that
 * memory stays bounded however long the window is.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/cli/export.h"
#include "agent/cli/cli.h"
#include "agent/cli/openmetrics.h"
#include "agent/config.h"
#include "agent/lib/clock.h"
#include "agent/store/query_history.h"

/* Series of one metric an export takes at most (a store keeps far fewer). */
#define EXPORT_SERIES_MAX 65536
/* Cells (series x seconds) one chunk of the window holds: about 50 MB. */
#define EXPORT_CELLS_MAX (1 << 20)
#define EXPORT_CHUNK_MIN_MS 60000
#define EXPORT_CHUNK_MAX_MS 3600000
/* A long export says how far it is on stderr this often. */
#define EXPORT_PROGRESS_MS 2000
#define EXPORT_EXTRA_LEN 1024

static const char export_usage[] =
	"usage: fabmon export --format openmetrics [OPTION]...\n"
	"Writes the stored samples of a window in the OpenMetrics text format that\n"
	"'promtool tsdb create-blocks-from openmetrics FILE DIR' reads, to backfill\n"
	"a Prometheus that missed them. Counters are written as their totals, at\n"
	"most one sample a second a series (the last of each second).\n"
	"\n"
	"  --format openmetrics   the output format (the only one; required)\n"
	"  --since TIME           window start (default 1h: an hour ago)\n"
	"  --until TIME           window end (default now)\n"
	"  --metric NAME          only this metric (default every stored one)\n"
	"  --label KEY=VALUE      add this label to every series, e.g.\n"
	"                         instance=node1:9478 so that backfilled series join\n"
	"                         the scraped ones (repeatable; a stored label wins)\n"
	"  --db PATH              database (default " CONFIG_DEFAULT_DB ")\n"
	"  --output FILE          write to FILE instead of standard output\n"
	"  -h, --help             this help\n"
	"\n"
	"TIME as for fabmon events. Progress goes to stderr when an export takes\n"
	"over 2 s. Exit status: 0 written (also when the window holds no sample),\n"
	"1 the database is missing or unusable or the output cannot be written,\n"
	"2 usage error (also: no such metric).\n";

struct export_args {
	const char *since, *until, *db, *metric, *output;
	char extra[EXPORT_EXTRA_LEN]; /* the --label pairs, store-escaped */
	int64_t since_ms, until_ms;
};

/* One stored metric: its name, type and how many series it has. */
struct export_metric {
	char *name;
	int counter;
	int nseries;
};

struct export_list {
	struct export_metric *m;
	int n, alloc;
};

static int parse_args(int argc, char **argv, struct export_args *a)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "since", required_argument, NULL, 's' },
		{ "until", required_argument, NULL, 'u' },
		{ "metric", required_argument, NULL, 'm' },
		{ "label", required_argument, NULL, 'L' },
		{ "db", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char kv[HISTORY_LABEL_LEN];
	int c, format = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		size_t len = strlen(a->extra);

		switch (c) {
		case 'f':
			if (strcmp(optarg, "openmetrics") != 0)
				return cli_usage_error("export",
						       "--format: '%s' is not openmetrics", optarg);
			format = 1;
			break;
		case 's':
			a->since = optarg;
			break;
		case 'u':
			a->until = optarg;
			break;
		case 'm':
			a->metric = optarg;
			break;
		case 'L':
			if (history_label_filter(optarg, kv, sizeof(kv)) < 0 ||
			    len + strlen(kv) + 2 > sizeof(a->extra))
				return cli_usage_error(
					"export", "--label: '%s' is not KEY=VALUE (or too long)",
					optarg);
			snprintf(a->extra + len, sizeof(a->extra) - len, "%s%s", len ? "," : "",
				 kv);
			break;
		case 'd':
			a->db = optarg;
			break;
		case 'o':
			a->output = optarg;
			break;
		case 'h':
			fputs(export_usage, stdout);
			return 1;
		default:
			fputs(export_usage, stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc)
		return cli_usage_error("export", "unexpected argument '%s'", argv[optind]);
	if (!format)
		return cli_usage_error("export", "no --format given (openmetrics)");
	return cli_window("export", a->since, a->until, &a->since_ms, &a->until_ms);
}

static int list_add(int64_t id, const char *name, const char *labels, const char *type, void *arg)
{
	struct export_list *l = arg;

	(void)id;
	(void)labels;
	/* series come ordered by name: a new name is a new metric */
	if (l->n && strcmp(l->m[l->n - 1].name, name) == 0) {
		l->m[l->n - 1].nseries++;
		return 0;
	}
	if (l->n == l->alloc) {
		int alloc = l->alloc ? 2 * l->alloc : 64;
		struct export_metric *m = realloc(l->m, (size_t)alloc * sizeof(*m));

		if (!m)
			return -ENOMEM;
		l->m = m;
		l->alloc = alloc;
	}
	l->m[l->n] = (struct export_metric){ strdup(name), strcmp(type, "counter") == 0, 1 };
	if (!l->m[l->n].name)
		return -ENOMEM;
	l->n++;
	return 0;
}

static void list_release(struct export_list *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->m[i].name);
	free(l->m);
}

/* Window length a chunk of m takes: its series' cells within the bound. */
static int64_t chunk_ms(const struct export_metric *m)
{
	int64_t ms = (int64_t)(EXPORT_CELLS_MAX / m->nseries) * 1000;

	if (ms < EXPORT_CHUNK_MIN_MS)
		return EXPORT_CHUNK_MIN_MS;
	return ms > EXPORT_CHUNK_MAX_MS ? EXPORT_CHUNK_MAX_MS : ms;
}

struct export_run {
	const struct export_args *a;
	sqlite3 *db;
	FILE *out;
	struct strbuf sb;
	long long samples;
	int64_t started_ms, said_ms;
	int write_errno; /* the output failed: why */
};

/* Writes what sb holds. 0, -ENOMEM, or -EIO (write_errno says why). */
static int flush(struct export_run *x)
{
	int r = 0;

	if (x->sb.failed)
		r = -ENOMEM;
	else if (fwrite(x->sb.buf, 1, x->sb.len, x->out) != x->sb.len) {
		x->write_errno = errno;
		r = -EIO;
	}
	strbuf_reset(&x->sb);
	return r;
}

/* One metric over the window: its TYPE line, then each chunk's samples. */
static int export_metric(struct export_run *x, const struct export_metric *m)
{
	struct history_query q = {
		.metric = m->name, .step_ms = 1000, .agg = HISTORY_LAST, .raw = 1
	};
	int64_t step = chunk_ms(m);
	int r = 0;

	openmetrics_type(&x->sb, m->name, m->counter);
	for (int64_t from = x->a->since_ms; !r && from <= x->a->until_ms; from += step) {
		struct history_result res;

		q.since_ms = from;
		q.until_ms = from + step - 1 < x->a->until_ms ? from + step - 1 : x->a->until_ms;
		r = history_run(x->db, &q, EXPORT_SERIES_MAX, &res);
		if (r < 0)
			break;
		for (int i = 0; i < res.n; i++)
			for (size_t k = 0; k < res.steps; k++) {
				const struct history_cell *c = &res.series[i].cells[k];

				if (!c->n)
					continue;
				openmetrics_sample(&x->sb, m->name, x->a->extra,
						   res.series[i].labels, c->last_ms, c->last);
				x->samples++;
			}
		for (int i = 0; i < res.nwarnings; i++)
			fprintf(stderr, "fabmon export: warning: %s\n", res.warnings[i]);
		history_result_free(&res);
		r = flush(x);
	}
	return r;
}

static void progress(struct export_run *x, int done, int of)
{
	int64_t now = clock_mono_ms();

	if (now - x->started_ms < EXPORT_PROGRESS_MS || now - x->said_ms < EXPORT_PROGRESS_MS)
		return;
	x->said_ms = now;
	fprintf(stderr, "fabmon export: %d of %d metrics, %lld samples\n", done, of, x->samples);
}

int export_main(int argc, char **argv)
{
	struct export_args a = { .since = "1h", .until = "now", .db = CONFIG_DEFAULT_DB };
	struct export_run x = { .a = &a, .out = stdout };
	struct export_list l = { 0 };
	struct store *st = NULL;
	int r;

	r = parse_args(argc, argv, &a);
	if (r)
		return r == 1 ? 0 : r;
	if (cli_open("export", a.db, &st))
		return 1;
	x.db = store_db(st);
	strbuf_init(&x.sb);
	r = history_list_series(x.db, a.metric, NULL, 0, list_add, &l);
	if (r < 0) {
		r = cli_read_error("export", a.db, x.db, r);
		goto out;
	}
	if (a.metric && !l.n) {
		r = cli_usage_error("export", "no metric '%s' in %s", a.metric, a.db);
		goto out;
	}
	if (a.output && !(x.out = fopen(a.output, "w"))) {
		fprintf(stderr, "fabmon export: unable to create '%s': %s\n", a.output,
			strerror(errno));
		r = 1;
		goto out;
	}
	x.started_ms = clock_mono_ms();
	for (int i = 0; !r && i < l.n; i++) {
		r = export_metric(&x, &l.m[i]);
		progress(&x, i + 1, l.n);
	}
	if (!r) {
		openmetrics_eof(&x.sb);
		r = flush(&x);
	}
	if (!r && fflush(x.out) != 0) {
		x.write_errno = errno;
		r = -EIO;
	}
	if (x.write_errno)
		fprintf(stderr, "fabmon export: writing '%s': %s\n", a.output ? a.output : "stdout",
			strerror(x.write_errno));
	else if (r < 0)
		(void)cli_read_error("export", a.db, x.db, r);
	else
		fprintf(stderr, "fabmon export: %lld samples of %d metrics\n", x.samples, l.n);
	r = r < 0 ? 1 : 0;
out:
	if (x.out && x.out != stdout && fclose(x.out) != 0 && !r) {
		fprintf(stderr, "fabmon export: writing '%s': %s\n", a.output, strerror(errno));
		r = 1;
	}
	strbuf_release(&x.sb);
	list_release(&l);
	store_close(st);
	return r;
}
