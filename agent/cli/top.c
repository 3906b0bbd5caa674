/* SPDX-License-Identifier: MIT */
/*
 * fabmon top: the links and peers that spent longest in congestion over a
 * window, from the events table: for each subject, the time its events
 * overlapped the window, how many there were, their peak score and kinds.
 */
#include <errno.h>
#include <getopt.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cli/top.h"
#include "agent/cli/cli.h"
#include "agent/config.h"
#include "agent/lib/clock.h"

#define TOP_LIMIT_DEFAULT 20

static const char top_usage[] =
	"usage: fabmon top [OPTION]...\n"
	"Ranks the links and peers that spent longest in congestion over a window:\n"
	"the time their events (hotspot, pfc_storm for links; incast, stall,\n"
	"straggler, slow_handoff for peers) overlapped it, then the peak score.\n"
	"\n"
	"  --since TIME           window start (default 1h: an hour ago)\n"
	"  --until TIME           window end (default now)\n"
	"  --by link|peer         rank links (interface=, device=) or hosts (peer=, host=);\n"
	"                         default both\n"
	"  --limit N              rows (default 20)\n"
	"  --db PATH              database (default " CONFIG_DEFAULT_DB ")\n"
	"  --json                 one JSON object a line\n"
	"  --csv                  CSV with a header row\n"
	"  --utc                  accepted as by the other review commands (no times shown)\n"
	"  -h, --help             this help\n"
	"\n"
	"TIME as for fabmon events. Exit status: 0 listed (also when none), 1 the\n"
	"database is missing or unusable, 2 usage error.\n";

struct top_args {
	struct cli_common cm;
	int64_t since_ms, until_ms;
	const char *by;
	long limit;
};

static int parse_args(int argc, char **argv, struct top_args *a)
{
	static const struct option opts[] = {
		CLI_COMMON_OPTIONS,
		{ "by", required_argument, NULL, 'b' },
		{ "limit", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if ((r = cli_common_option("top", c, optarg, &a->cm)) >= 0) {
			if (r)
				return r;
			continue;
		}
		switch (c) {
		case 'b':
			if (strcmp(optarg, "link") != 0 && strcmp(optarg, "peer") != 0)
				return cli_usage_error("top", "--by: '%s' is not link or peer",
						       optarg);
			a->by = optarg;
			break;
		case 'l':
			a->limit = strtol(optarg, &end, 10);
			if (*end || !*optarg || a->limit < 1 || a->limit > 100000)
				return cli_usage_error("top", "--limit: '%s' is not 1..100000",
						       optarg);
			break;
		case 'h':
			fputs(top_usage, stdout);
			return 1;
		default:
			fputs(top_usage, stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc)
		return cli_usage_error("top", "unexpected argument '%s'", argv[optind]);
	return cli_window("top", a->cm.since, a->cm.until, &a->since_ms, &a->until_ms);
}

static void row_out(const struct top_args *a, sqlite3_stmt *q, long rank, struct strbuf *sb)
{
	const char *subject = (const char *)sqlite3_column_text(q, 0);
	const char *kinds = (const char *)sqlite3_column_text(q, 4);
	double secs = sqlite3_column_int64(q, 1) / 1000.0, peak = sqlite3_column_double(q, 3);
	int64_t window = a->until_ms > a->since_ms ? a->until_ms - a->since_ms : 1;
	double share = 100.0 * secs * 1000.0 / (double)window;
	long n = (long)sqlite3_column_int64(q, 2);

	if (a->cm.format == CLI_TABLE) {
		strbuf_addf(sb, "%4ld  %-36s %10.1f %6.1f%% %7ld %8.2f  %s\n", rank, subject, secs,
			    share, n, peak, kinds);
	} else if (a->cm.format == CLI_CSV) {
		strbuf_addf(sb, "%ld,", rank);
		cli_csv_field(sb, subject);
		strbuf_addf(sb, ",%.3f,%.3f,%ld,%.3f,", secs, share, n, peak);
		cli_csv_field(sb, kinds);
		strbuf_addch(sb, '\n');
	} else {
		strbuf_addf(sb, "{\"rank\":%ld,\"subject\":", rank);
		strbuf_addjson(sb, subject);
		strbuf_addf(sb,
			    ",\"congested_seconds\":%.3f,\"window_share_percent\":%.3f,"
			    "\"events\":%ld,\"peak_score\":%.3f,\"kinds\":",
			    secs, share, n, peak);
		strbuf_addjson(sb, kinds);
		strbuf_addstr(sb, "}\n");
	}
}

static int rank(const struct top_args *a, sqlite3 *db)
{
	/* an open event lasts until now; each is clipped to the window */
	static const char sql[] =
		"SELECT subject, sum(min(coalesce(end_ms, ?3), ?1) - max(start_ms, ?2)) AS ms, "
		"count(*), max(peak_score), group_concat(DISTINCT kind) FROM events "
		"WHERE start_ms <= ?1 AND (end_ms IS NULL OR end_ms >= ?2) AND "
		"(?4 IS NULL OR (?4 = 'peer' AND (subject LIKE 'peer=%' OR subject LIKE 'host=%')) OR "
		"(?4 = 'link' AND (subject LIKE 'interface=%' OR subject LIKE 'device=%'))) "
		"GROUP BY subject ORDER BY ms DESC, max(peak_score) DESC, subject LIMIT ?5";
	sqlite3_stmt *q = NULL;
	struct strbuf sb;
	long n = 0;
	int rc;

	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
		return cli_read_error("top", a->cm.db, db, -EIO);
	sqlite3_bind_int64(q, 1, a->until_ms);
	sqlite3_bind_int64(q, 2, a->since_ms);
	sqlite3_bind_int64(q, 3, clock_wall_ms());
	if (a->by)
		sqlite3_bind_text(q, 4, a->by, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 5, a->limit);
	strbuf_init(&sb);
	if (a->cm.format == CLI_TABLE)
		strbuf_addf(&sb, "%4s  %-36s %10s %7s %7s %8s  %s\n", "RANK", "SUBJECT",
			    "CONGESTED", "WINDOW", "EVENTS", "PEAK", "KINDS");
	else if (a->cm.format == CLI_CSV)
		strbuf_addstr(&sb, "rank,subject,congested_seconds,window_share_percent,events,"
				   "peak_score,kinds\n");
	while ((rc = sqlite3_step(q)) == SQLITE_ROW)
		row_out(a, q, ++n, &sb);
	if (a->cm.format == CLI_TABLE && n == 0)
		strbuf_addstr(&sb, "(no congestion in the window)\n");
	if (rc == SQLITE_DONE && !sb.failed)
		fwrite(sb.buf, 1, sb.len, stdout);
	else
		(void)cli_read_error("top", a->cm.db, db, sb.failed ? -ENOMEM : -EIO);
	strbuf_release(&sb);
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? 0 : 1;
}

int top_main(int argc, char **argv)
{
	struct top_args a = { .cm = { .since = "1h", .until = "now", .db = CONFIG_DEFAULT_DB },
			      .limit = TOP_LIMIT_DEFAULT };
	struct store *st = NULL;
	int r = parse_args(argc, argv, &a);

	if (r)
		return r == 1 ? 0 : r;
	if (cli_open("top", a.cm.db, &st))
		return 1;
	r = rank(&a, store_db(st));
	store_close(st);
	return r;
}
