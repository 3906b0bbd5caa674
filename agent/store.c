/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "events.h"
#include "schema.h"
#include "stage.h"
#include "store.h"
#include "store_checkpoint.h"
#include "store_pack.h"

/* Per tick: blocks closed and rollup hours written at most (a tick's share
 * is a few: 1000 series close about 4 blocks a tick), and staged ticks
 * deleted at most (one more than a tick adds, so the stage catches up). */
#define PACK_BUDGET 32
#define STAGE_PRUNE_PER_TICK 8

struct store {
	sqlite3 *db;
	sqlite3_stmt *begin, *commit, *rollback;
	sqlite3_stmt *series_insert, *series_select, *stage_insert, *stage_prune, *tick_insert;
	sqlite3_stmt *prune_blocks, *prune_ticks, *prune_rollups, *shed_block, *shed_rollup;
	sqlite3_stmt *event_insert, *event_update, *event_prune;
	struct store_pack *pack;
	int replayed; /* the stage is in pack's memory */
	struct stage_rec *recs; /* a tick's samples */
	size_t nrecs, recs_cap;
	uint8_t *blob;
	size_t blob_cap;
	int lock_fd; /* the writer's flock on the file, -1 for a reader */
	struct store_checkpointer *ckpt;
};

unsigned store_schema_version(void)
{
	return schema_migrations[schema_migration_count - 1].version;
}

/* Maps an SQLite result to -errno for the callers' "why". */
static int sqlite_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_CANTOPEN:
		return -ENOENT;
	case SQLITE_NOTADB:
	case SQLITE_CORRUPT:
		return -EMEDIUMTYPE;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_NOMEM:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

static int fail(sqlite3 *db, int rc, char *err, size_t err_len, const char *what)
{
	snprintf(err, err_len, "%s: %s", what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
	return sqlite_errno(rc);
}

static int query_int(sqlite3 *db, const char *sql, int64_t *ret)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);

	if (rc != SQLITE_OK)
		return rc;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*ret = sqlite3_column_int64(st, 0);
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	return rc;
}

/*
 * Checks the file is fabmon's and not newer than us before anything writes
 * to it (even "PRAGMA journal_mode=WAL" rewrites the header).
 */
static int store_check(sqlite3 *db, const char *path, int64_t *ret_version, char *err,
		       size_t err_len)
{
	int64_t app = 0, version = 0, tables = 0;
	int rc;

	rc = query_int(db, "PRAGMA application_id", &app);
	if (rc == SQLITE_OK)
		rc = query_int(db, "PRAGMA user_version", &version);
	if (rc == SQLITE_OK)
		rc = query_int(db, "SELECT count(*) FROM sqlite_schema", &tables);
	if ((rc & 0xff) == SQLITE_NOTADB) {
		snprintf(err, err_len, "'%s' is not a fabmon database (not SQLite at all)", path);
		return -EMEDIUMTYPE;
	}
	if (rc != SQLITE_OK)
		return fail(db, rc, err, err_len, path);
	if (app != STORE_APPLICATION_ID && (tables > 0 || app != 0)) {
		snprintf(err, err_len, "'%s' is not a fabmon database (application_id 0x%llx)",
			 path, (unsigned long long)app);
		return -EMEDIUMTYPE;
	}
	if (version > (int64_t)store_schema_version()) {
		snprintf(err, err_len,
			 "'%s' has schema version %lld, newer than this fabmon's %u: refusing to "
			 "open it (left untouched); use a newer fabmon",
			 path, (long long)version, store_schema_version());
		return -EPROTONOSUPPORT;
	}
	*ret_version = version;
	return 0;
}

static int store_migrate(sqlite3 *db, int64_t from, char *err, size_t err_len)
{
	char *msg = NULL;
	char pragma[64];
	int rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, &msg);

	for (unsigned i = 0; rc == SQLITE_OK && i < schema_migration_count; i++) {
		if (schema_migrations[i].version <= from)
			continue;
		rc = sqlite3_exec(db, schema_migrations[i].sql, NULL, NULL, &msg);
		if (rc == SQLITE_OK) {
			snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %u",
				 schema_migrations[i].version);
			rc = sqlite3_exec(db, pragma, NULL, NULL, &msg);
		}
	}
	if (rc == SQLITE_OK && from == 0) {
		snprintf(pragma, sizeof(pragma), "PRAGMA application_id = %d",
			 STORE_APPLICATION_ID);
		rc = sqlite3_exec(db, pragma, NULL, NULL, &msg);
	}
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(
			db,
			"INSERT OR REPLACE INTO meta VALUES ('writer_version', '" FABMON_VERSION
			"')",
			NULL, NULL, &msg);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, "COMMIT", NULL, NULL, &msg);
	if (rc != SQLITE_OK) {
		snprintf(err, err_len, "unable to migrate the schema: %s",
			 msg ? msg : sqlite3_errstr(rc));
		(void)sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	}
	sqlite3_free(msg);
	return rc == SQLITE_OK ? 0 : sqlite_errno(rc);
}

static int prepare(sqlite3 *db, sqlite3_stmt **st, const char *sql)
{
	return sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
}

static int store_prepare(struct store *st)
{
	int rc = prepare(st->db, &st->begin, "BEGIN");

	if (rc == SQLITE_OK)
		rc = prepare(st->db, &st->commit, "COMMIT");
	if (rc == SQLITE_OK)
		rc = prepare(st->db, &st->rollback, "ROLLBACK");
	if (rc == SQLITE_OK)
		rc = prepare(st->db, &st->series_insert,
			     "INSERT OR IGNORE INTO series (name, labels, type) VALUES (?, ?, ?)");
	if (rc == SQLITE_OK)
		rc = prepare(st->db, &st->series_select,
			     "SELECT id FROM series WHERE name = ? AND labels = ?");
	if (rc == SQLITE_OK)
		rc = prepare(st->db, &st->stage_insert,
			     "INSERT OR REPLACE INTO stage VALUES (?, ?)");
	if (rc == SQLITE_OK)
		rc = prepare(st->db, &st->stage_prune,
			     "DELETE FROM stage WHERE ts_ms IN (SELECT ts_ms FROM stage WHERE "
			     "ts_ms < ? ORDER BY ts_ms LIMIT ?)");
	if (rc == SQLITE_OK)
		rc = prepare(st->db, &st->tick_insert,
			     "INSERT OR REPLACE INTO ticks VALUES (?, NULL, NULL, ?, ?)");
	if (rc == SQLITE_OK)
		rc = prepare(st->db, &st->prune_blocks,
			     "DELETE FROM blocks WHERE id IN (SELECT id FROM blocks WHERE "
			     "end_ms < ? ORDER BY end_ms LIMIT ?)");
	if (rc == SQLITE_OK)
		rc = prepare(st->db, &st->prune_ticks,
			     "DELETE FROM ticks WHERE ts_ms IN (SELECT ts_ms FROM ticks WHERE "
			     "ts_ms < ? ORDER BY ts_ms LIMIT ?)");
	/* an hour row goes when all of its hour is past the bound */
	if (rc == SQLITE_OK)
		rc = prepare(st->db, &st->prune_rollups,
			     "DELETE FROM rollups WHERE id IN (SELECT id FROM rollups WHERE "
			     "hour_ms < ? - 3600000 ORDER BY hour_ms LIMIT ?)");
	if (rc == SQLITE_OK)
		rc = prepare(st->db, &st->shed_block,
			     "DELETE FROM blocks WHERE id IN (SELECT id FROM blocks "
			     "ORDER BY end_ms LIMIT ?)");
	if (rc == SQLITE_OK)
		rc = prepare(st->db, &st->shed_rollup,
			     "DELETE FROM rollups WHERE id IN (SELECT id FROM rollups "
			     "ORDER BY hour_ms LIMIT ?)");
	if (rc == SQLITE_OK)
		rc = prepare(st->db, &st->event_insert,
			     "INSERT INTO events (kind, subject, start_ms, end_ms, peak_score, "
			     "evidence, open_ms, cause) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
	if (rc == SQLITE_OK)
		rc = prepare(st->db, &st->event_update,
			     "UPDATE events SET end_ms = ?, peak_score = ? WHERE id = ?");
	/* an event that ended before the bound started before it too: the
	 * start index finds the candidates */
	if (rc == SQLITE_OK)
		rc = prepare(st->db, &st->event_prune,
			     "DELETE FROM events WHERE id IN (SELECT id FROM events WHERE "
			     "start_ms < ?1 AND end_ms IS NOT NULL AND end_ms < ?1 "
			     "ORDER BY start_ms LIMIT ?2)");
	return rc;
}

static int step_done(sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);

	(void)sqlite3_reset(s);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

/*
 * Packs the samples table of schema version 1 and 2 into blocks and rollups
 * and drops it, in one transaction: a crash leaves the table to do again.
 */
static int store_pack_legacy(struct store *st)
{
	static const char sql[] =
		"SELECT s.ts_ms, s.series_id, s.value, s.rate, se.type = 'counter' "
		"FROM samples s JOIN series se ON se.id = s.series_id ORDER BY s.rowid";
	int64_t n = 0, last_ms = INT64_MIN;
	sqlite3_stmt *q = NULL;
	int rc;

	if (query_int(
		    st->db,
		    "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'samples'",
		    &n) != SQLITE_OK ||
	    !n)
		return SQLITE_OK;
	rc = step_done(st->begin);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(st->db, sql, -1, &q, NULL);
	while (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		int64_t ts = sqlite3_column_int64(q, 0);
		struct stage_rec r = {
			.id = sqlite3_column_int64(q, 1),
			.value = sqlite3_column_double(q, 2),
			.rate = sqlite3_column_double(q, 3),
			.flags = (sqlite3_column_int(q, 4) ? STAGE_COUNTER : 0) |
				 (sqlite3_column_type(q, 3) != SQLITE_NULL ? STAGE_HAS_RATE : 0),
		};

		/* a tick's end: what is due closes, with no budget */
		rc = ts != last_ms && last_ms != INT64_MIN
			     ? store_pack_tick(st->pack, last_ms, UINT_MAX)
			     : SQLITE_OK;
		last_ms = ts;
		if (rc == SQLITE_OK)
			rc = store_pack_add(st->pack, &r, ts);
	}
	sqlite3_finalize(q);
	rc = rc == SQLITE_DONE ? store_pack_flush(st->pack) : rc;
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(st->db,
				  "DROP TABLE samples; UPDATE ticks SET first_rowid = NULL, "
				  "last_rowid = NULL",
				  NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = step_done(st->commit);
	if (rc != SQLITE_OK && !sqlite3_get_autocommit(st->db))
		(void)step_done(st->rollback);
	store_pack_forget(st->pack);
	return rc;
}

/*
 * One writer a file: a second agent, or `replay --db`, on it would pack the
 * same series from two memories. flock(2) does not touch SQLite's POSIX
 * locks; the descriptor stays open until after sqlite3_close, as closing any
 * descriptor of the file drops the process's POSIX locks
 * (https://www.sqlite.org/howtocorrupt.html, 2.2.1).
 */
static int store_lock(struct store *st, const char *path, char *err, size_t err_len)
{
	st->lock_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (st->lock_fd < 0 || flock(st->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;

		if (e == EWOULDBLOCK)
			snprintf(err, err_len,
				 "'%s' is being written by another fabmon (an agent or replay "
				 "--db): a database has one writer",
				 path);
		else
			snprintf(err, err_len, "unable to lock '%s': %s", path, strerror(e));
		return e == EWOULDBLOCK ? -EBUSY : -e;
	}
	return 0;
}

int store_open(const char *path, enum store_mode mode, struct store **ret, char *err,
	       size_t err_len)
{
	int flags = mode == STORE_READ_ONLY ? SQLITE_OPEN_READONLY
					    : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	struct store *st = calloc(1, sizeof(*st));
	int64_t version = 0;
	int rc, r;

	if (!st)
		return -ENOMEM;
	st->lock_fd = -1;
	if (mode == STORE_READ_ONLY && access(path, F_OK) < 0) {
		r = -errno;
		snprintf(err, err_len, "unable to open database '%s': %s", path, strerror(errno));
		goto fail;
	}
	rc = sqlite3_open_v2(path, &st->db, flags | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		r = fail(st->db, rc, err, err_len, "unable to open database");
		if (r == -ENOENT || r == -EIO)
			r = access(path, F_OK) == 0 ? -EACCES : -ENOENT;
		goto fail;
	}
	(void)sqlite3_extended_result_codes(st->db, 1);
	(void)sqlite3_busy_timeout(st->db, 5000);
	r = store_check(st->db, path, &version, err, err_len);
	if (r < 0)
		goto fail;
	if (mode == STORE_READ_WRITE && (r = store_lock(st, path, err, err_len)) < 0)
		goto fail;
	if (mode == STORE_READ_WRITE) {
		/* WAL lets the CLI read while the agent writes; NORMAL loses at most
		 * the last transactions on power loss, never on a process crash
		 * (https://www.sqlite.org/pragma.html#pragma_synchronous). */
		rc = sqlite3_exec(st->db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;",
				  NULL, NULL, NULL);
		if (rc != SQLITE_OK) {
			r = fail(st->db, rc, err, err_len, path);
			goto fail;
		}
		r = store_migrate(st->db, version, err, err_len);
		if (r < 0)
			goto fail;
	} else if (version == 0) {
		snprintf(err, err_len, "'%s' is not a fabmon database (no schema)", path);
		r = -EMEDIUMTYPE;
		goto fail;
	}
	if (mode == STORE_READ_ONLY && version < (int64_t)store_schema_version()) {
		snprintf(err, err_len,
			 "'%s' has schema version %lld, older than this fabmon's %u: let the agent "
			 "open it once (it upgrades the file), or read it with the fabmon that "
			 "wrote it",
			 path, (long long)version, store_schema_version());
		r = -EPROTONOSUPPORT;
		goto fail;
	}
	rc = mode == STORE_READ_WRITE ? store_prepare(st) : SQLITE_OK;
	if (rc == SQLITE_OK && mode == STORE_READ_WRITE)
		rc = store_pack_new(st->db, &st->pack);
	if (rc == SQLITE_OK && mode == STORE_READ_WRITE)
		rc = store_pack_legacy(st);
	if (rc != SQLITE_OK) {
		r = fail(st->db, rc, err, err_len, path);
		goto fail;
	}
	/* without it, SQLite's automatic checkpoints stay on: slower ticks
	 * now and then, nothing worse */
	if (mode == STORE_READ_WRITE)
		(void)store_checkpointer_start(st->db, path, &st->ckpt);
	*ret = st;
	return 0;
fail:
	store_close(st);
	return r;
}

static void store_finalize(struct store *st)
{
	sqlite3_stmt *stmts[] = { st->begin,	     st->commit,	st->rollback,
				  st->series_insert, st->series_select, st->stage_insert,
				  st->stage_prune,   st->tick_insert,	st->prune_blocks,
				  st->prune_ticks,   st->prune_rollups, st->shed_block,
				  st->shed_rollup,   st->event_insert,	st->event_update,
				  st->event_prune };

	for (size_t i = 0; i < sizeof(stmts) / sizeof(stmts[0]); i++)
		sqlite3_finalize(stmts[i]);
}

/* Adds the staged ticks to pack's memory, as after a crash or a rolled-back
 * tick, inside the caller's transaction. */
static int store_replay_stage(struct store *st)
{
	sqlite3_stmt *q = NULL;
	int rc = sqlite3_prepare_v2(st->db, "SELECT ts_ms, data FROM stage ORDER BY ts_ms", -1, &q,
				    NULL);

	while (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		int64_t ts = sqlite3_column_int64(q, 0);
		const void *blob = sqlite3_column_blob(q, 1);
		long n = stage_count(blob, (size_t)sqlite3_column_bytes(q, 1));
		struct stage_rec r;

		/* an unreadable tick is skipped: the others are still good */
		for (long i = 0; rc == SQLITE_ROW && i < n; i++) {
			stage_get(blob, (size_t)i, &r);
			if (store_pack_add(st->pack, &r, ts) != SQLITE_OK)
				rc = SQLITE_NOMEM;
		}
		if (rc == SQLITE_ROW && store_pack_tick(st->pack, ts, PACK_BUDGET) != SQLITE_OK)
			rc = SQLITE_IOERR;
		if (rc == SQLITE_ROW)
			rc = SQLITE_OK;
	}
	sqlite3_finalize(q);
	if (rc == SQLITE_DONE)
		rc = SQLITE_OK;
	st->replayed = rc == SQLITE_OK;
	return rc;
}

/* Writes what is open and empties the stage: a closed file is all packed. */
static void store_pack_close(struct store *st)
{
	int rc = step_done(st->begin);

	if (rc == SQLITE_OK && !st->replayed)
		rc = store_replay_stage(st);
	if (rc == SQLITE_OK)
		rc = store_pack_flush(st->pack);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(st->db, "DELETE FROM stage", NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = step_done(st->commit);
	/* what stays staged is packed at the next open */
	if (rc != SQLITE_OK && !sqlite3_get_autocommit(st->db))
		(void)step_done(st->rollback);
}

void store_close(struct store *st)
{
	if (!st)
		return;
	if (st->pack)
		store_pack_close(st);
	store_checkpointer_stop(st->ckpt);
	store_pack_free(st->pack);
	store_finalize(st);
	(void)sqlite3_close(st->db);
	if (st->lock_fd >= 0)
		close(st->lock_fd);
	free(st->recs);
	free(st->blob);
	free(st);
}

sqlite3 *store_db(struct store *st)
{
	return st->db;
}

struct write_ctx {
	struct store *st;
	int rc;
};

static int series_id(struct store *st, const struct series *s, int64_t *ret)
{
	int rc;

	sqlite3_bind_text(st->series_insert, 1, s->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st->series_insert, 2, s->labels, -1, SQLITE_STATIC);
	sqlite3_bind_text(st->series_insert, 3, s->type == METRIC_GAUGE ? "gauge" : "counter", -1,
			  SQLITE_STATIC);
	rc = step_done(st->series_insert);
	if (rc != SQLITE_OK)
		return rc;
	if (sqlite3_changes(st->db) == 1) {
		*ret = sqlite3_last_insert_rowid(st->db);
		return SQLITE_OK;
	}
	sqlite3_bind_text(st->series_select, 1, s->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st->series_select, 2, s->labels, -1, SQLITE_STATIC);
	rc = sqlite3_step(st->series_select);
	if (rc == SQLITE_ROW) {
		*ret = sqlite3_column_int64(st->series_select, 0);
		rc = SQLITE_OK;
	}
	(void)sqlite3_reset(st->series_select);
	return rc;
}

/* One series of the tick into st->recs. */
static int collect_one(struct series *s, void *arg)
{
	struct write_ctx *w = arg;
	struct store *st = w->st;
	struct stage_rec *r;
	int rc = SQLITE_OK;

	if (s->store_id == 0)
		rc = series_id(st, s, &s->store_id);
	if (rc == SQLITE_OK && st->nrecs == st->recs_cap) {
		size_t cap = st->recs_cap ? st->recs_cap * 2 : 256;
		struct stage_rec *n = realloc(st->recs, cap * sizeof(*n));

		if (n) {
			st->recs = n;
			st->recs_cap = cap;
		} else {
			rc = SQLITE_NOMEM;
		}
	}
	if (rc != SQLITE_OK) {
		w->rc = rc;
		return 1;
	}
	r = &st->recs[st->nrecs++];
	r->id = s->store_id;
	r->value = s->value;
	r->rate = s->rate;
	r->flags = s->type == METRIC_GAUGE ? 0 : STAGE_COUNTER;
	if (s->type != METRIC_GAUGE && s->has_rate)
		r->flags |= STAGE_HAS_RATE;
	return 0;
}

/* The tick's samples: packed in memory and staged as one row. */
static int stage_tick(struct store *st, int64_t ts)
{
	size_t len = stage_size(st->nrecs);
	int rc = SQLITE_OK;

	if (len > st->blob_cap) {
		uint8_t *b = realloc(st->blob, len);

		if (!b)
			return SQLITE_NOMEM;
		st->blob = b;
		st->blob_cap = len;
	}
	if (stage_encode(st->recs, st->nrecs, st->blob) < 0)
		return SQLITE_RANGE;
	for (size_t i = 0; rc == SQLITE_OK && i < st->nrecs; i++)
		rc = store_pack_add(st->pack, &st->recs[i], ts);
	if (rc != SQLITE_OK)
		return rc;
	sqlite3_bind_int64(st->stage_insert, 1, ts);
	sqlite3_bind_blob(st->stage_insert, 2, st->blob, (int)len, SQLITE_STATIC);
	return step_done(st->stage_insert);
}

int store_write_tick(struct store *st, struct registry *reg, double duration_s, char *err,
		     size_t err_len)
{
	struct write_ctx w = { .st = st };
	int64_t ts = registry_now(reg);
	int rc = step_done(st->begin);

	if (rc == SQLITE_OK && !st->replayed)
		rc = store_replay_stage(st);
	st->nrecs = 0;
	if (rc == SQLITE_OK) {
		(void)registry_foreach(reg, collect_one, &w);
		rc = w.rc;
	}
	if (rc == SQLITE_OK)
		rc = stage_tick(st, ts);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(st->tick_insert, 1, ts);
		sqlite3_bind_int64(st->tick_insert, 2, (int64_t)st->nrecs);
		sqlite3_bind_double(st->tick_insert, 3, duration_s);
		rc = step_done(st->tick_insert);
	}
	if (rc == SQLITE_OK)
		rc = store_pack_tick(st->pack, ts, PACK_BUDGET);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(st->stage_prune, 1, store_pack_frontier(st->pack));
		sqlite3_bind_int64(st->stage_prune, 2, STAGE_PRUNE_PER_TICK);
		rc = step_done(st->stage_prune);
	}
	if (rc == SQLITE_OK)
		rc = step_done(st->commit);
	if (rc == SQLITE_OK)
		return 0;
	(void)fail(st->db, rc, err, err_len, "unable to write the tick");
	if (!sqlite3_get_autocommit(st->db))
		(void)step_done(st->rollback);
	/* memory holds what the database does not: start again from it */
	store_pack_forget(st->pack);
	st->replayed = 0;
	registry_forget_store_ids(reg);
	return sqlite_errno(rc);
}

/* Runs a bounded DELETE (?1 bound, ?2 the limit if it has one) in its own
 * transaction. Returns the rows deleted or -errno. */
static int delete_some(struct store *st, sqlite3_stmt *del, int64_t bound, unsigned max)
{
	int rc;

	if (sqlite3_bind_parameter_count(del) == 2) {
		sqlite3_bind_int64(del, 1, bound);
		sqlite3_bind_int64(del, 2, max);
	} else {
		sqlite3_bind_int64(del, 1, max);
	}
	rc = step_done(del);
	return rc == SQLITE_OK ? sqlite3_changes(st->db) : sqlite_errno(rc);
}

int store_prune(struct store *st, int64_t before_ms, unsigned max_rows)
{
	int blocks = delete_some(st, st->prune_blocks, before_ms, max_rows);
	int ticks = blocks < 0 ? 0 : delete_some(st, st->prune_ticks, before_ms, max_rows);

	if (blocks < 0 || ticks < 0)
		return blocks < 0 ? blocks : ticks;
	return blocks + ticks;
}

int store_prune_rollups(struct store *st, int64_t before_ms, unsigned max_rows)
{
	return delete_some(st, st->prune_rollups, before_ms, max_rows);
}

int store_shed(struct store *st, unsigned max_rows)
{
	int n = delete_some(st, st->shed_block, 0, max_rows);

	return n == 0 ? delete_some(st, st->shed_rollup, 0, max_rows) : n;
}

/* One integer a PRAGMA returns, or -1. */
static int64_t pragma_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s = NULL;
	int64_t v = -1;

	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

int64_t store_used_bytes(struct store *st)
{
	int64_t pages = pragma_int(st->db, "PRAGMA page_count");
	int64_t free_pages = pragma_int(st->db, "PRAGMA freelist_count");
	int64_t size = pragma_int(st->db, "PRAGMA page_size");

	if (pages < 0 || free_pages < 0 || size < 0)
		return -EIO;
	return (pages - free_pages) * size;
}

int store_prune_events(struct store *st, int64_t before_ms, unsigned max_events)
{
	return delete_some(st, st->event_prune, before_ms, max_events);
}

int store_save_event(struct store *st, struct event *e)
{
	sqlite3_stmt *s = e->store_id ? st->event_update : st->event_insert;
	int rc;

	if (e->store_id) {
		if (e->end_ms)
			sqlite3_bind_int64(s, 1, e->end_ms);
		else
			sqlite3_bind_null(s, 1);
		sqlite3_bind_double(s, 2, e->peak);
		sqlite3_bind_int64(s, 3, e->store_id);
	} else {
		sqlite3_bind_text(s, 1, event_kind_name(e->kind), -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 2, e->subject, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 3, e->start_ms);
		if (e->end_ms)
			sqlite3_bind_int64(s, 4, e->end_ms);
		else
			sqlite3_bind_null(s, 4);
		sqlite3_bind_double(s, 5, e->peak);
		sqlite3_bind_text(s, 6, e->evidence[0] ? e->evidence : "{}", -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 7, e->open_ms);
		sqlite3_bind_text(s, 8, event_cause_name(event_kind_cause(e->kind)), -1,
				  SQLITE_STATIC);
	}
	rc = step_done(s);
	if (rc != SQLITE_OK)
		return sqlite_errno(rc);
	if (!e->store_id)
		e->store_id = sqlite3_last_insert_rowid(st->db);
	return 0;
}
