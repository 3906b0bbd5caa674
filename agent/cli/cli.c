/* SPDX-License-Identifier: MIT */
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "agent/cli/cli.h"
#include "agent/lib/clock.h"
#include "agent/lib/timefmt.h"

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fabmon %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'fabmon %s --help'.\n", cmd);
	return CLI_EXIT_USAGE;
}

int cli_window(const char *cmd, const char *since, const char *until, int64_t *ret_since_ms,
	       int64_t *ret_until_ms)
{
	int64_t now = clock_wall_ms();

	if (time_parse(since, now, ret_since_ms) < 0)
		return cli_usage_error(cmd,
				       "--since: '%s' is not a time (now-2h, 2h, RFC 3339, Unix "
				       "seconds)",
				       since);
	if (time_parse(until, now, ret_until_ms) < 0)
		return cli_usage_error(
			cmd, "--until: '%s' is not a time (now, RFC 3339, Unix seconds)", until);
	if (*ret_until_ms < *ret_since_ms)
		return cli_usage_error(cmd, "--until is before --since");
	return 0;
}

int cli_open(const char *cmd, const char *path, struct store **ret)
{
	char err[512];

	if (store_open(path, STORE_READ_ONLY, ret, err, sizeof(err)) == 0)
		return 0;
	fprintf(stderr, "fabmon %s: %s\n", cmd, err);
	return 1;
}

int cli_read_error(const char *cmd, const char *path, sqlite3 *db, int r)
{
	int rc = sqlite3_errcode(db);
	/* after a failure of fabmon's own, SQLite's message is "not an error" */
	int sqlites = rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE;

	fprintf(stderr, "fabmon %s: reading '%s': %s\n", cmd, path,
		sqlites ? sqlite3_errmsg(db) : strerror(-r));
	return 1;
}

void cli_print(const char *cmd, struct strbuf *sb)
{
	if (!sb->failed)
		fwrite(sb->buf, 1, sb->len, stdout);
	else
		fprintf(stderr, "fabmon %s: out of memory\n", cmd);
	strbuf_release(sb);
}

void cli_csv_field(struct strbuf *sb, const char *s)
{
	strbuf_addch(sb, '"');
	for (; *s; s++) {
		if (*s == '"')
			strbuf_addch(sb, '"');
		strbuf_addch(sb, *s);
	}
	strbuf_addch(sb, '"');
}

int cli_common_option(const char *cmd, int c, const char *arg, struct cli_common *cm)
{
	switch (c) {
	case CLI_OPT_SINCE:
		cm->since = arg;
		return 0;
	case CLI_OPT_UNTIL:
		cm->until = arg;
		return 0;
	case CLI_OPT_DB:
		cm->db = arg;
		return 0;
	case CLI_OPT_JSON:
	case CLI_OPT_CSV:
		if (cm->format != CLI_TABLE)
			return cli_usage_error(cmd, "--json and --csv: one or the other");
		cm->format = c == CLI_OPT_JSON ? CLI_JSON : CLI_CSV;
		return 0;
	case CLI_OPT_UTC:
		cm->utc = 1;
		return 0;
	}
	return -1;
}
