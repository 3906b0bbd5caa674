/* SPDX-License-Identifier: MIT */
/*
 * fabmon events: the events table, read-only, while the agent writes or from
 * a copied file. SQLite's WAL lets a reader see the last committed tick
 * without blocking the writer.
 */
#include <errno.h>
#include <getopt.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_events.h"
#include "config.h"
#include "events.h"
#include "store.h"
#include "strbuf.h"
#include "timefmt.h"

static const char events_usage[] =
	"usage: fabmon events [OPTION]...\n"
	"Lists the events the detectors raised (hotspot, incast, stall, pfc_storm,\n"
	"straggler, slow_handoff) that overlap a window, oldest first, from the\n"
	"agent's database, read-only: safe while the agent runs, and on a copy.\n"
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

static int known_kind(const char *kind)
{
	for (int k = 0; k < EVENT_KINDS; k++)
		if (strcmp(kind, event_kind_name((enum event_kind)k)) == 0)
			return 1;
	return 0;
}

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
			if (!known_kind(optarg))
				return cli_usage_error(
					"events",
					"--kind: '%s' is not one of hotspot, incast, "
					"stall, pfc_storm, straggler, slow_handoff",
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
static void row_out(const struct events_args *a, sqlite3_stmt *q, struct strbuf *sb)
{
	int64_t id = sqlite3_column_int64(q, 0), start = sqlite3_column_int64(q, 3), end;
	const char *kind = (const char *)sqlite3_column_text(q, 1);
	const char *subject = (const char *)sqlite3_column_text(q, 2);
	const char *evidence = (const char *)sqlite3_column_text(q, 6);
	int open = sqlite3_column_type(q, 4) == SQLITE_NULL;
	double peak = sqlite3_column_double(q, 5);
	char t0[64], t1[64], dur[32];

	end = open ? 0 : sqlite3_column_int64(q, 4);
	if (a->cm.format == CLI_TABLE) {
		time_format(start, a->cm.utc, t0, sizeof(t0));
		if (open) {
			snprintf(t1, sizeof(t1), "(open)");
			snprintf(dur, sizeof(dur), "-");
		} else {
			time_format(end, a->cm.utc, t1, sizeof(t1));
			snprintf(dur, sizeof(dur), "%.1f s", (double)(end - start) / 1000.0);
		}
		strbuf_addf(sb, "%-6lld %-27s %-27s %9s  %-12s %-30s %7.2f  %s\n", (long long)id,
			    t0, t1, dur, kind, subject, peak, evidence ? evidence : "{}");
		return;
	}
	time_format_rfc3339(start, t0, sizeof(t0));
	time_format_rfc3339(end, t1, sizeof(t1));
	if (a->cm.format == CLI_CSV) {
		strbuf_addf(sb, "%lld,%s,", (long long)id, kind);
		cli_csv_field(sb, subject);
		strbuf_addf(sb, ",%s,%s,%.3f,", t0, open ? "" : t1, peak);
		cli_csv_field(sb, evidence ? evidence : "{}");
		strbuf_addch(sb, '\n');
		return;
	}
	strbuf_addf(sb, "{\"id\":%lld,\"kind\":\"%s\",\"subject\":", (long long)id, kind);
	strbuf_addjson(sb, subject);
	strbuf_addf(sb, ",\"start\":\"%s\",\"end\":", t0);
	if (open)
		strbuf_addstr(sb, "null");
	else
		strbuf_addf(sb, "\"%s\"", t1);
	/* the evidence is a JSON object the agent wrote */
	strbuf_addf(sb, ",\"duration_seconds\":%.3f,\"peak_score\":%.3f,\"evidence\":%s}\n",
		    open ? (double)(cli_now_ms() - start) / 1000.0 : (double)(end - start) / 1000.0,
		    peak, evidence && *evidence ? evidence : "{}");
}

/* Runs the query and prints the rows; returns the rows, or -1 on a read error. */
static long list(const struct events_args *a, sqlite3 *db)
{
	static const char sql[] =
		"SELECT id, kind, subject, start_ms, end_ms, peak_score, evidence FROM events "
		"WHERE start_ms <= ?1 AND (end_ms IS NULL OR end_ms >= ?2) "
		"AND (?3 IS NULL OR kind = ?3) AND (?4 IS NULL OR instr(subject, ?4) > 0) "
		"ORDER BY start_ms, id";
	sqlite3_stmt *q = NULL;
	struct strbuf sb;
	long n = 0;
	int rc;

	strbuf_init(&sb);
	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) {
		fprintf(stderr, "fabmon events: %s\n", sqlite3_errmsg(db));
		return -1;
	}
	sqlite3_bind_int64(q, 1, a->until_ms);
	sqlite3_bind_int64(q, 2, a->since_ms);
	if (a->kind)
		sqlite3_bind_text(q, 3, a->kind, -1, SQLITE_STATIC);
	if (a->subject)
		sqlite3_bind_text(q, 4, a->subject, -1, SQLITE_STATIC);
	if (a->cm.format == CLI_CSV)
		strbuf_addstr(&sb, "id,kind,subject,start,end,peak_score,evidence\n");
	else if (a->cm.format == CLI_TABLE)
		strbuf_addf(&sb, "%-6s %-27s %-27s %9s  %-12s %-30s %7s  %s\n", "ID", "START",
			    "END", "DURATION", "KIND", "SUBJECT", "PEAK", "EVIDENCE");
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		row_out(a, q, &sb);
		n++;
		/* print as it goes: a long window is not held in memory */
		if (sb.len > 65536) {
			fwrite(sb.buf, 1, sb.len, stdout);
			strbuf_reset(&sb);
		}
	}
	if (rc != SQLITE_DONE) {
		fprintf(stderr, "fabmon events: %s\n", sqlite3_errmsg(db));
		n = -1;
	}
	if (a->cm.format == CLI_TABLE && n == 0)
		strbuf_addstr(&sb, "(no events in the window)\n");
	if (n >= 0 && !sb.failed)
		fwrite(sb.buf, 1, sb.len, stdout);
	strbuf_release(&sb);
	sqlite3_finalize(q);
	return n;
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
	r = list(&a, store_db(st)) < 0 ? 1 : 0;
	store_close(st);
	return r;
}
