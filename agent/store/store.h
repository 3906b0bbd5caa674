/* SPDX-License-Identifier: MIT */
#ifndef FABMON_STORE_H
#define FABMON_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/registry/registry.h"

/*
 * The local history: one SQLite file in WAL mode, written once per tick in a
 * single transaction. The schema is versioned with PRAGMA user_version and
 * migrated on open; a file from a newer fabmon, or one that is not fabmon's,
 * is refused and left untouched.
 */

struct store;

enum store_mode { STORE_READ_WRITE, STORE_READ_ONLY };

/* PRAGMA application_id of a fabmon database: "FBMN". */
#define STORE_APPLICATION_ID 0x46424d4e

/*
 * Opens (read-write: creating and migrating) the database at path. Returns 0
 * and sets *ret, or -errno with a message naming path and the reason in err:
 * -ENOENT (read-only and absent), -EBUSY (read-write, and another process
 * writes it), -EPROTONOSUPPORT (schema newer than this program), -EMEDIUMTYPE
 * (not a fabmon database, not a regular file, or, read-write, a WAL beside
 * it that is not its own: both left untouched, agent/store/ident.h), -EACCES/
 * -EROFS/-ENOSPC/-EIO (cannot be opened or written). A reader that cannot
 * make PATH-shm (read-only media) reads the file as immutable if its WAL
 * holds nothing, and is refused if it holds ticks it would not see.
 */
int store_open(const char *path, enum store_mode mode, struct store **ret, char *err,
	       size_t err_len);

/* Closes the database (checkpointing the WAL), read-write ones after
 * packing what is open. Accepts NULL. */
void store_close(struct store *st);

/* The schema version this program writes. */
unsigned store_schema_version(void);

/*
 * Appends the registry's current tick (every series reported in it) and a
 * ticks row, in one transaction: the samples are staged as one row and
 * packed into blocks and 1-minute rollups as they fill (agent/store/store_pack.h),
 * at most a bounded number a tick. On failure the transaction is rolled back,
 * the registry's store ids are forgotten, and -errno is returned (-ENOSPC for
 * a full disk, -EROFS/-EACCES for a read-only file, -EIO otherwise), with the
 * reason in err. Nothing committed before is affected.
 */
int store_write_tick(struct store *st, struct registry *reg, double duration_s, char *err,
		     size_t err_len);

/*
 * Retention of raw samples: deletes at most max_rows packed blocks that end
 * before before_ms, oldest first, and as many ticks rows, so the work is
 * bounded per call. Returns the rows deleted or -errno.
 */
int store_prune(struct store *st, int64_t before_ms, unsigned max_rows);

/* Retention of 1-minute rollups: at most max_rows hour rows whose hour is
 * all before before_ms. Returns the rows deleted or -errno. */
int store_prune_rollups(struct store *st, int64_t before_ms, unsigned max_rows);

/*
 * For the size cap: deletes the max_rows oldest packed blocks whatever their
 * age, or when none is left, the oldest rollup hours. The newest samples,
 * still staged, are never deleted. Returns the rows deleted (0: nothing left
 * to delete) or -errno.
 */
int store_shed(struct store *st, unsigned max_rows);

/*
 * Deletes at most max_events events that ended before before_ms, oldest
 * first (an open event is kept whatever its age). Returns the number
 * deleted or -errno.
 */
int store_prune_events(struct store *st, int64_t before_ms, unsigned max_events);

/* Bytes of the file in use: its pages less the free ones SQLite will reuse
 * (a file never shrinks without VACUUM; past a cap it stops growing).
 * -errno on a read error. */
int64_t store_used_bytes(struct store *st);

struct event;

/*
 * Writes an event: a new row the first time (setting e->store_id), then its
 * end and peak as they change. Returns 0 or -errno; on failure the event is
 * written again at its next change.
 */
int store_save_event(struct store *st, struct event *e);

/*
 * For a writer: whether its path still names the file it writes (a stat).
 * Returns 0 if so (or if stat fails otherwise), -ENOENT if nothing is there
 * any more, -ESTALE if another file is; with what happened in err.
 */
int store_check_path(struct store *st, char *err, size_t err_len);

/* A record read back from the file: a staged tick's sample, a packed
 * block, an hour of rollups ("stage", "block", "rollup"). */
enum store_corrupt_kind {
	STORE_CORRUPT_STAGE,
	STORE_CORRUPT_BLOCK,
	STORE_CORRUPT_ROLLUP,
	STORE_CORRUPT_KINDS
};

extern const char *const store_corrupt_kind_names[STORE_CORRUPT_KINDS];

/*
 * Records of kind the writer read back since it opened that were not what
 * was written: a series id no series has, ids out of order, unknown flags, a
 * staged tick of the wrong length; a block or rollup row whose checksum
 * fails, or whose stream does not decode. Each was skipped, never trusted,
 * and counted once; the rest of the file is used as it is.
 */
uint64_t store_corrupt_records(const struct store *st, enum store_corrupt_kind kind);

/* The sqlite3 handle, for read queries by the CLI and the tests. */
struct sqlite3 *store_db(struct store *st);

#endif
