/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/store/store.h"
#include "agent/detect/events.h"
#include "agent/store/checkpoint.h"
#include "agent/store/ident.h"
#include "agent/store/schema.h"
#include "agent/store/stage.h"
#include "agent/store/store_pack.h"

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
	char *path;
	/* the writer's files: the database (lock_fd's), its -wal and -shm */
	struct file_id {
		dev_t dev;
		ino_t ino;
	} file, wal, shm;
	uint64_t corrupt_stage; /* staged records skipped as corrupt */
	/* the newest staged tick checked, if any: its corrupt records are counted */
	int64_t stage_checked;
	int stage_checked_any;
};

const char *const store_corrupt_kind_names[STORE_CORRUPT_KINDS] = { "stage", "block", "rollup" };

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

/*
 * Why a call on db failed with rc: SQLite's message if db's last error is
 * that one (after a failure of fabmon's own it would be "not an error"),
 * with the system's reason where SQLite keeps one (a failed open or I/O).
 */
static void sqlite_why(sqlite3 *db, int rc, char *buf, size_t len)
{
	int ours = db && (sqlite3_errcode(db) & 0xff) == (rc & 0xff);
	int sys = ours ? sqlite3_system_errno(db) : 0;

	if (sys && ((rc & 0xff) == SQLITE_CANTOPEN || (rc & 0xff) == SQLITE_IOERR))
		snprintf(buf, len, "%s (%s)", sqlite3_errmsg(db), strerror(sys));
	else
		snprintf(buf, len, "%s", ours ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
}

/* "what 'path': why" in err; returns rc as -errno. */
static int fail(sqlite3 *db, int rc, char *err, size_t err_len, const char *what, const char *path)
{
	char why[256];

	sqlite_why(db, rc, why, sizeof(why));
	snprintf(err, err_len, "%s '%s': %s", what, path, why);
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
		return fail(db, rc, err, err_len, "unable to read", path);
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

static int store_migrate(sqlite3 *db, const char *path, int64_t from, char *err, size_t err_len)
{
	char pragma[64];
	int rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);

	for (unsigned i = 0; rc == SQLITE_OK && i < schema_migration_count; i++) {
		if (schema_migrations[i].version <= from)
			continue;
		rc = sqlite3_exec(db, schema_migrations[i].sql, NULL, NULL, NULL);
		if (rc == SQLITE_OK) {
			snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %u",
				 schema_migrations[i].version);
			rc = sqlite3_exec(db, pragma, NULL, NULL, NULL);
		}
	}
	if (rc == SQLITE_OK && from == 0) {
		snprintf(pragma, sizeof(pragma), "PRAGMA application_id = %d",
			 STORE_APPLICATION_ID);
		rc = sqlite3_exec(db, pragma, NULL, NULL, NULL);
	}
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(
			db,
			"INSERT OR REPLACE INTO meta VALUES ('writer_version', '" FABMON_VERSION
			"')",
			NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		return 0;
	(void)fail(db, rc, err, err_len, "unable to migrate the schema of", path);
	(void)sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return sqlite_errno(rc);
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
 * Opens the file at st->path for the writer, if it is there, and keeps the
 * descriptor: the file's identity, and the one-writer lock. It stays open
 * until after sqlite3_close, as closing any descriptor of the file drops the
 * process's POSIX locks, SQLite's included
 * (https://www.sqlite.org/howtocorrupt.html, 2.2.1). Non-blocking, so that
 * a FIFO at the path cannot stop the agent.
 */
static int store_hold(struct store *st, char *err, size_t err_len)
{
	struct stat s;
	int e;

	st->lock_fd = open(st->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (st->lock_fd < 0 && errno == ENOENT)
		return 0;
	if (st->lock_fd < 0 || fstat(st->lock_fd, &s) < 0) {
		e = errno;
		snprintf(err, err_len, "unable to open '%s': %s", st->path, strerror(e));
		return -e;
	}
	if (!S_ISREG(s.st_mode)) {
		snprintf(err, err_len, "'%s' is not a regular file: not a fabmon database",
			 st->path);
		return -EMEDIUMTYPE;
	}
	st->file = (struct file_id){ s.st_dev, s.st_ino };
	return 0;
}

/*
 * One writer a file: a second agent, or `replay --db`, on it would pack the
 * same series from two memories. flock(2) does not touch SQLite's POSIX
 * locks.
 */
static int store_lock(struct store *st, char *err, size_t err_len)
{
	int e = flock(st->lock_fd, LOCK_EX | LOCK_NB) < 0 ? errno : 0;

	if (!e)
		return 0;
	if (e == EWOULDBLOCK) {
		snprintf(err, err_len,
			 "'%s' is being written by another fabmon (an agent or replay --db): a "
			 "database has one writer",
			 st->path);
		return -EBUSY;
	}
	snprintf(err, err_len, "unable to lock '%s': %s", st->path, strerror(e));
	return -e;
}

static int sqlite_open(struct store *st, const char *name, int flags, char *err, size_t err_len)
{
	int rc = sqlite3_open_v2(name, &st->db, flags | SQLITE_OPEN_NOMUTEX, NULL);
	int r;

	if (rc != SQLITE_OK) {
		r = fail(st->db, rc, err, err_len, "unable to open database", st->path);
		if (r == -ENOENT || r == -EIO)
			r = access(st->path, F_OK) == 0 ? -EACCES : -ENOENT;
		return r;
	}
	(void)sqlite3_extended_result_codes(st->db, 1);
	(void)sqlite3_busy_timeout(st->db, 5000);
	return 0;
}

/* The identity of path's side file (PATH-suffix), zero if it is absent. */
static struct file_id side_id(const char *path, const char *suffix)
{
	char side[PATH_MAX];
	struct stat s;

	if (snprintf(side, sizeof(side), "%s%s", path, suffix) >= (int)sizeof(side) ||
	    stat(side, &s) < 0)
		return (struct file_id){ 0, 0 };
	return (struct file_id){ s.st_dev, s.st_ino };
}

static int same_file(struct file_id a, struct file_id b)
{
	return a.ino && a.dev == b.dev && a.ino == b.ino;
}

/*
 * The writer: checks the file and the WAL beside it are fabmon's before
 * SQLite replays one into the other, then locks the file (nothing else's is
 * locked), lets SQLite open it (creating it if absent), puts it in WAL mode
 * and migrates it.
 */
static int store_open_writer(struct store *st, int64_t *version, char *err, size_t err_len)
{
	int r = store_hold(st, err, err_len), rc;

	if (r == 0)
		r = store_ident_check(st->lock_fd, st->path, err, err_len);
	if (r == 0 && st->lock_fd >= 0)
		r = store_lock(st, err, err_len);
	if (r == 0)
		r = sqlite_open(st, st->path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, err,
				err_len);
	/* SQLite made it just now */
	if (r == 0 && st->lock_fd < 0) {
		r = store_hold(st, err, err_len);
		if (r == 0)
			r = st->lock_fd < 0 ? -ENOENT : store_lock(st, err, err_len);
	}
	/* SQLite opens a file it may not write read-only, and says so only at
	 * the first write */
	if (r == 0 && sqlite3_db_readonly(st->db, "main") == 1) {
		r = access(st->path, W_OK) < 0 ? -errno : -EROFS;
		snprintf(err, err_len, "unable to write '%s': %s", st->path, strerror(-r));
	}
	if (r == 0)
		r = store_check(st->db, st->path, version, err, err_len);
	if (r < 0)
		return r;
	/* WAL lets the CLI read while the agent writes; NORMAL loses at most
	 * the last transactions on power loss, never on a process crash
	 * (https://www.sqlite.org/pragma.html#pragma_synchronous). */
	/* A page cache of 512 KiB, not SQLite's 2 MiB: the writer's pages are
	 * appended once and read back at most a minute later, which the
	 * kernel's page cache serves; at 9000 series (a thousand mesh peers)
	 * the default filled to 2 MiB to save some 50 reads a tick. */
	rc = sqlite3_exec(st->db,
			  "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; "
			  "PRAGMA cache_size = -512;",
			  NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return fail(st->db, rc, err, err_len, "unable to set WAL mode on", st->path);
	r = store_migrate(st->db, st->path, *version, err, err_len);
	st->wal = side_id(st->path, "-wal");
	st->shm = side_id(st->path, "-shm");
	return r;
}

/* An SQLite URI for path (https://www.sqlite.org/uri.html): what URIs
 * reserve percent-encoded, and a '/' after a '/' so that no authority is
 * read. NULL if out of memory. */
static char *store_uri(const char *path, const char *query)
{
	char *uri = malloc(strlen("file:") + 3 * strlen(path) + strlen(query) + 2);
	char *o = uri;

	if (!uri)
		return NULL;
	o += sprintf(o, "file:");
	for (const char *p = path; *p; p++) {
		unsigned char c = (unsigned char)*p;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    strchr("._-~", c) || (c == '/' && (p == path || p[-1] != '/')))
			*o++ = (char)c;
		else
			o += sprintf(o, "%%%02X", c);
	}
	sprintf(o, "?%s", query);
	return uri;
}

/* 0 if the user may create files in path's directory, or the errno why not. */
static int dir_writable(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];

	if (!slash)
		return access(".", W_OK) < 0 ? errno : 0;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path + (slash == path)), path);
	return access(dir, W_OK) < 0 ? errno : 0;
}

/*
 * A reader. "mode=ro" sees every committed tick, those still in the WAL
 * too, but needs PATH-shm, which SQLite creates if it is absent. Where it
 * cannot (read-only media, a directory the user may not write) and the WAL
 * holds no transaction, "immutable=1" reads the file alone, which then holds
 * everything; when the WAL holds some, immutable would not see them, and
 * the reader is refused.
 */
static int store_open_reader(struct store *st, int64_t *version, char *err, size_t err_len)
{
	char why[256], *uri;
	size_t len;
	long commits;
	int r, e;

	if (access(st->path, F_OK) < 0) {
		e = errno;
		snprintf(err, err_len, "unable to open database '%s': %s", st->path, strerror(e));
		return -e;
	}
	r = sqlite_open(st, st->path, SQLITE_OPEN_READONLY, err, err_len);
	/* the first read is where SQLite opens or makes PATH-shm */
	if (r == 0)
		r = store_check(st->db, st->path, version, err, err_len);
	if (r != -ENOENT && r != -EROFS && r != -EACCES)
		return r;
	commits = store_ident_wal_commits(st->path);
	if (commits < 0)
		return r;
	if (commits > 0) {
		/* SQLite's errno is that of its last try, to open it read-only */
		e = dir_writable(st->path);
		snprintf(why, sizeof(why), "%s", e ? strerror(e) : err);
		snprintf(err, err_len,
			 "unable to read '%s' with mode=ro: it needs '%s-shm' to read the %ld "
			 "transaction(s) in '%s-wal' and cannot make it here (%s), and immutable=1 "
			 "would not see them: copy the database with its -wal to a writable "
			 "directory to read it",
			 st->path, st->path, commits, st->path, why);
		return r;
	}
	sqlite3_close(st->db);
	st->db = NULL;
	uri = store_uri(st->path, "immutable=1");
	if (!uri)
		return -ENOMEM;
	r = sqlite_open(st, uri, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, err, err_len);
	free(uri);
	if (r == 0)
		r = store_check(st->db, st->path, version, err, err_len);
	if (r < 0) {
		len = strlen(err);
		snprintf(err + len, err_len - len,
			 " (read with immutable=1, as '%s-shm' cannot be made)", st->path);
	}
	return r;
}

int store_open(const char *path, enum store_mode mode, struct store **ret, char *err,
	       size_t err_len)
{
	struct store *st = calloc(1, sizeof(*st));
	int64_t version = 0;
	int rc, r;

	if (!st || !(st->path = strdup(path))) {
		snprintf(err, err_len, "unable to open database '%s': %s", path, strerror(ENOMEM));
		free(st);
		return -ENOMEM;
	}
	st->lock_fd = -1;
	r = mode == STORE_READ_WRITE ? store_open_writer(st, &version, err, err_len)
				     : store_open_reader(st, &version, err, err_len);
	if (r < 0)
		goto fail;
	if (mode == STORE_READ_ONLY && version == 0) {
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
		r = fail(st->db, rc, err, err_len, "unable to set up", path);
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

/* An id some series has: a stage record's id sizes pack's table by series. */
static int stage_id_ok(int64_t id, int64_t max_id)
{
	return id >= 1 && id <= max_id;
}

/*
 * Record i of a staged tick of n records is as a writer makes them: a
 * series' id, in order between its neighbours whose ids are (a flipped id
 * still in range but out of place takes a good neighbour with it: which of
 * the two is wrong cannot be told), known flags.
 */
static int stage_rec_ok(const void *blob, size_t n, size_t i, int64_t max_id,
			const struct stage_rec *r)
{
	struct stage_rec near;

	if (!stage_id_ok(r->id, max_id) || (r->flags & ~(unsigned)(STAGE_COUNTER | STAGE_HAS_RATE)))
		return 0;
	if (i > 0) {
		stage_get(blob, i - 1, &near);
		if (stage_id_ok(near.id, max_id) && near.id >= r->id)
			return 0;
	}
	if (i + 1 < n) {
		stage_get(blob, i + 1, &near);
		if (stage_id_ok(near.id, max_id) && near.id <= r->id)
			return 0;
	}
	return 1;
}

/* Adds the staged ticks to pack's memory, as after a crash or a rolled-back
 * tick, inside the caller's transaction. A tick that is not a stage blob,
 * and a record that stage_rec_ok refuses, is skipped, and counted the first
 * time (after a rolled-back tick the stage is added again). */
static int store_replay_stage(struct store *st)
{
	sqlite3_stmt *q = NULL;
	int64_t max_id = 0;
	int rc = query_int(st->db, "SELECT coalesce(max(id), 0) FROM series", &max_id);

	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(st->db, "SELECT ts_ms, data FROM stage ORDER BY ts_ms", -1,
					&q, NULL);
	while (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		int64_t ts = sqlite3_column_int64(q, 0);
		const void *blob = sqlite3_column_blob(q, 1);
		long n = stage_count(blob, (size_t)sqlite3_column_bytes(q, 1));
		int first = !st->stage_checked_any || ts > st->stage_checked;
		struct stage_rec r;

		if (n < 0)
			st->corrupt_stage += first;
		for (long i = 0; rc == SQLITE_ROW && i < n; i++) {
			stage_get(blob, (size_t)i, &r);
			if (!stage_rec_ok(blob, (size_t)n, (size_t)i, max_id, &r))
				st->corrupt_stage += first;
			else if (store_pack_add(st->pack, &r, ts) != SQLITE_OK)
				rc = SQLITE_NOMEM;
		}
		if (first) {
			st->stage_checked = ts;
			st->stage_checked_any = 1;
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

/* Unlinks PATH-suffix if it is still the file id names. */
static void side_unlink(const char *path, const char *suffix, struct file_id id)
{
	char side[PATH_MAX];

	if (same_file(id, side_id(path, suffix)) &&
	    snprintf(side, sizeof(side), "%s%s", path, suffix) < (int)sizeof(side))
		(void)unlink(side);
}

void store_close(struct store *st)
{
	int moved, wal_ours, shm_ours, copied = 0, keep = 1;

	if (!st)
		return;
	if (st->pack)
		store_pack_close(st);
	store_checkpointer_stop(st->ckpt);
	store_pack_free(st->pack);
	store_finalize(st);
	/*
	 * The last connection to close copies PATH-wal into the file and
	 * deletes it and PATH-shm by name, unless the file has moved (then it
	 * does neither): a moved file is completed here and its side files,
	 * if still ours, removed, so that no WAL of ours is left beside
	 * whatever is at the path now; side files someone else put there
	 * stay. A WAL not all copied (a reader held it back) stays too: it is
	 * the moved file's.
	 */
	moved = st->pack && !same_file(st->file, side_id(st->path, ""));
	wal_ours = same_file(st->wal, side_id(st->path, "-wal"));
	shm_ours = same_file(st->shm, side_id(st->path, "-shm"));
	if (moved)
		copied = sqlite3_wal_checkpoint_v2(st->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL,
						   NULL) == SQLITE_OK;
	else if (st->pack && !(wal_ours && shm_ours))
		(void)sqlite3_file_control(st->db, "main", SQLITE_FCNTL_PERSIST_WAL, &keep);
	(void)sqlite3_close(st->db);
	if (copied) {
		side_unlink(st->path, "-wal", st->wal);
		side_unlink(st->path, "-shm", st->shm);
	}
	if (st->lock_fd >= 0)
		close(st->lock_fd);
	free(st->path);
	free(st->recs);
	free(st->blob);
	free(st);
}

int store_check_path(struct store *st, char *err, size_t err_len)
{
	struct stat now, held;
	int r = stat(st->path, &now) < 0 ? -errno : 0;
	int linked;

	if (r == 0 && same_file(st->file, (struct file_id){ now.st_dev, now.st_ino }))
		return 0;
	/* a path it cannot see through (a directory's permissions) has not
	 * moved as far as it knows */
	if (r < 0 && r != -ENOENT)
		return 0;
	linked = fstat(st->lock_fd, &held) < 0 || held.st_nlink > 0;
	snprintf(err, err_len, "'%s' was %s while the agent wrote it: %s", st->path,
		 r == 0	  ? "replaced by another file"
		 : linked ? "moved away"
			  : "deleted",
		 linked ? "the file written until now is closed, complete, where it is now"
			: "the ticks it held are lost with it");
	return r < 0 ? r : -ESTALE;
}

uint64_t store_corrupt_records(const struct store *st, enum store_corrupt_kind kind)
{
	if (kind == STORE_CORRUPT_STAGE)
		return st->corrupt_stage;
	return st->pack ? store_pack_corrupt(st->pack, kind) : 0;
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

/* A histogram's _bucket series: one a bound, for Prometheus' quantiles. */
static int is_bucket(const struct series *s)
{
	size_t n = strlen(s->name);

	return s->type == METRIC_HISTOGRAM && n > 7 && strcmp(s->name + n - 7, "_bucket") == 0;
}

/*
 * One series of the tick into st->recs. A histogram's buckets are not kept:
 * its _sum and _count give the mean over any span, and the buckets, a dozen
 * series or more for each labelled histogram (16 a mesh peer), cost the
 * store more memory than everything else it holds (an open block and rollup
 * hour each); Prometheus keeps them for the quantiles.
 */
static int collect_one(struct series *s, void *arg)
{
	struct write_ctx *w = arg;
	struct store *st = w->st;
	struct stage_rec *r;
	int rc = SQLITE_OK;

	if (is_bucket(s))
		return 0;
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
	(void)fail(st->db, rc, err, err_len, "unable to write the tick to", st->path);
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
