/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "events.h"
#include "schema.h"
#include "store.h"

struct store {
	sqlite3 *db;
	sqlite3_stmt *begin, *commit, *rollback;
	sqlite3_stmt *series_insert, *series_select, *sample_insert, *tick_insert;
	sqlite3_stmt *prune_select, *prune_samples, *prune_tick;
	sqlite3_stmt *event_insert, *event_update, *event_prune;
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
		rc = prepare(
			st->db, &st->sample_insert,
			"INSERT INTO samples (ts_ms, series_id, value, rate) VALUES (?, ?, ?, ?)");
	if (rc == SQLITE_OK)
		rc = prepare(st->db, &st->tick_insert,
			     "INSERT OR REPLACE INTO ticks VALUES (?, ?, ?, ?, ?)");
	if (rc == SQLITE_OK)
		rc = prepare(st->db, &st->prune_select,
			     "SELECT ts_ms, first_rowid, last_rowid FROM ticks WHERE ts_ms < ? "
			     "ORDER BY ts_ms LIMIT ?");
	if (rc == SQLITE_OK)
		rc = prepare(st->db, &st->prune_samples,
			     "DELETE FROM samples WHERE rowid BETWEEN ? AND ?");
	if (rc == SQLITE_OK)
		rc = prepare(st->db, &st->prune_tick, "DELETE FROM ticks WHERE ts_ms = ?");
	if (rc == SQLITE_OK)
		rc = prepare(st->db, &st->event_insert,
			     "INSERT INTO events (kind, subject, start_ms, end_ms, peak_score, "
			     "evidence) VALUES (?, ?, ?, ?, ?, ?)");
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
	rc = mode == STORE_READ_WRITE ? store_prepare(st) : SQLITE_OK;
	if (rc != SQLITE_OK) {
		r = fail(st->db, rc, err, err_len, path);
		goto fail;
	}
	*ret = st;
	return 0;
fail:
	store_close(st);
	return r;
}

static void store_finalize(struct store *st)
{
	sqlite3_stmt *stmts[] = { st->begin,	     st->commit,	st->rollback,
				  st->series_insert, st->series_select, st->sample_insert,
				  st->tick_insert,   st->prune_select,	st->prune_samples,
				  st->prune_tick,    st->event_insert,	st->event_update,
				  st->event_prune };

	for (size_t i = 0; i < sizeof(stmts) / sizeof(stmts[0]); i++)
		sqlite3_finalize(stmts[i]);
}

void store_close(struct store *st)
{
	if (!st)
		return;
	store_finalize(st);
	(void)sqlite3_close(st->db);
	free(st);
}

sqlite3 *store_db(struct store *st)
{
	return st->db;
}

static int step_done(sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);

	(void)sqlite3_reset(s);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

struct write_ctx {
	struct store *st;
	int64_t ts_ms;
	int64_t first_rowid, last_rowid;
	int64_t n;
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

static int write_one(struct series *s, void *arg)
{
	struct write_ctx *w = arg;
	sqlite3_stmt *ins = w->st->sample_insert;
	int rc = SQLITE_OK;

	if (s->store_id == 0)
		rc = series_id(w->st, s, &s->store_id);
	if (rc != SQLITE_OK) {
		w->rc = rc;
		return 1;
	}
	sqlite3_bind_int64(ins, 1, w->ts_ms);
	sqlite3_bind_int64(ins, 2, s->store_id);
	sqlite3_bind_double(ins, 3, s->value);
	if (s->type != METRIC_GAUGE && s->has_rate)
		sqlite3_bind_double(ins, 4, s->rate);
	else
		sqlite3_bind_null(ins, 4);
	rc = step_done(ins);
	if (rc != SQLITE_OK) {
		w->rc = rc;
		return 1;
	}
	w->last_rowid = sqlite3_last_insert_rowid(w->st->db);
	if (w->n++ == 0)
		w->first_rowid = w->last_rowid;
	return 0;
}

int store_write_tick(struct store *st, struct registry *reg, double duration_s, char *err,
		     size_t err_len)
{
	struct write_ctx w = { .st = st, .ts_ms = registry_now(reg) };
	int rc = step_done(st->begin);

	if (rc == SQLITE_OK) {
		(void)registry_foreach(reg, write_one, &w);
		rc = w.rc;
	}
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(st->tick_insert, 1, w.ts_ms);
		if (w.n) {
			sqlite3_bind_int64(st->tick_insert, 2, w.first_rowid);
			sqlite3_bind_int64(st->tick_insert, 3, w.last_rowid);
		} else {
			sqlite3_bind_null(st->tick_insert, 2);
			sqlite3_bind_null(st->tick_insert, 3);
		}
		sqlite3_bind_int64(st->tick_insert, 4, w.n);
		sqlite3_bind_double(st->tick_insert, 5, duration_s);
		rc = step_done(st->tick_insert);
	}
	if (rc == SQLITE_OK)
		rc = step_done(st->commit);
	if (rc == SQLITE_OK)
		return 0;
	(void)fail(st->db, rc, err, err_len, "unable to write the tick");
	if (!sqlite3_get_autocommit(st->db))
		(void)step_done(st->rollback);
	registry_forget_store_ids(reg);
	return sqlite_errno(rc);
}

int store_prune(struct store *st, int64_t before_ms, unsigned max_ticks)
{
	int64_t ts[64], lo[64], hi[64];
	int has[64];
	unsigned n = 0;
	int rc;

	if (max_ticks > 64)
		max_ticks = 64;
	sqlite3_bind_int64(st->prune_select, 1, before_ms);
	sqlite3_bind_int64(st->prune_select, 2, max_ticks);
	while ((rc = sqlite3_step(st->prune_select)) == SQLITE_ROW && n < max_ticks) {
		ts[n] = sqlite3_column_int64(st->prune_select, 0);
		has[n] = sqlite3_column_type(st->prune_select, 1) != SQLITE_NULL;
		lo[n] = sqlite3_column_int64(st->prune_select, 1);
		hi[n] = sqlite3_column_int64(st->prune_select, 2);
		n++;
	}
	(void)sqlite3_reset(st->prune_select);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		return sqlite_errno(rc);
	if (n == 0)
		return 0;
	rc = step_done(st->begin);
	for (unsigned i = 0; rc == SQLITE_OK && i < n; i++) {
		if (has[i]) {
			sqlite3_bind_int64(st->prune_samples, 1, lo[i]);
			sqlite3_bind_int64(st->prune_samples, 2, hi[i]);
			rc = step_done(st->prune_samples);
		}
		if (rc == SQLITE_OK) {
			sqlite3_bind_int64(st->prune_tick, 1, ts[i]);
			rc = step_done(st->prune_tick);
		}
	}
	if (rc == SQLITE_OK)
		rc = step_done(st->commit);
	if (rc != SQLITE_OK) {
		if (!sqlite3_get_autocommit(st->db))
			(void)step_done(st->rollback);
		return sqlite_errno(rc);
	}
	return (int)n;
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
	int rc;

	sqlite3_bind_int64(st->event_prune, 1, before_ms);
	sqlite3_bind_int64(st->event_prune, 2, max_events);
	rc = step_done(st->event_prune);
	return rc == SQLITE_OK ? sqlite3_changes(st->db) : sqlite_errno(rc);
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
	}
	rc = step_done(s);
	if (rc != SQLITE_OK)
		return sqlite_errno(rc);
	if (!e->store_id)
		e->store_id = sqlite3_last_insert_rowid(st->db);
	return 0;
}
