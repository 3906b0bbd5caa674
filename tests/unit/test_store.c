/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/detect/events.h"
#include "agent/store/query_history.h"
#include "agent/store/schema.h"
#include "agent/store/store.h"
#include "agent/store/store_pack.h"
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

static void tick_values(struct store *st, struct registry *reg, int64_t ms, uint64_t v, double g)
{
	const struct metric_desc d = { .name = "fabmon_t_total",
				       .help = "h",
				       .type = METRIC_COUNTER };
	const struct metric_desc gd = { .name = "fabmon_g", .help = "h", .type = METRIC_GAUGE };
	struct label l = { "interface", "eth0" };
	char err[256];

	registry_begin_tick(reg, ms);
	(void)sample_counter(registry_sink(reg, "t"), &d, &l, 1, v);
	(void)sample_gauge(registry_sink(reg, "t"), &gd, NULL, 0, g);
	registry_end_tick(reg);
	ck_assert_msg(store_write_tick(st, reg, 0.001, err, sizeof(err)) == 0, "%s", err);
}

static void tick(struct store *st, struct registry *reg, int64_t ms, uint64_t v)
{
	tick_values(st, reg, ms, v, 0.5);
}

/*
 * One step of one metric's only series, read back as `fabmon history` reads
 * it (read-only, the file as it is): *n samples, the aggregation's value.
 */
static double hist(const char *path, const char *metric, int64_t at_ms, int64_t step_ms,
		   enum history_agg agg, unsigned *n)
{
	struct history_query hq = { .metric = metric,
				    .since_ms = at_ms,
				    .until_ms = at_ms,
				    .step_ms = step_ms,
				    .agg = agg };
	struct history_result res;
	struct store *st;
	char err[256];
	double v = 0;

	ck_assert_msg(store_open(path, STORE_READ_ONLY, &st, err, sizeof(err)) == 0, "%s", err);
	hq.until_ms = at_ms + step_ms - 1;
	ck_assert_int_eq(history_run(store_db(st), &hq, 4, &res), 0);
	ck_assert_int_eq(res.n, 1);
	*n = res.series[0].cells[0].n;
	if (*n)
		v = history_value(&hq, &res.series[0].cells[0]);
	history_result_free(&res);
	store_close(st);
	return v;
}

/* Samples of a metric's only series in [since, until]. */
static unsigned count(const char *path, const char *metric, int64_t since, int64_t until)
{
	unsigned n;

	(void)hist(path, metric, since, until - since + 1, HISTORY_COUNT, &n);
	return n;
}

START_TEST(test_create_and_reopen)
{
	const char *path = tmp_db();
	struct registry *reg = registry_new(100, 60000);
	struct store *st;
	char err[256];
	unsigned n;

	ck_assert_int_eq(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)), 0);
	tick(st, reg, 1000, 10);
	tick(st, reg, 2000, 30);
	/* read while open: the samples are staged */
	ck_assert_int_eq(count(path, "fabmon_g", 0, 5000), 2);
	store_close(st);
	ck_assert_int_eq(q(path, "PRAGMA user_version"), store_schema_version());
	ck_assert_int_eq(q(path, "PRAGMA application_id"), STORE_APPLICATION_ID);
	/* closed: packed, one block a series, nothing staged */
	ck_assert_int_eq(q(path, "SELECT count(*) FROM blocks"), 2);
	ck_assert_int_eq(q(path, "SELECT count(*) FROM stage"), 0);
	ck_assert_int_eq(q(path, "SELECT count(*) FROM ticks"), 2);
	ck_assert_int_eq(count(path, "fabmon_g", 0, 5000), 2);
	/* a counter's first reading has no rate; 20 over the second */
	ck_assert(hist(path, "fabmon_t_total", 2000, 1000, HISTORY_AVG, &n) == 20.0 && n == 1);
	ck_assert(hist(path, "fabmon_t_total", 1000, 1000, HISTORY_AVG, &n) == 0.0 && n == 0);
	/* reopen: same series ids reused, nothing lost */
	registry_forget_store_ids(reg);
	ck_assert_int_eq(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)), 0);
	tick(st, reg, 3000, 40);
	store_close(st);
	ck_assert_int_eq(q(path, "SELECT count(*) FROM series"), 2);
	ck_assert_int_eq(count(path, "fabmon_g", 0, 5000), 3);
	ck_assert(hist(path, "fabmon_t_total", 3000, 1000, HISTORY_AVG, &n) == 10.0 && n == 1);
	ck_assert_int_eq(q(path, "SELECT count(*) FROM pragma_integrity_check WHERE "
				 "integrity_check = 'ok'"),
			 1);
	registry_free(reg);
	testutil_remove_db(path);
}
END_TEST

/* A histogram's _sum and _count are kept, its buckets are not. */
START_TEST(test_histogram_buckets_not_kept)
{
	const char *path = tmp_db();
	struct registry *reg = registry_new(100, 60000);
	const struct metric_desc b = { .name = "fabmon_h_seconds_bucket",
				       .help = "h",
				       .type = METRIC_HISTOGRAM };
	const struct metric_desc c = { .name = "fabmon_h_seconds_count",
				       .help = "h",
				       .type = METRIC_HISTOGRAM };
	const struct label le[] = { { "le", "0.5" }, { "le", "+Inf" } };
	struct store *st;
	char err[256];

	ck_assert_int_eq(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)), 0);
	registry_begin_tick(reg, 1000);
	(void)sample_counter(registry_sink(reg, "t"), &b, &le[0], 1, 1);
	(void)sample_counter(registry_sink(reg, "t"), &b, &le[1], 1, 2);
	(void)sample_counter(registry_sink(reg, "t"), &c, NULL, 0, 2);
	registry_end_tick(reg);
	ck_assert_msg(store_write_tick(st, reg, 0.001, err, sizeof(err)) == 0, "%s", err);
	store_close(st);
	ck_assert_int_eq(q(path, "SELECT count(*) FROM series"), 1);
	ck_assert_int_eq(
		q(path, "SELECT count(*) FROM series WHERE name = 'fabmon_h_seconds_count'"), 1);
	/* the exposition still has all three */
	ck_assert_uint_eq(registry_count(reg), 3);
	registry_free(reg);
	testutil_remove_db(path);
}
END_TEST

/* A version-1 file's samples are packed when the agent opens it. */
START_TEST(test_migrate_older)
{
	const char *path = tmp_db();
	struct store *st;
	char err[256], sql[64];
	unsigned n;

	/* a version-1 database, as the first release wrote it */
	exec(path, schema_migrations[0].sql);
	snprintf(sql, sizeof(sql), "PRAGMA user_version = 1; PRAGMA application_id = %d;",
		 STORE_APPLICATION_ID);
	exec(path, sql);
	exec(path, "INSERT INTO series VALUES (1, 'fabmon_x', '', 'gauge');"
		   "INSERT INTO series VALUES (2, 'fabmon_y_total', '', 'counter');"
		   "INSERT INTO samples VALUES (1000, 1, 42, NULL);"
		   "INSERT INTO samples VALUES (1000, 2, 7, NULL);"
		   "INSERT INTO samples VALUES (2000, 1, 43, NULL);"
		   "INSERT INTO samples VALUES (2000, 2, 9, 2);"
		   "INSERT INTO ticks VALUES (1000, 1, 2, 2, 0.1), (2000, 3, 4, 2, 0.1);");
	/* the reader refuses it until the agent has upgraded it */
	ck_assert_int_eq(store_open(path, STORE_READ_ONLY, &st, err, sizeof(err)),
			 -EPROTONOSUPPORT);
	ck_assert_msg(strstr(err, "older than this fabmon"), "%s", err);
	ck_assert_msg(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)) == 0, "%s", err);
	store_close(st);
	ck_assert_int_eq(q(path, "PRAGMA user_version"), store_schema_version());
	ck_assert_int_eq(q(path, "SELECT count(*) FROM events"), 0);
	ck_assert_int_eq(
		q(path, "SELECT count(*) FROM pragma_table_info('events') WHERE name = 'open_ms'"),
		1);
	ck_assert_int_eq(q(path, "SELECT count(*) FROM sqlite_schema WHERE name = 'samples'"), 0);
	ck_assert(hist(path, "fabmon_x", 1000, 1000, HISTORY_LAST, &n) == 42.0 && n == 1);
	ck_assert(hist(path, "fabmon_x", 2000, 1000, HISTORY_LAST, &n) == 43.0 && n == 1);
	ck_assert(hist(path, "fabmon_y_total", 2000, 1000, HISTORY_LAST, &n) == 2.0 && n == 1);
	ck_assert(hist(path, "fabmon_y_total", 1000, 1000, HISTORY_LAST, &n) == 0.0 && n == 0);
	testutil_remove_db(path);
}
END_TEST

/* A version-4 file's events take the cause their kind implies. */
START_TEST(test_migrate_event_cause)
{
	const char *path = tmp_db();
	struct store *st;
	char err[256], sql[64];

	for (unsigned i = 0; i < schema_migration_count && schema_migrations[i].version <= 4; i++)
		exec(path, schema_migrations[i].sql);
	snprintf(sql, sizeof(sql), "PRAGMA user_version = 4; PRAGMA application_id = %d;",
		 STORE_APPLICATION_ID);
	exec(path, sql);
	exec(path,
	     "INSERT INTO events (kind, subject, start_ms, peak_score) VALUES "
	     "('stall', 'peer=198.18.0.3', 1000, 1), ('hotspot', 'interface=eth0', 2000, 2);");
	ck_assert_msg(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)) == 0, "%s", err);
	store_close(st);
	ck_assert_int_eq(q(path, "SELECT count(*) FROM events WHERE cause = 'network'"), 2);
	testutil_remove_db(path);
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
	testutil_remove_db(path);
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
	testutil_remove_db(path);
	f = fopen(path, "w");
	fputs("this is not sqlite at all, just text that is long enough to be a header....", f);
	fclose(f);
	ck_assert_int_lt(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)), 0);
	ck_assert_msg(strlen(err) > 0, "no message");
	testutil_remove_db(path);
}
END_TEST

START_TEST(test_unwritable)
{
	struct store *st = NULL;
	char err[256];

	ck_assert_int_lt(
		store_open("/nonexistent-dir/fabmon.db", STORE_READ_WRITE, &st, err, sizeof(err)),
		0);
	/* the path and the system's reason, not only SQLite's "unable to open
	 * database file" */
	ck_assert_msg(strstr(err, "unable to open database '/nonexistent-dir/fabmon.db'") &&
			      strstr(err, strerror(ENOENT)),
		      "%s", err);
	ck_assert_int_eq(
		store_open("/nonexistent-dir/fabmon.db", STORE_READ_ONLY, &st, err, sizeof(err)),
		-ENOENT);
}
END_TEST

/* Retention deletes whole blocks, a bounded number a call, oldest first. */
START_TEST(test_prune)
{
	const char *path = tmp_db();
	struct registry *reg = registry_new(100, 600000);
	struct store *st;
	char err[256];

	/* two closes: two blocks a series, ending at 10 s and 20 s */
	for (int run = 0; run < 2; run++) {
		ck_assert_int_eq(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)), 0);
		for (int i = 1; i <= 10; i++)
			tick(st, reg, (run * 10 + i) * 1000, (uint64_t)(run * 10 + i));
		store_close(st);
		registry_forget_store_ids(reg);
	}
	ck_assert_int_eq(q(path, "SELECT count(*) FROM blocks"), 4);
	ck_assert_int_eq(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)), 0);
	/* before 10.5 s: 2 blocks and 10 ticks rows, at most 4 of each a call */
	ck_assert_int_eq(store_prune(st, 10500, 4), 6);
	ck_assert_int_eq(store_prune(st, 10500, 4), 4);
	ck_assert_int_eq(store_prune(st, 10500, 4), 2);
	ck_assert_int_eq(store_prune(st, 10500, 4), 0);
	store_close(st);
	ck_assert_int_eq(count(path, "fabmon_g", 0, 10999), 0);
	ck_assert_int_eq(count(path, "fabmon_g", 11000, 20000), 10);
	ck_assert_int_eq(q(path, "SELECT count(*) FROM ticks"), 10);
	/* the rollups of the deleted minutes stay */
	ck_assert_int_eq(q(path, "SELECT count(*) FROM rollups"), 2);
	registry_free(reg);
	testutil_remove_db(path);
}
END_TEST

/* Writes ticks [from, to) every step_ms: the counter gains 10 a second, the
 * gauge is the tick's number mod 7. */
static void ticks(struct store *st, struct registry *reg, int from, int to, int64_t step_ms)
{
	for (int i = from; i < to; i++)
		tick_values(st, reg, i * step_ms, (uint64_t)(i * step_ms / 100), i % 7);
}

/* A simulated day at 10 s a tick (a fast clock): raw samples, 1-minute
 * rollups, and the retention of each. */
START_TEST(test_day)
{
	enum { TICKS = 8640, STEP = 10000 };
	const char *path = tmp_db();
	struct registry *reg = registry_new(100, 600000);
	int64_t hour = 3600000, end = (int64_t)TICKS * STEP;
	struct store *st;
	char err[256];
	unsigned n;
	double sum = 0;

	ck_assert_int_eq(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)), 0);
	ticks(st, reg, 0, TICKS, STEP);
	/* open: blocks closed as they filled, the rest staged */
	ck_assert_int_ge(q(path, "SELECT count(*) FROM blocks"), 2 * (TICKS / PACK_BLOCK_ROWS - 1));
	ck_assert_int_le(q(path, "SELECT count(*) FROM stage"), PACK_BLOCK_ROWS + 16);
	ck_assert_int_eq(count(path, "fabmon_g", 0, end), TICKS);
	store_close(st);
	ck_assert_int_eq(count(path, "fabmon_g", 0, end), TICKS);
	/* raw: the tick at 5 h 0 min 10 s */
	ck_assert(hist(path, "fabmon_g", 5 * hour + STEP, 1000, HISTORY_LAST, &n) == 1801 % 7);
	/* rollups: 6 ticks a minute, the counter's rate 10 */
	ck_assert(hist(path, "fabmon_t_total", 3 * hour, 60000, HISTORY_AVG, &n) == 10.0 && n == 6);
	for (int i = 0; i < 360; i++)
		sum += i % 7;
	ck_assert(hist(path, "fabmon_g", 0, hour, HISTORY_AVG, &n) == sum / 360 && n == 360);
	ck_assert(hist(path, "fabmon_g", 0, hour, HISTORY_MAX, &n) == 6.0);
	/* raw samples older than 12 h go; their rollups stay */
	ck_assert_int_eq(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)), 0);
	while (store_prune(st, end - 12 * hour, 64) > 0)
		;
	store_close(st);
	ck_assert_int_eq(count(path, "fabmon_g", 0, 11 * hour), 0);
	ck_assert(hist(path, "fabmon_g", 2 * hour, hour, HISTORY_COUNT, &n) == 360.0);
	/* rollups older than 6 h go, a whole hour at a time */
	ck_assert_int_eq(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)), 0);
	while (store_prune_rollups(st, end - 6 * hour, 64) > 0)
		;
	store_close(st);
	(void)hist(path, "fabmon_g", 2 * hour, hour, HISTORY_COUNT, &n);
	ck_assert_int_eq(n, 0);
	ck_assert(hist(path, "fabmon_g", 20 * hour, hour, HISTORY_COUNT, &n) == 360.0);
	registry_free(reg);
	testutil_remove_db(path);
}
END_TEST

/* A writer's run: it opens path, writes ticks [from, to) a second apart,
 * and closes (all packed). */
static void run_writer(const char *path, struct registry *reg, int from, int to)
{
	struct store *st;
	char err[256];

	ck_assert_msg(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)) == 0, "%s", err);
	ticks(st, reg, from, to, 1000);
	store_close(st);
	registry_forget_store_ids(reg);
}

/* A writer killed without closing, after ticks [1, 301) a second apart:
 * the newest ticks stay staged. */
static void crashed_writer(const char *path)
{
	struct registry *reg;
	struct store *st;
	char err[256];
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		reg = registry_new(100, 600000);
		if (store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)) < 0)
			_exit(1);
		ticks(st, reg, 1, 301, 1000);
		_exit(0); /* no close: as a kill -9 */
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * The writer after crashed_writer's: it packs the stage, skipping corrupt
 * staged records, writes ticks [301, 306) with one rolled back among them
 * (the stage is packed again after it), and closes. Then it has counted
 * each corrupt record once, the stage is empty, the gauge has gauge_n
 * samples, the counter counter_n rates, all 10 a second.
 */
static void resume_crashed(const char *path, uint64_t corrupt, unsigned gauge_n, unsigned counter_n)
{
	struct registry *reg = registry_new(100, 600000);
	struct store *st;
	char err[256];
	unsigned n;

	ck_assert_int_eq(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)), 0);
	ticks(st, reg, 301, 303, 1000);
	ck_assert_int_eq(sqlite3_exec(store_db(st), "PRAGMA query_only = 1", NULL, NULL, NULL),
			 SQLITE_OK);
	ck_assert_int_lt(store_write_tick(st, reg, 0.001, err, sizeof(err)), 0);
	ck_assert_int_eq(sqlite3_exec(store_db(st), "PRAGMA query_only = 0", NULL, NULL, NULL),
			 SQLITE_OK);
	ticks(st, reg, 303, 306, 1000);
	ck_assert_int_eq(store_corrupt_records(st, STORE_CORRUPT_STAGE), corrupt);
	store_close(st);
	ck_assert_int_eq(q(path, "SELECT count(*) FROM stage"), 0);
	ck_assert_int_eq(count(path, "fabmon_g", 0, 400000), gauge_n);
	ck_assert_int_eq(count(path, "fabmon_t_total", 0, 400000), counter_n);
	ck_assert(hist(path, "fabmon_t_total", 0, 400000, HISTORY_MAX, &n) == 10.0);
	ck_assert(hist(path, "fabmon_t_total", 0, 400000, HISTORY_MIN, &n) == 10.0);
	registry_free(reg);
}

/* A writer killed without closing: its staged ticks are packed by the next
 * one, none lost, none twice. */
START_TEST(test_crash_replay)
{
	const char *path = tmp_db();

	crashed_writer(path);
	ck_assert_int_gt(q(path, "SELECT count(*) FROM stage"), 0);
	ck_assert_int_eq(count(path, "fabmon_g", 0, 400000), 300);
	/* every reading but the two firsts (one a process) has its rate */
	resume_crashed(path, 0, 305, 303);
	testutil_remove_db(path);
}
END_TEST

/*
 * Staged records whose series id is no series' (flipped bits: 0x08000001
 * made the agent allocate 1 GiB, 0xfffffff0 failed every tick after) and a
 * staged tick of the wrong length: each skipped when the next writer packs
 * the stage, the rest of the ticks kept, and that writer goes on writing.
 */
START_TEST(test_stage_corrupt)
{
	const char *path = tmp_db();

	crashed_writer(path);
	/* records sorted by id, 21 bytes each after a version byte: record 0
	 * is the counter (id 1), record 1 the gauge (id 2) */
	exec(path, "UPDATE stage SET data = substr(data, 1, 1) || x'01000008' || substr(data, 6) "
		   "WHERE ts_ms = 300000;"
		   "UPDATE stage SET data = substr(data, 1, 22) || x'f0ffffff' || substr(data, 27) "
		   "WHERE ts_ms = 299000;"
		   "UPDATE stage SET data = substr(data, 1, 30) WHERE ts_ms = 298000;");
	/* the gauge lost 299 s and 298 s, the counter 300 s and 298 s */
	resume_crashed(path, 3, 303, 301);
	testutil_remove_db(path);
}
END_TEST

/* Flips bit `bit` of the data of the row id of table. */
static void flip_bit(const char *path, const char *table, int64_t id, unsigned bit)
{
	char sql[128];
	sqlite3_stmt *s;
	sqlite3 *db;
	uint8_t *buf;
	int len;

	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	snprintf(sql, sizeof(sql), "SELECT data FROM %s WHERE id = %lld", table, (long long)id);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
	len = sqlite3_column_bytes(s, 0);
	ck_assert_int_gt(len * 8, (int)bit);
	buf = malloc((size_t)len);
	memcpy(buf, sqlite3_column_blob(s, 0), (size_t)len);
	sqlite3_finalize(s);
	buf[bit / 8] ^= (uint8_t)(0x80 >> (bit % 8));
	snprintf(sql, sizeof(sql), "UPDATE %s SET data = ? WHERE id = %lld", table, (long long)id);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	sqlite3_bind_blob(s, 1, buf, len, SQLITE_STATIC);
	ck_assert_int_eq(sqlite3_step(s), SQLITE_DONE);
	sqlite3_finalize(s);
	sqlite3_close(db);
	free(buf);
}

/*
 * Three clean runs of 100 ticks: three blocks of the gauge. Its first block
 * loses bit 100 (inside a value: it decodes, into other values), the second
 * is cut short (it does not decode). A reader skips both and gets the third
 * and the rollups; a writer resuming after the newest block, whose end is
 * flipped years ahead, does not take it for packed and drop what comes.
 */
START_TEST(test_block_corrupt)
{
	const char *path = tmp_db();
	struct registry *reg = registry_new(100, 600000);
	const char *gauge = "(SELECT id FROM series WHERE name = 'fabmon_g')";
	char sql[256];
	unsigned n, rolled;
	int64_t first;

	for (int run = 0; run < 3; run++)
		run_writer(path, reg, run * 100 + 1, run * 100 + 101);
	snprintf(sql, sizeof(sql), "SELECT min(id) FROM blocks WHERE series_id = %s", gauge);
	first = q(path, sql);
	ck_assert_int_eq(count(path, "fabmon_g", 0, 400000), 300);
	(void)hist(path, "fabmon_g", 0, 360000, HISTORY_COUNT, &rolled);
	flip_bit(path, "blocks", first, 100);
	snprintf(sql, sizeof(sql),
		 "UPDATE blocks SET data = substr(data, 1, 12) WHERE id = (SELECT id FROM blocks "
		 "WHERE series_id = %s ORDER BY id LIMIT 1 OFFSET 1)",
		 gauge);
	exec(path, sql);
	/* raw samples: the third block's 100; whole minutes: the rollups */
	ck_assert_int_eq(count(path, "fabmon_g", 1000, 300000), 100);
	(void)hist(path, "fabmon_g", 0, 360000, HISTORY_COUNT, &n);
	ck_assert_int_eq(n, rolled);
	snprintf(sql, sizeof(sql),
		 "UPDATE blocks SET end_ms = end_ms + 100000000000 WHERE id = (SELECT max(id) "
		 "FROM blocks WHERE series_id = %s)",
		 gauge);
	exec(path, sql);
	run_writer(path, reg, 301, 311);
	ck_assert_int_eq(count(path, "fabmon_g", 300500, 400000), 10);
	registry_free(reg);
	testutil_remove_db(path);
}
END_TEST

/*
 * A version-4 file, whose blocks and rollup rows have no checksum: the
 * agent upgrades it without rewriting them, they read as before, and only
 * what it writes from then on carries one.
 */
START_TEST(test_checksum_upgrade)
{
	const char *path = tmp_db();
	struct registry *reg = registry_new(100, 600000);

	run_writer(path, reg, 1, 101);
	/* as version 4 wrote it: the same blocks, no crc column (nor the
	 * events' cause of version 6) */
	exec(path, "ALTER TABLE blocks DROP COLUMN crc; ALTER TABLE rollups DROP COLUMN crc;"
		   "ALTER TABLE events DROP COLUMN cause; PRAGMA user_version = 4;");
	run_writer(path, reg, 101, 201);
	ck_assert_int_eq(q(path, "PRAGMA user_version"), store_schema_version());
	ck_assert_int_eq(
		q(path, "SELECT count(*) FROM blocks WHERE crc IS NULL AND end_ms <= 100000"), 2);
	ck_assert_int_eq(
		q(path, "SELECT count(*) FROM blocks WHERE crc IS NULL AND end_ms > 100000"), 0);
	/* the rollup hour was written again, with its checksum */
	ck_assert_int_eq(q(path, "SELECT count(*) FROM rollups WHERE crc IS NULL"), 0);
	ck_assert_int_eq(count(path, "fabmon_g", 0, 400000), 200);
	registry_free(reg);
	testutil_remove_db(path);
}
END_TEST

/*
 * The checkpoint thread copies the WAL back once it passes 1000 pages, so a
 * writer that leaves gaps between its ticks (as the agent does) starts the
 * WAL over at about that size; without it the WAL grows to 8000 pages
 * (32 MiB), where the writer checkpoints in its own tick.
 */
/* A series whose every value differs in most of its bits closes its blocks
 * by size, none over PACK_BLOCK_BYTES and one row, and keeps every sample. */
START_TEST(test_noisy_blocks)
{
	const char *path = tmp_db();
	struct registry *reg = registry_new(100, 60000);
	struct store *st;
	char err[256];
	unsigned seed = 7;

	ck_assert_int_eq(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)), 0);
	for (int i = 1; i <= 400; i++)
		tick_values(st, reg, i * 1000, (uint64_t)i, (double)rand_r(&seed) / 3.0);
	store_close(st);
	ck_assert_int_ge(q(path, "SELECT count(*) FROM blocks WHERE series_id = "
				 "(SELECT id FROM series WHERE name = 'fabmon_g')"),
			 3);
	ck_assert_int_le(q(path, "SELECT max(length(data)) FROM blocks"), PACK_BLOCK_BYTES + 64);
	ck_assert_int_eq(count(path, "fabmon_g", 1000, 400000), 400);
	registry_free(reg);
	testutil_remove_db(path);
}
END_TEST

START_TEST(test_wal_checkpointed)
{
	enum { SERIES = 4000, TICKS = 200 };
	const struct metric_desc d = { .name = "fabmon_w", .help = "h", .type = METRIC_GAUGE };
	const char *path = tmp_db();
	struct registry *reg = registry_new(SERIES + 10, 600000);
	char err[256], wal[80], name[16];
	struct store *st;
	struct stat sb;

	ck_assert_int_eq(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)), 0);
	for (int t = 1; t <= TICKS; t++) {
		registry_begin_tick(reg, t * 1000);
		for (int i = 0; i < SERIES; i++) {
			struct label l = { "i", name };

			snprintf(name, sizeof(name), "%d", i);
			(void)sample_gauge(registry_sink(reg, "t"), &d, &l, 1, i + t);
		}
		registry_end_tick(reg);
		ck_assert_msg(store_write_tick(st, reg, 0.001, err, sizeof(err)) == 0, "%s", err);
		(void)usleep(5000);
	}
	snprintf(wal, sizeof(wal), "%s-wal", path);
	ck_assert_int_eq(stat(wal, &sb), 0);
	ck_assert_msg(sb.st_size < 3000 * 4096, "WAL of %lld bytes", (long long)sb.st_size);
	store_close(st);
	registry_free(reg);
	testutil_remove_db(path);
}
END_TEST

/* The wall clock steps back 1.5 s: every sample is kept, the blocks' times
 * still only go forward. While staged, the samples of the repeated 1.5 s
 * are not read (staged samples up to a series' newest packed one count as
 * packed); once packed they are. */
START_TEST(test_clock_back)
{
	static const int64_t at[] = { 1000, 2000, 3000, 4000, 5000, 3500, 4500, 6000, 6000 };
	const char *path = tmp_db();
	struct registry *reg = registry_new(100, 600000);
	struct store *st;
	char err[256];

	ck_assert_int_eq(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
		tick(st, reg, at[i], 10 * i);
	ck_assert_int_eq(count(path, "fabmon_g", 0, 10000), 6);
	store_close(st);
	ck_assert_int_eq(count(path, "fabmon_g", 0, 10000), 8);
	ck_assert_int_eq(q(path, "SELECT count(*) FROM blocks WHERE series_id = "
				 "(SELECT id FROM series WHERE name = 'fabmon_g')"),
			 2);
	registry_free(reg);
	testutil_remove_db(path);
}
END_TEST

/* Events that ended before the bound go, a bounded number a call, oldest
 * first; an open event stays whatever its age, and so does a recent one. */
START_TEST(test_prune_events)
{
	const char *path = tmp_db();
	struct event ongoing = { .kind = EVENT_INCAST, .start_ms = 500, .open_ms = 600, .peak = 2 };
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
	ck_assert_int_eq(q(path, "SELECT open_ms FROM events WHERE end_ms IS NULL"), 600);
	testutil_remove_db(path);
}
END_TEST

/* A writer killed at once (as by kill -9) after ticks: its WAL stays beside
 * the file, the ticks in it not yet copied into the file. */
static void crash_writer(const char *path, int ticks_n)
{
	struct registry *reg;
	struct store *st;
	char err[256];
	pid_t pid = fork();
	int status;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		reg = registry_new(100, 600000);
		if (store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)) < 0)
			_exit(1);
		ticks(st, reg, 1, 1 + ticks_n, 1000);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Refused with a message that has want in it, and neither file changed. */
static void refused(const char *path, const char *want)
{
	char wal[80], err[512], *db0, *db1, *wal0, *wal1;
	size_t ldb0 = 0, ldb1 = 0, lwal0, lwal1;
	struct store *st = NULL;

	snprintf(wal, sizeof(wal), "%s-wal", path);
	db0 = access(path, F_OK) == 0 ? slurp(path, &ldb0) : NULL;
	wal0 = slurp(wal, &lwal0);
	ck_assert_int_eq(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)), -EMEDIUMTYPE);
	ck_assert_msg(strstr(err, want), "%s", err);
	db1 = db0 ? slurp(path, &ldb1) : NULL;
	wal1 = slurp(wal, &lwal1);
	ck_assert_uint_eq(ldb1, ldb0);
	ck_assert(!db0 || memcmp(db0, db1, ldb0) == 0);
	ck_assert_uint_eq(lwal1, lwal0);
	ck_assert(memcmp(wal0, wal1, lwal0) == 0);
	free(db0);
	free(db1);
	free(wal0);
	free(wal1);
}

/*
 * A writer killed with its WAL beside the file: if the file is then
 * replaced by someone else's, or removed, or the WAL by someone else's,
 * SQLite would copy the WAL into whatever is there; the writer refuses and
 * changes neither. With its own file back, it opens and keeps every tick.
 */
START_TEST(test_wal_not_its_own)
{
	const char *path = tmp_db();
	char saved[96], wal[96], other[64];
	struct store *st;
	char err[256];
	sqlite3 *db;
	FILE *f;

	snprintf(saved, sizeof(saved), "%s.saved", path);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	crash_writer(path, 20);
	ck_assert_int_eq(access(wal, F_OK), 0);
	ck_assert_int_eq(rename(path, saved), 0);
	/* another program's database, put in its place (made elsewhere: SQLite
	 * making it there would delete the WAL) */
	snprintf(other, sizeof(other), "%s.other", path);
	exec(other, "CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('alice');");
	ck_assert_int_eq(rename(other, path), 0);
	refused(path, "is not a fabmon database (application_id 0x0)");
	unlink(path);
	f = fopen(path, "w");
	fputs("a text file, long enough to fill an SQLite header and a bit more: ............"
	      "..................................................",
	      f);
	fclose(f);
	refused(path, "not SQLite at all");
	unlink(path);
	refused(path, "is absent but");
	close(open(path, O_CREAT | O_WRONLY, 0644));
	refused(path, "is empty but");
	ck_assert_int_eq(rename(saved, path), 0);
	ck_assert_msg(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)) == 0, "%s", err);
	store_close(st);
	ck_assert_int_eq(count(path, "fabmon_g", 0, 100000), 20);
	/* the WAL another program's database left, beside this one */
	ck_assert_int_eq(sqlite3_open(other, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db,
				      "PRAGMA journal_mode = WAL; CREATE TABLE users (name TEXT); "
				      "INSERT INTO users VALUES ('alice');",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	ck_assert_int_eq(sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	snprintf(saved, sizeof(saved), "%s-wal", other);
	ck_assert_int_eq(rename(saved, wal), 0);
	refused(path, "is not the WAL of a fabmon database");
	testutil_remove_db(other);
	testutil_remove_db(path);
}
END_TEST

Suite *store_suite(void)
{
	const struct testutil_case cases[] = {
		{ "create_and_reopen", test_create_and_reopen, 0 },
		{ "histogram buckets not kept", test_histogram_buckets_not_kept, 0 },
		{ "migrate_older", test_migrate_older, 0 },
		{ "migrate_event_cause", test_migrate_event_cause, 0 },
		{ "newer_refused", test_newer_refused, 0 },
		{ "foreign_refused", test_foreign_refused, 0 },
		{ "unwritable", test_unwritable, 0 },
		{ "prune", test_prune, 0 },
		{ "a simulated day", test_day, 0 },
		{ "crash replay", test_crash_replay, 0 },
		{ "clock steps back", test_clock_back, 0 },
		{ "prune events", test_prune_events, 0 },
		{ "a WAL beside a file not its own", test_wal_not_its_own, 0 },
		{ "corrupt staged records", test_stage_corrupt, 0 },
		{ "corrupt blocks", test_block_corrupt, 0 },
		{ "blocks without checksum", test_checksum_upgrade, 0 },
		{ "WAL checkpointed off the tick", test_wal_checkpointed, 30 },
		{ "a noisy series closes its blocks by size", test_noisy_blocks, 30 },
	};

	return TESTUTIL_SUITE("store", cases);
}
