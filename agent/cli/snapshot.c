/* SPDX-License-Identifier: MIT */
/*
 * fabmon snapshot OUT.db: a consistent copy of the database for offline
 * review, safe while the agent writes. SQLite's VACUUM INTO copies what one
 * read transaction sees (https://sqlite.org/lang_vacuum.html#vacuuminto):
 * every tick committed before it began, none after, compacted on the way.
 */
#include <errno.h>
#include <getopt.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent/cli/snapshot.h"
#include "agent/cli/cli.h"
#include "agent/config.h"

static const char snapshot_usage[] =
	"usage: fabmon snapshot [OPTION]... OUT.db\n"
	"Writes a consistent copy of the agent's database to OUT.db (which must not\n"
	"exist), safe while the agent writes: every tick committed before the copy\n"
	"began, none after. The copy is a fabmon database: fabmon events --db OUT.db\n"
	"reads it anywhere.\n"
	"\n"
	"  --db PATH              database to copy (default " CONFIG_DEFAULT_DB ")\n"
	"  --since TIME           keep only ticks and samples from TIME on (events that\n"
	"                         end before it are left out too)\n"
	"  -h, --help             this help\n"
	"\n"
	"Exit status: 0 written, 1 the database could not be read or the copy\n"
	"written (a partial copy is removed), 2 usage error (OUT.db exists).\n";

/* Drops what lies before since_ms from the copy and compacts it. */
static int trim(sqlite3 *db, int64_t since_ms)
{
	static const char sql[] = "BEGIN;"
				  "DELETE FROM blocks WHERE end_ms < ?1;"
				  "DELETE FROM rollups WHERE hour_ms < ?1 - 3600000;"
				  "DELETE FROM stage WHERE ts_ms < ?1;"
				  "DELETE FROM ticks WHERE ts_ms < ?1;"
				  "DELETE FROM events WHERE end_ms IS NOT NULL AND end_ms < ?1;"
				  "COMMIT;";
	const char *tail = sql;
	sqlite3_stmt *q;
	int rc = SQLITE_OK;

	/* one statement at a time: ?1 is bound in each */
	while (rc == SQLITE_OK && *tail) {
		rc = sqlite3_prepare_v2(db, tail, -1, &q, &tail);
		if (rc != SQLITE_OK || !q)
			break;
		if (sqlite3_bind_parameter_count(q))
			sqlite3_bind_int64(q, 1, since_ms);
		rc = sqlite3_step(q) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
		sqlite3_finalize(q);
	}
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, "VACUUM", NULL, NULL, NULL);
	return rc;
}

int snapshot_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "since", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = CONFIG_DEFAULT_DB, *since = NULL, *out;
	int64_t since_ms = 0, until_ms;
	struct store *st = NULL;
	sqlite3 *copy = NULL;
	sqlite3_stmt *q = NULL;
	int c, rc = 1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			path = optarg;
			break;
		case 's':
			since = optarg;
			break;
		case 'h':
			fputs(snapshot_usage, stdout);
			return 0;
		default:
			fputs(snapshot_usage, stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (argc - optind != 1)
		return cli_usage_error("snapshot", "%s",
				       optind == argc ? "no OUT.db given" : "one OUT.db at a time");
	out = argv[optind];
	if (since && cli_window("snapshot", since, "now", &since_ms, &until_ms))
		return CLI_EXIT_USAGE;
	if (access(out, F_OK) == 0)
		return cli_usage_error("snapshot", "'%s' exists: not overwritten", out);
	if (cli_open("snapshot", path, &st))
		return 1;
	if (sqlite3_prepare_v2(store_db(st), "VACUUM INTO ?", -1, &q, NULL) != SQLITE_OK ||
	    sqlite3_bind_text(q, 1, out, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_step(q) != SQLITE_DONE) {
		fprintf(stderr, "fabmon snapshot: copying '%s' to '%s': %s\n", path, out,
			sqlite3_errmsg(store_db(st)));
		goto out;
	}
	if (since && (sqlite3_open_v2(out, &copy, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
		      trim(copy, since_ms) != SQLITE_OK)) {
		fprintf(stderr, "fabmon snapshot: trimming '%s' to --since: %s\n", out,
			copy ? sqlite3_errmsg(copy) : "cannot open it");
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(q);
	sqlite3_close(copy);
	store_close(st);
	if (rc && access(out, F_OK) == 0 && unlink(out) < 0)
		fprintf(stderr, "fabmon snapshot: unable to remove the partial '%s': %s\n", out,
			strerror(errno));
	return rc;
}
