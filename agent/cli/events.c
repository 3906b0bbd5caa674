/* SPDX-License-Identifier: MIT */
/*
 * fabmon events: the events table, read-only, while the agent writes or from
 * a copied file. SQLite's WAL lets a reader see the last committed tick
 * without blocking the writer.
 */
#include <errno.h>
#include <jansson.h>
#include <getopt.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cli/events.h"
#include "agent/cli/cli.h"
#include "agent/config.h"
#include "agent/detect/events.h"
#include "agent/lib/clock.h"
#include "agent/lib/strbuf.h"
#include "agent/lib/timefmt.h"
#include "agent/store/query_events.h"
#include "agent/store/store.h"

static const char events_usage[] =
	"usage: fabmon events [OPTION]...\n"
	"Lists the events the detectors raised (hotspot, incast, stall, pfc_storm,\n"
	"straggler, slow_handoff, lossy_link, path_latency: cause network;\n"
	"host_stall, unreachable: cause host) that overlap a window, oldest first, from the agent's database,\n"
	"read-only: safe while the agent runs, and on a copy.\n"
	"\n"
	"  --since TIME           window start (default 24h: a day ago)\n"
	"  --until TIME           window end (default now)\n"
	"  --kind KIND            only this kind\n"
	"  --subject TEXT         only subjects containing TEXT (peer=10.0.0.3, eth0)\n"
	"  --db PATH              database (default " CONFIG_DEFAULT_DB ")\n"
	"  --json                 one JSON object a line (times RFC 3339, UTC)\n"
	"  --csv                  CSV with a header row (times RFC 3339, UTC)\n"
	"  --utc                  table times in UTC instead of local time\n"
	"  -h, --help             this help\n"
	"\n"
	"TIME: now, now-15m, a duration meaning that long ago (2h, 7d), Unix\n"
	"seconds, RFC 3339 (2026-12-02T02:10:00Z, ...+01:00), or a local\n"
	"'2026-12-02 02:10' or '02:10' (today).\n"
	"An event still open has no end. Exit status: 0 listed (also when none),\n"
	"1 the database is missing or unusable, 2 usage error.\n";

struct events_args {
	struct cli_common cm;
	int64_t since_ms, until_ms;
	const char *kind, *subject;
};

/* Fills *a; returns 0, 1 after --help, or CLI_EXIT_USAGE (said why). */
static int parse_args(int argc, char **argv, struct events_args *a)
{
	static const struct option opts[] = {
		CLI_COMMON_OPTIONS,
		{ "kind", required_argument, NULL, 'k' },
		{ "subject", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if ((r = cli_common_option("events", c, optarg, &a->cm)) >= 0) {
			if (r)
				return r;
			continue;
		}
		switch (c) {
		case 'k':
			if (event_kind_parse(optarg) < 0)
				return cli_usage_error(
					"events",
					"--kind: '%s' is not one of hotspot, incast, "
					"stall, pfc_storm, straggler, slow_handoff, "
					"host_stall, lossy_link, path_latency, unreachable",
					optarg);
			a->kind = optarg;
			break;
		case 'S':
			a->subject = optarg;
			break;
		case 'h':
			fputs(events_usage, stdout);
			return 1;
		default:
			fputs(events_usage, stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc)
		return cli_usage_error("events", "unexpected argument '%s'", argv[optind]);
	return cli_window("events", a->cm.since, a->cm.until, &a->since_ms, &a->until_ms);
}

/* One row of the query, in the chosen format, into sb. */
struct list_ctx {
	const struct events_args *a;
	struct strbuf sb;
	int64_t now_ms;
	long n;
};

/* One event in the chosen format; printed as it goes, so that a long window
 * is not held in memory. */
static int row_out(const struct event_row *r, void *arg)
{
	struct list_ctx *ctx = arg;
	struct strbuf *sb = &ctx->sb;
	char t0[64], t1[64], topen[64], dur[32], *js;
	json_t *o;

	ctx->n++;
	if (ctx->a->cm.format == CLI_JSON) {
		o = event_row_json(r, ctx->now_ms);
		js = o ? json_dumps(o, QUERY_JSON_FLAGS) : NULL;
		if (js)
			strbuf_addf(sb, "%s\n", js);
		else
			sb->failed = 1;
		free(js);
		json_decref(o);
	} else if (ctx->a->cm.format == CLI_CSV) {
		time_format_rfc3339(r->start_ms, t0, sizeof(t0));
		time_format_rfc3339(r->end_ms, t1, sizeof(t1));
		time_format_rfc3339(r->open_ms, topen, sizeof(topen));
		strbuf_addf(sb, "%lld,%s,%s,", (long long)r->id, r->kind, r->cause);
		cli_csv_field(sb, r->subject);
		strbuf_addf(sb, ",%s,%s,%s,%.3f,", t0, r->open_ms ? topen : "", r->end_ms ? t1 : "",
			    r->peak);
		cli_csv_field(sb, r->evidence ? r->evidence : "{}");
		strbuf_addch(sb, '\n');
	} else {
		time_format(r->start_ms, ctx->a->cm.utc, t0, sizeof(t0));
		if (r->end_ms) {
			time_format(r->end_ms, ctx->a->cm.utc, t1, sizeof(t1));
			snprintf(dur, sizeof(dur), "%.1f s",
				 (double)(r->end_ms - r->start_ms) / 1000.0);
		} else {
			snprintf(t1, sizeof(t1), "(open)");
			snprintf(dur, sizeof(dur), "-");
		}
		strbuf_addf(sb, "%-6lld %-27s %-27s %9s  %-12s %-7s %-30s %7.2f  %s\n",
			    (long long)r->id, t0, t1, dur, r->kind, r->cause, r->subject, r->peak,
			    r->evidence ? r->evidence : "{}");
	}
	if (sb->len > 65536) {
		fwrite(sb->buf, 1, sb->len, stdout);
		strbuf_reset(sb);
	}
	return sb->failed ? -ENOMEM : 0;
}

/* Prints the events; returns 0, or 1 after a read error (said why). */
static int list(const struct events_args *a, sqlite3 *db)
{
	const struct events_query q = { .since_ms = a->since_ms,
					.until_ms = a->until_ms,
					.kind = a->kind,
					.subject = a->subject };
	struct list_ctx ctx = { .a = a, .now_ms = clock_wall_ms() };
	int r;

	strbuf_init(&ctx.sb);
	if (a->cm.format == CLI_CSV)
		strbuf_addstr(&ctx.sb,
			      "id,kind,cause,subject,start,opened,end,peak_score,evidence\n");
	else if (a->cm.format == CLI_TABLE)
		strbuf_addf(&ctx.sb, "%-6s %-27s %-27s %9s  %-12s %-7s %-30s %7s  %s\n", "ID",
			    "START", "END", "DURATION", "KIND", "CAUSE", "SUBJECT", "PEAK",
			    "EVIDENCE");
	r = query_events(db, &q, row_out, &ctx);
	if (r < 0)
		(void)cli_read_error("events", a->cm.db, db, r);
	if (a->cm.format == CLI_TABLE && ctx.n == 0)
		strbuf_addstr(&ctx.sb, "(no events in the window)\n");
	if (!r && !ctx.sb.failed)
		fwrite(ctx.sb.buf, 1, ctx.sb.len, stdout);
	strbuf_release(&ctx.sb);
	return r ? 1 : 0;
}

int events_main(int argc, char **argv)
{
	struct events_args a = {
		.cm = { .since = "24h", .until = "now", .db = CONFIG_DEFAULT_DB }
	};
	struct store *st = NULL;
	int r = parse_args(argc, argv, &a);

	if (r)
		return r == 1 ? 0 : r;
	if (cli_open("events", a.cm.db, &st))
		return 1;
	r = list(&a, store_db(st));
	store_close(st);
	return r;
}
