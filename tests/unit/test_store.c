/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../agent/events.h"
#include "../../agent/schema.h"
#include "../../agent/store.h"
#include "suites.h"
#include "testutil.h"

static const char *tmp_db(void)
{
	static char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/fabmon-store-XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	unlink(path);
	return path;
}

/* Removes the database and SQLite's side files. */
static void rm_db(const char *path)
{
	char side[80];

	unlink(path);
	snprintf(side, sizeof(side), "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", path);
	unlink(side);
}

static int64_t q(const char *path, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int64_t v = -1;

	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static void exec(const char *path, const char *sql)
{
	sqlite3 *db;

	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

static void tick(struct store *st, struct registry *reg, int64_t ms, uint64_t v)
{
	const struct metric_desc d = { .name = "fabmon_t_total",
				       .help = "h",
				       .type = METRIC_COUNTER };
	const struct metric_desc g = { .name = "fabmon_g", .help = "h", .type = METRIC_GAUGE };
	struct label l = { "interface", "eth0" };
	char err[256];

	registry_begin_tick(reg, ms);
	(void)sample_counter(registry_sink(reg, "t"), &d, &l, 1, v);
	(void)sample_gauge(registry_sink(reg, "t"), &g, NULL, 0, 0.5);
	registry_end_tick(reg);
	ck_assert_msg(store_write_tick(st, reg, 0.001, err, sizeof(err)) == 0, "%s", err);
}

START_TEST(test_create_and_reopen)
{
	const char *path = tmp_db();
	struct registry *reg = registry_new(100, 60000);
	struct store *st;
	char err[256];

	ck_assert_int_eq(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)), 0);
	tick(st, reg, 1000, 10);
	tick(st, reg, 2000, 30);
	store_close(st);
	ck_assert_int_eq(q(path, "PRAGMA user_version"), store_schema_version());
	ck_assert_int_eq(q(path, "PRAGMA application_id"), STORE_APPLICATION_ID);
	ck_assert_int_eq(q(path, "SELECT count(*) FROM samples"), 4);
	ck_assert_int_eq(q(path, "SELECT count(*) FROM ticks"), 2);
	ck_assert_int_eq(q(path,
			   "SELECT CAST(rate AS INT) FROM samples s JOIN series r ON "
			   "r.id = s.series_id WHERE r.name = 'fabmon_t_total' AND ts_ms = 2000"),
			 20);
	/* reopen: same series ids reused, nothing lost */
	registry_forget_store_ids(reg);
	ck_assert_int_eq(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)), 0);
	tick(st, reg, 3000, 40);
	store_close(st);
	ck_assert_int_eq(q(path, "SELECT count(*) FROM series"), 2);
	ck_assert_int_eq(q(path, "SELECT count(*) FROM samples"), 6);
	ck_assert_int_eq(q(path, "SELECT count(*) FROM pragma_integrity_check WHERE "
				 "integrity_check = 'ok'"),
			 1);
	registry_free(reg);
	rm_db(path);
}
END_TEST

START_TEST(test_migrate_older)
{
	const char *path = tmp_db();
	struct store *st;
	char err[256], sql[64];

	/* a version-1 database, as the first release wrote it */
	exec(path, schema_migrations[0].sql);
	snprintf(sql, sizeof(sql), "PRAGMA user_version = 1; PRAGMA application_id = %d;",
		 STORE_APPLICATION_ID);
	exec(path, sql);
	exec(path, "INSERT INTO series VALUES (1, 'fabmon_x', '', 'gauge');"
		   "INSERT INTO samples VALUES (1000, 1, 42, NULL);");
	ck_assert_int_eq(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)), 0);
	store_close(st);
	ck_assert_int_eq(q(path, "PRAGMA user_version"), store_schema_version());
	ck_assert_int_eq(q(path, "SELECT count(*) FROM events"), 0);
	ck_assert_int_eq(q(path, "SELECT value FROM samples"), 42);
	rm_db(path);
}
END_TEST

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = malloc(1 << 20);

	ck_assert_ptr_nonnull(f);
	*len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

START_TEST(test_newer_refused)
{
	const char *path = tmp_db();
	struct store *st = NULL;
	char err[256], *before, *after;
	size_t lb, la;

	exec(path, "CREATE TABLE future (x); PRAGMA user_version = 99;"
		   "PRAGMA application_id = 1178750286;");
	before = slurp(path, &lb);
	ck_assert_int_eq(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)),
			 -EPROTONOSUPPORT);
	ck_assert_msg(strstr(err, "schema version 99, newer than this fabmon"), "%s", err);
	after = slurp(path, &la);
	ck_assert_uint_eq(la, lb);
	ck_assert(memcmp(before, after, la) == 0);
	snprintf(err, sizeof(err), "%s-wal", path);
	ck_assert_int_ne(access(err, F_OK), 0); /* not even a WAL file was made */
	free(before);
	free(after);
	rm_db(path);
}
END_TEST

START_TEST(test_foreign_refused)
{
	const char *path = tmp_db();
	struct store *st = NULL;
	char err[256];
	FILE *f;

	exec(path, "CREATE TABLE users (name TEXT);");
	ck_assert_int_eq(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)), -EMEDIUMTYPE);
	ck_assert_msg(strstr(err, "is not a fabmon database"), "%s", err);
	rm_db(path);
	f = fopen(path, "w");
	fputs("this is not sqlite at all, just text that is long enough to be a header....", f);
	fclose(f);
	ck_assert_int_lt(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)), 0);
	ck_assert_msg(strlen(err) > 0, "no message");
	rm_db(path);
}
END_TEST

START_TEST(test_unwritable)
{
	struct store *st = NULL;
	char err[256];

	ck_assert_int_lt(
		store_open("/nonexistent-dir/fabmon.db", STORE_READ_WRITE, &st, err, sizeof(err)),
		0);
	ck_assert_msg(strstr(err, "unable to open database"), "%s", err);
	ck_assert_int_eq(
		store_open("/nonexistent-dir/fabmon.db", STORE_READ_ONLY, &st, err, sizeof(err)),
		-ENOENT);
}
END_TEST

START_TEST(test_prune)
{
	const char *path = tmp_db();
	struct registry *reg = registry_new(100, 600000);
	struct store *st;
	char err[256];

	ck_assert_int_eq(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)), 0);
	for (int i = 1; i <= 10; i++)
		tick(st, reg, i * 1000, (uint64_t)i);
	/* bounded: at most 4 ticks per call */
	ck_assert_int_eq(store_prune(st, 8000, 4), 4);
	ck_assert_int_eq(store_prune(st, 8000, 4), 3);
	ck_assert_int_eq(store_prune(st, 8000, 4), 0);
	store_close(st);
	ck_assert_int_eq(q(path, "SELECT min(ts_ms) FROM samples"), 8000);
	ck_assert_int_eq(q(path, "SELECT count(*) FROM samples"), 6);
	ck_assert_int_eq(q(path, "SELECT count(*) FROM ticks"), 3);
	registry_free(reg);
	rm_db(path);
}
END_TEST

/* Events that ended before the bound go, a bounded number a call, oldest
 * first; an open event stays whatever its age, and so does a recent one. */
START_TEST(test_prune_events)
{
	const char *path = tmp_db();
	struct event ongoing = { .kind = EVENT_INCAST, .start_ms = 500, .peak = 2 };
	struct store *st;
	char err[256];

	ck_assert_int_eq(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)), 0);
	for (int i = 1; i <= 6; i++) {
		struct event e = { .kind = EVENT_STALL,
				   .start_ms = i * 1000,
				   .end_ms = i * 1000 + 500,
				   .peak = 1 };

		snprintf(e.subject, sizeof(e.subject), "peer=10.0.0.%d", i);
		ck_assert_int_eq(store_save_event(st, &e), 0);
	}
	snprintf(ongoing.subject, sizeof(ongoing.subject), "peer=10.0.0.9");
	ck_assert_int_eq(store_save_event(st, &ongoing), 0);
	/* ended before 4000: the first three, two a call */
	ck_assert_int_eq(store_prune_events(st, 4000, 2), 2);
	ck_assert_int_eq(store_prune_events(st, 4000, 2), 1);
	ck_assert_int_eq(store_prune_events(st, 4000, 2), 0);
	store_close(st);
	ck_assert_int_eq(q(path, "SELECT count(*) FROM events"), 4);
	ck_assert_int_eq(q(path, "SELECT min(start_ms) FROM events WHERE end_ms IS NOT NULL"),
			 4000);
	ck_assert_int_eq(q(path, "SELECT count(*) FROM events WHERE end_ms IS NULL"), 1);
	rm_db(path);
}
END_TEST

Suite *store_suite(void)
{
	const struct testutil_case cases[] = {
		{ "create_and_reopen", test_create_and_reopen, 0 },
		{ "migrate_older", test_migrate_older, 0 },
		{ "newer_refused", test_newer_refused, 0 },
		{ "foreign_refused", test_foreign_refused, 0 },
		{ "unwritable", test_unwritable, 0 },
		{ "prune", test_prune, 0 },
		{ "prune events", test_prune_events, 0 },
	};

	return TESTUTIL_SUITE("store", cases);
}
