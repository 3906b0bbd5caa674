/* SPDX-License-Identifier: MIT */
#ifndef FABMON_STORE_CHECKPOINT_H
#define FABMON_STORE_CHECKPOINT_H

#include <sqlite3.h>

/*
 * WAL checkpoints off the writer's thread. SQLite's automatic checkpoint
 * runs inside the commit that fills the WAL past 1000 pages, so that tick
 * pays for copying the pages and an fsync (p99 12 ms, up to 90 ms, against
 * a median of 0.3 ms: tests/bench/ingest.c). Instead the writer's commits
 * only note the WAL's size, and a thread of ours with its own connection
 * runs a PASSIVE checkpoint (it never waits for the writer or a reader)
 * once the WAL passes that size. The WAL starts over only after a checkpoint
 * that finished, which a writer committing back to back (replay --db) never
 * leaves time for: past 8000 pages that writer checkpoints itself.
 */

struct store_checkpointer;

/*
 * Opens a second connection to path, starts the thread and hooks writer's
 * commits (replacing its automatic checkpoints). Returns 0 or -errno; on
 * failure writer keeps its automatic checkpoints.
 */
int store_checkpointer_start(sqlite3 *writer, const char *path, struct store_checkpointer **ret);

/* Stops the thread and closes its connection (before the writer closes, so
 * that the writer's close makes the last checkpoint). Accepts NULL. */
void store_checkpointer_stop(struct store_checkpointer *c);

#endif
