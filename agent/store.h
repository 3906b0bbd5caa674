/* SPDX-License-Identifier: MIT */
#ifndef FABMON_STORE_H
#define FABMON_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "registry.h"

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
 * and sets *ret, or -errno with a message in err: -ENOENT (read-only and
 * absent), -EPROTONOSUPPORT (schema newer than this program), -EMEDIUMTYPE
 * (not a fabmon database), -EACCES/-EROFS/-ENOSPC/-EIO (cannot be opened or
 * written).
 */
int store_open(const char *path, enum store_mode mode, struct store **ret, char *err,
	       size_t err_len);

/* Closes the database (checkpointing the WAL). Accepts NULL. */
void store_close(struct store *st);

/* The schema version this program writes. */
unsigned store_schema_version(void);

/*
 * Appends the registry's current tick (every series reported in it) and a
 * ticks row, in one transaction. On failure the transaction is rolled back,
 * the registry's store ids are forgotten, and -errno is returned (-ENOSPC for
 * a full disk, -EROFS/-EACCES for a read-only file, -EIO otherwise), with the
 * reason in err. Nothing committed before is affected.
 */
int store_write_tick(struct store *st, struct registry *reg, double duration_s, char *err,
		     size_t err_len);

/*
 * Deletes the samples of at most max_ticks ticks older than before_ms, oldest
 * first, so that retention is bounded per call. Returns the number of ticks
 * deleted or -errno.
 */
int store_prune(struct store *st, int64_t before_ms, unsigned max_ticks);

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

/* The sqlite3 handle, for read queries by the CLI and the tests. */
struct sqlite3 *store_db(struct store *st);

#endif
