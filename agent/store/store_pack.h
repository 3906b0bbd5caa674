/* SPDX-License-Identifier: MIT */
#ifndef FABMON_STORE_PACK_H
#define FABMON_STORE_PACK_H

#include <sqlite3.h>
#include <stdint.h>

#include "agent/store/stage.h"
#include "agent/store/store.h"

/*
 * The store's packing: each series' newest samples in an open block
 * (agent/store/pack.h), closed into the blocks table when full; and its 1-minute
 * rollups (samples, min, max, sum, last of the rate for a counter, of the
 * value for a gauge) one packed row an hour in the rollups table.
 *
 * The open block lives in memory, and the open rollup hour until its row is
 * written (read back for its next minute). Their samples stay in the stage table
 * until a block or rollup row holds them: store_pack_frontier says which
 * staged ticks may go. After a crash the store adds the staged ticks again
 * and each series resumes from its newest block and rollup row.
 *
 * Every call that writes runs inside the store's transaction; the return
 * values are SQLite result codes. After a rolled-back transaction,
 * store_pack_forget drops what memory holds, and the store adds the staged
 * ticks again.
 */

/*
 * The checksum of a blocks or rollups row (the crc column, schema version
 * 5): CRC-32C of the columns that say whose rows these are and where they
 * lie, each as 64 little-endian bits, then of data. A row of an older file
 * has none, and is read unchecked. first_rate is NULL for none.
 */
uint32_t store_pack_block_crc(int64_t series_id, int64_t start_ms, int64_t end_ms, int64_t n,
			      const double *first_rate, const void *data, size_t len);
uint32_t store_pack_rollup_crc(int64_t series_id, int64_t hour_ms, int64_t n, const void *data,
			       size_t len);

/* Column col of q's row (a crc column) is crc, or NULL: a row from before
 * checksums, taken as it is. */
int store_pack_crc_ok(sqlite3_stmt *q, int col, uint32_t crc);

/* Samples in a block (the first block of a series closes earlier, so that
 * the series of a tick do not all close at once; past 6000 series blocks
 * are shorter, so that the stage stays within 32 MiB). */
#define PACK_BLOCK_ROWS 256
/* A block closes once its data reach this many bytes. Every series holds
 * its open block in memory: at 1 KiB a noisy one (a float sum, 7 bytes a
 * row) closes after some 150 rows, and the row's own cost in the table
 * (some 60 bytes with its index entry) stays near 5 %. */
#define PACK_BLOCK_BYTES 1024

struct store_pack;

int store_pack_new(sqlite3 *db, struct store_pack **ret);
void store_pack_free(struct store_pack *p);

/* Adds a sample at ts_ms of a series the series table holds (the store
 * checks an id read back from the stage before it comes here). One already
 * packed (a staged tick added again) or at the time of the series' newest
 * is ignored; one before it (the clock stepped back) starts a block, and
 * counts in no rollup minute that is already summed. */
int store_pack_add(struct store_pack *p, const struct stage_rec *r, int64_t ts_ms);

/*
 * After a tick at now_ms: closes blocks that are due (full, a span over an
 * hour, or their series quiet for a minute) and writes rollup hours that
 * have new minutes, of each at most budget or an eighth of what was due at
 * the last tick, whichever is more, so that many series keep up.
 */
int store_pack_tick(struct store_pack *p, int64_t now_ms, unsigned budget);

/* Staged ticks before this time are all in blocks and rollup rows (as the
 * last store_pack_tick left them; before any, none). */
int64_t store_pack_frontier(const struct store_pack *p);

/* Writes every open block and rollup minute (a clean close). */
int store_pack_flush(struct store_pack *p);

/* Forgets every series; each resumes from the database when added again. */
void store_pack_forget(struct store_pack *p);

/*
 * Blocks or rollup rows (kind) that a series resuming from the database
 * found corrupt (a checksum or a decoding that fails) since p was made,
 * each counted once: the series resumes as if the row were not there.
 */
uint64_t store_pack_corrupt(const struct store_pack *p, enum store_corrupt_kind kind);

#endif
