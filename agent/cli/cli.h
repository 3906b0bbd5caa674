/* SPDX-License-Identifier: MIT */
#ifndef FABMON_CLI_H
#define FABMON_CLI_H

#include <getopt.h>
#include <stdint.h>

#include "agent/lib/strbuf.h"
#include "agent/store/store.h"

/*
 * What the review commands (fabmon events, history, top, snapshot) share:
 * they read the agent's database directly, read-only, and take the same
 * time window, output formats and errors.
 */

/* Exit statuses (DESIGN.md): 0 ok, 1 runtime failure, 2 usage error. */
#define CLI_EXIT_USAGE 2

enum cli_format { CLI_TABLE, CLI_JSON, CLI_CSV };

/* The options every review command takes. */
enum {
	CLI_OPT_SINCE = 0x100,
	CLI_OPT_UNTIL,
	CLI_OPT_DB,
	CLI_OPT_JSON,
	CLI_OPT_CSV,
	CLI_OPT_UTC,
};

#define CLI_COMMON_OPTIONS                                                                         \
	{ "since", required_argument, NULL, CLI_OPT_SINCE },                                       \
		{ "until", required_argument, NULL, CLI_OPT_UNTIL },                               \
		{ "db", required_argument, NULL, CLI_OPT_DB },                                     \
		{ "json", no_argument, NULL, CLI_OPT_JSON },                                       \
		{ "csv", no_argument, NULL, CLI_OPT_CSV },                                         \
	{                                                                                          \
		"utc", no_argument, NULL, CLI_OPT_UTC                                              \
	}

struct cli_common {
	const char *since, *until, *db; /* set the defaults before parsing */
	enum cli_format format;
	int utc;
};

/* Takes getopt's c if it is a common option: 0 taken, -1 not one,
 * CLI_EXIT_USAGE on a bad use (said why). */
int cli_common_option(const char *cmd, int c, const char *arg, struct cli_common *cm);

/* "fabmon CMD: <message>\nTry 'fabmon CMD --help'." on stderr; returns
 * CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Parses --since and --until (agent/lib/timefmt.h forms) into *ret_since_ms and
 * *ret_until_ms; until may not be before since. Returns 0 or
 * CLI_EXIT_USAGE (said why).
 */
int cli_window(const char *cmd, const char *since, const char *until, int64_t *ret_since_ms,
	       int64_t *ret_until_ms);

/* Opens path read-only; on failure says why and returns 1 (the exit status). */
int cli_open(const char *cmd, const char *path, struct store **ret);

/*
 * Says that reading path through db failed with r (-errno): SQLite's message
 * if the failure was SQLite's, else r's. Returns 1 (the exit status).
 */
int cli_read_error(const char *cmd, const char *path, struct sqlite3 *db, int r);

/* Writes what sb holds to stdout, or says that building it ran out of
 * memory; releases sb either way. */
void cli_print(const char *cmd, struct strbuf *sb);

/* Appends s as an RFC 4180 CSV field: quoted, quotes doubled. */
void cli_csv_field(struct strbuf *sb, const char *s);

#endif
