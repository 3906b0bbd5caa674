/* SPDX-License-Identifier: MIT */
#include <endian.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agent/store/store_pack.h"
#include "agent/lib/crc32c.h"
#include "agent/store/pack.h"

#define MINUTE_MS 60000
#define HOUR_MS 3600000
/* A block closes past PACK_BLOCK_BYTES, or when it spans an hour (a series
 * sampled every 10 s would keep one open for 40 minutes). */
#define BLOCK_SPAN_MS HOUR_MS
/* The stage holds every series' open block: past this many bytes of it,
 * blocks get shorter (down to BLOCK_ROWS_MIN), so a host with 100000 series
 * does not stage 256 ticks of them (0.5 GiB). */
#define STAGE_BYTES (32 << 20)
#define BLOCK_ROWS_MIN 32
/* A series not seen for this long closes what it has open. */
#define QUIET_MS MINUTE_MS

/* Rollup columns. */
enum { R_N, R_MIN, R_MAX, R_SUM, R_LAST, R_COLS };

struct pseries {
	int64_t id;
	int counter;
	int64_t last_ms; /* the newest sample added */

	/* the open block */
	struct pack_writer raw;
	int64_t raw_start, raw_end, packed_until;
	double first_rate;
	int first_has_rate;
	unsigned target;

	/* the minute being summed and the open rollup hour */
	int64_t acc_min;
	unsigned acc_n;
	double acc[R_COLS];
	struct pack_writer roll;
	int64_t roll_hour, rolled_until, dirty_from;
	int dirty;
	/*
	 * Parked: the open hour is in its rollups row only, its writer freed
	 * once written, and read back (with the minute pending) when it is
	 * written again. An hour's row grows to 60 minutes of 5 values, 1.5 KB
	 * for a rate that varies by 1 %: a thousand mesh peers' four such
	 * series held up to 6 MB for what the database holds. Reading it back
	 * costs a row's select and decode a minute.
	 */
	int parked, pending;
	int64_t pend_min;
	double pend[R_COLS];
};

struct store_pack {
	sqlite3 *db;
	sqlite3_stmt *block_insert, *block_last, *roll_upsert, *roll_last;
	struct pseries **s; /* by series id */
	size_t cap, live;
	/* from the last tick's pass: blocks that were due, rollup hours with
	 * new minutes, and the frontier after its work */
	unsigned due, dirty;
	int64_t frontier;
	size_t cursor; /* where the budgeted work resumes */
	/* the rowids of the blocks and rollup rows found corrupt */
	struct corrupt_rows {
		int64_t *ids;
		size_t n, cap;
		uint64_t count;
	} corrupt[STORE_CORRUPT_KINDS];
	struct pack_rows rows; /* a rollup row read back */
};

static int64_t floor_to(int64_t ts, int64_t unit)
{
	int64_t q = ts / unit;

	return (ts % unit < 0 ? q - 1 : q) * unit;
}

/* CRC-32C of keys, each as 64 little-endian bits, then of len bytes of data. */
static uint32_t row_crc(const int64_t *keys, size_t nkeys, const void *data, size_t len)
{
	uint32_t crc = 0;

	for (size_t i = 0; i < nkeys; i++) {
		uint64_t k = htole64((uint64_t)keys[i]);

		crc = crc32c(crc, &k, sizeof(k));
	}
	return crc32c(crc, data, len);
}

uint32_t store_pack_block_crc(int64_t series_id, int64_t start_ms, int64_t end_ms, int64_t n,
			      const double *first_rate, const void *data, size_t len)
{
	/* the rate as SQLite gives it back: a NaN is stored as NULL, -0.0 as 0 */
	int has_rate = first_rate && !isnan(*first_rate);
	double rate = has_rate && *first_rate != 0 ? *first_rate : 0.0;
	int64_t keys[] = { series_id, start_ms, end_ms, n, has_rate, 0 };

	memcpy(&keys[5], &rate, sizeof(keys[5]));
	return row_crc(keys, sizeof(keys) / sizeof(keys[0]), data, len);
}

uint32_t store_pack_rollup_crc(int64_t series_id, int64_t hour_ms, int64_t n, const void *data,
			       size_t len)
{
	const int64_t keys[] = { series_id, hour_ms, n };

	return row_crc(keys, sizeof(keys) / sizeof(keys[0]), data, len);
}

int store_pack_new(sqlite3 *db, struct store_pack **ret)
{
	struct store_pack *p = calloc(1, sizeof(*p));
	int rc;

	if (!p)
		return SQLITE_NOMEM;
	p->db = db;
	p->frontier = INT64_MIN;
	rc = sqlite3_prepare_v3(
		db,
		"INSERT INTO blocks (series_id, start_ms, end_ms, n, first_rate, data, crc) "
		"VALUES (?, ?, ?, ?, ?, ?, ?)",
		-1, SQLITE_PREPARE_PERSISTENT, &p->block_insert, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v3(
			db,
			"SELECT start_ms, end_ms, n, first_rate, data, crc, id FROM blocks "
			"WHERE series_id = ? ORDER BY end_ms DESC",
			-1, SQLITE_PREPARE_PERSISTENT, &p->block_last, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v3(
			db,
			"INSERT INTO rollups (series_id, hour_ms, n, data, crc) VALUES (?, ?, ?, ?, ?) "
			"ON CONFLICT (series_id, hour_ms) DO UPDATE SET n = excluded.n, "
			"data = excluded.data, crc = excluded.crc",
			-1, SQLITE_PREPARE_PERSISTENT, &p->roll_upsert, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v3(
			db,
			"SELECT hour_ms, n, data, crc, id FROM rollups WHERE series_id = ? "
			"ORDER BY hour_ms DESC LIMIT 1",
			-1, SQLITE_PREPARE_PERSISTENT, &p->roll_last, NULL);
	if (rc != SQLITE_OK) {
		store_pack_free(p);
		return rc;
	}
	*ret = p;
	return SQLITE_OK;
}

/* Samples a block of this store's series takes. */
static unsigned block_rows(const struct store_pack *p)
{
	size_t rows = STAGE_BYTES / (STAGE_REC_BYTES * (p->live ? p->live : 1));

	if (rows > PACK_BLOCK_ROWS)
		return PACK_BLOCK_ROWS;
	return rows < BLOCK_ROWS_MIN ? BLOCK_ROWS_MIN : (unsigned)rows;
}

static void series_free(struct pseries *s)
{
	if (!s)
		return;
	pack_writer_reset(&s->raw);
	pack_writer_reset(&s->roll);
	free(s);
}

/* Frees the state of series id. */
static void series_drop(struct store_pack *p, int64_t id)
{
	if (!p->s[id])
		return;
	series_free(p->s[id]);
	p->s[id] = NULL;
	p->live--;
}

void store_pack_forget(struct store_pack *p)
{
	for (size_t i = 0; i < p->cap; i++)
		series_drop(p, (int64_t)i);
	p->due = p->dirty = 0;
	p->frontier = INT64_MIN;
}

void store_pack_free(struct store_pack *p)
{
	if (!p)
		return;
	store_pack_forget(p);
	free(p->s);
	sqlite3_finalize(p->block_insert);
	sqlite3_finalize(p->block_last);
	sqlite3_finalize(p->roll_upsert);
	sqlite3_finalize(p->roll_last);
	pack_rows_release(&p->rows);
	for (int k = 0; k < STORE_CORRUPT_KINDS; k++)
		free(p->corrupt[k].ids);
	free(p);
}

static int step_reset(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	(void)sqlite3_reset(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

int store_pack_crc_ok(sqlite3_stmt *q, int col, uint32_t crc)
{
	return sqlite3_column_type(q, col) == SQLITE_NULL || sqlite3_column_int64(q, col) == crc;
}

/* Counts the corrupt row rowid of kind the first time it is found: series
 * resume from the file again after every rolled-back tick. */
static void count_corrupt(struct store_pack *p, enum store_corrupt_kind kind, int64_t rowid)
{
	struct corrupt_rows *c = &p->corrupt[kind];
	int64_t *ids;

	for (size_t i = 0; i < c->n; i++)
		if (c->ids[i] == rowid)
			return;
	c->count++;
	if (c->n == c->cap) {
		ids = realloc(c->ids, (c->cap ? c->cap * 2 : 16) * sizeof(*ids));
		if (!ids)
			return; /* counted, and perhaps again */
		c->ids = ids;
		c->cap = c->cap ? c->cap * 2 : 16;
	}
	c->ids[c->n++] = rowid;
}

/* Loads the newest rollup hour of s into its writer, to go on adding to. A
 * corrupt row is counted and not loaded: the minutes to come write over it. */
static int resume_rollup(struct store_pack *p, struct pseries *s)
{
	sqlite3_stmt *q = p->roll_last;
	int rc, e = -EBADMSG;

	sqlite3_bind_int64(q, 1, s->id);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		const void *data = sqlite3_column_blob(q, 2);
		size_t len = (size_t)sqlite3_column_bytes(q, 2);
		int64_t n = sqlite3_column_int64(q, 1);

		s->roll_hour = sqlite3_column_int64(q, 0);
		if (store_pack_crc_ok(q, 3,
				      store_pack_rollup_crc(s->id, s->roll_hour, n, data, len)))
			e = pack_read_all(data, len, R_COLS, (unsigned)n, s->roll_hour,
					  s->roll_hour + HOUR_MS - 1, &p->rows);
		for (size_t i = 0; !e && i < p->rows.n; i++)
			e = pack_append(&s->roll, p->rows.ts[i], p->rows.vals + i * R_COLS);
		if (e == -EBADMSG)
			count_corrupt(p, STORE_CORRUPT_ROLLUP, sqlite3_column_int64(q, 4));
		rc = e == -ENOMEM ? SQLITE_NOMEM : SQLITE_DONE;
		if (s->roll.n)
			s->rolled_until = s->roll.ts + MINUTE_MS;
	}
	(void)sqlite3_reset(q);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Where s's newest block ends: its blocks newest first, skipping (and
 * counting) corrupt ones, so that a flipped end_ms cannot hide what comes. */
static int resume_block(struct store_pack *p, struct pseries *s)
{
	sqlite3_stmt *q = p->block_last;
	int rc;

	sqlite3_bind_int64(q, 1, s->id);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		double rate = sqlite3_column_double(q, 3);
		const void *data = sqlite3_column_blob(q, 4);
		uint32_t crc = store_pack_block_crc(
			s->id, sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1),
			sqlite3_column_int64(q, 2),
			sqlite3_column_type(q, 3) == SQLITE_NULL ? NULL : &rate, data,
			(size_t)sqlite3_column_bytes(q, 4));

		if (store_pack_crc_ok(q, 5, crc)) {
			s->packed_until = sqlite3_column_int64(q, 1);
			break;
		}
		count_corrupt(p, STORE_CORRUPT_BLOCK, sqlite3_column_int64(q, 6));
	}
	(void)sqlite3_reset(q);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* The state of series id, resumed from the database the first time. */
static int series_get(struct store_pack *p, int64_t id, int counter, struct pseries **ret)
{
	struct pseries *s;
	int rc;

	if (id < 0)
		return SQLITE_MISUSE;
	if ((size_t)id >= p->cap) {
		size_t cap = p->cap ? p->cap : 64;
		struct pseries **n;

		while (cap <= (size_t)id)
			cap *= 2;
		n = realloc(p->s, cap * sizeof(*n));
		if (!n)
			return SQLITE_NOMEM;
		memset(n + p->cap, 0, (cap - p->cap) * sizeof(*n));
		p->s = n;
		p->cap = cap;
	}
	if ((s = p->s[id])) {
		*ret = s;
		return SQLITE_OK;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return SQLITE_NOMEM;
	s->id = id;
	s->counter = counter;
	s->last_ms = s->packed_until = s->rolled_until = s->roll_hour = INT64_MIN;
	pack_writer_init(&s->raw, 1);
	pack_writer_init(&s->roll, R_COLS);
	/* the first block ends somewhere in the second half of its rows, by id */
	s->target =
		block_rows(p) / 2 + (unsigned)((uint64_t)id * 2654435761u % (block_rows(p) / 2));
	rc = resume_block(p, s);
	if (rc == SQLITE_OK)
		rc = resume_rollup(p, s);
	if (rc != SQLITE_OK) {
		series_free(s);
		return rc;
	}
	p->s[id] = s;
	p->live++;
	*ret = s;
	return SQLITE_OK;
}

static int close_block(struct store_pack *p, struct pseries *s)
{
	sqlite3_stmt *q = p->block_insert;
	int rc;

	sqlite3_bind_int64(q, 1, s->id);
	sqlite3_bind_int64(q, 2, s->raw_start);
	sqlite3_bind_int64(q, 3, s->raw_end);
	sqlite3_bind_int64(q, 4, s->raw.n);
	if (s->first_has_rate)
		sqlite3_bind_double(q, 5, s->first_rate);
	else
		sqlite3_bind_null(q, 5);
	sqlite3_bind_blob(q, 6, s->raw.buf, (int)pack_bytes(&s->raw), SQLITE_STATIC);
	sqlite3_bind_int64(q, 7,
			   store_pack_block_crc(s->id, s->raw_start, s->raw_end, s->raw.n,
						s->first_has_rate ? &s->first_rate : NULL,
						s->raw.buf, pack_bytes(&s->raw)));
	rc = step_reset(q);
	sqlite3_clear_bindings(q);
	if (rc != SQLITE_OK)
		return rc;
	s->packed_until = s->raw_end;
	s->target = block_rows(p);
	pack_writer_reset(&s->raw);
	return SQLITE_OK;
}

/* The parked hour back in s->roll from its row, with the minute pending. */
static int unpark(struct store_pack *p, struct pseries *s)
{
	int64_t hour = s->roll_hour;
	int rc = resume_rollup(p, s);

	if (rc != SQLITE_OK)
		return rc;
	s->parked = 0;
	if (s->roll_hour != hour) {
		/* its row was not the newest (the clock stepped) */
		pack_writer_reset(&s->roll);
		s->roll_hour = hour;
	}
	if (s->pending && pack_append(&s->roll, s->pend_min, s->pend) < 0)
		return SQLITE_NOMEM;
	s->pending = 0;
	return SQLITE_OK;
}

static int write_hour(struct store_pack *p, struct pseries *s)
{
	sqlite3_stmt *q = p->roll_upsert;
	int rc = s->parked ? unpark(p, s) : SQLITE_OK;

	if (rc != SQLITE_OK)
		return rc;
	sqlite3_bind_int64(q, 1, s->id);
	sqlite3_bind_int64(q, 2, s->roll_hour);
	sqlite3_bind_int64(q, 3, s->roll.n);
	sqlite3_bind_blob(q, 4, s->roll.buf, (int)pack_bytes(&s->roll), SQLITE_STATIC);
	sqlite3_bind_int64(q, 5,
			   store_pack_rollup_crc(s->id, s->roll_hour, s->roll.n, s->roll.buf,
						 pack_bytes(&s->roll)));
	rc = step_reset(q);
	sqlite3_clear_bindings(q);
	if (rc != SQLITE_OK)
		return rc;
	s->dirty = 0;
	s->rolled_until = s->roll.ts + MINUTE_MS;
	pack_writer_reset(&s->roll);
	s->parked = 1;
	return SQLITE_OK;
}

/* The summed minute goes into the rollup hour it belongs to: pending, while
 * the hour is parked, until its row is written. */
static int end_minute(struct store_pack *p, struct pseries *s)
{
	int64_t hour = floor_to(s->acc_min, HOUR_MS);
	int rc;

	if (hour != s->roll_hour) {
		/* an hour is written whole before the next begins */
		if (s->dirty && (rc = write_hour(p, s)) != SQLITE_OK)
			return rc;
		pack_writer_reset(&s->roll);
		s->roll_hour = hour;
		s->parked = 0;
	} else if (s->parked && s->pending && (rc = unpark(p, s)) != SQLITE_OK) {
		return rc; /* a second minute before the first was written */
	}
	s->acc[R_N] = s->acc_n;
	if (s->parked) {
		memcpy(s->pend, s->acc, sizeof(s->pend));
		s->pend_min = s->acc_min;
		s->pending = 1;
	} else if (pack_append(&s->roll, s->acc_min, s->acc) < 0) {
		return SQLITE_NOMEM;
	}
	if (!s->dirty)
		s->dirty_from = s->acc_min;
	s->dirty = 1;
	s->acc_n = 0;
	return SQLITE_OK;
}

static int add_rollup(struct store_pack *p, struct pseries *s, int64_t ts, double v)
{
	int64_t minute = floor_to(ts, MINUTE_MS);
	int rc;

	/* already in a stored rollup row, or the clock stepped back: the
	 * minutes it repeats are not counted twice */
	if (minute < s->rolled_until || (s->acc_n && minute < s->acc_min))
		return SQLITE_OK;
	if (s->acc_n && minute != s->acc_min && (rc = end_minute(p, s)) != SQLITE_OK)
		return rc;
	if (!s->acc_n) {
		s->acc_min = minute;
		s->acc[R_MIN] = s->acc[R_MAX] = v;
		s->acc[R_SUM] = 0;
	}
	if (v < s->acc[R_MIN])
		s->acc[R_MIN] = v;
	if (v > s->acc[R_MAX])
		s->acc[R_MAX] = v;
	s->acc[R_SUM] += v;
	s->acc[R_LAST] = v;
	s->acc_n++;
	return SQLITE_OK;
}

int store_pack_add(struct store_pack *p, const struct stage_rec *r, int64_t ts_ms)
{
	int has_rate = !!(r->flags & STAGE_HAS_RATE);
	struct pseries *s;
	int rc = series_get(p, r->id, !!(r->flags & STAGE_COUNTER), &s);

	if (rc != SQLITE_OK || ts_ms == s->last_ms)
		return rc;
	if (ts_ms > s->packed_until || ts_ms < s->last_ms) {
		/* a block starts at a counter's first reading after a restart
		 * (a block's rates come from its own samples), and where the
		 * clock stepped back (a block's times only go forward) */
		if (((s->counter && !has_rate) || ts_ms < s->last_ms) && s->raw.n &&
		    (rc = close_block(p, s)) != SQLITE_OK)
			return rc;
		/* what follows a step back is newer than what is packed */
		if (ts_ms < s->last_ms)
			s->packed_until = INT64_MIN;
		if (!s->raw.n) {
			s->raw_start = ts_ms;
			s->first_has_rate = has_rate;
			s->first_rate = r->rate;
		}
		if (pack_append(&s->raw, ts_ms, &r->value) < 0)
			return SQLITE_NOMEM;
		s->raw_end = ts_ms;
	}
	if (!s->counter || has_rate) {
		rc = add_rollup(p, s, ts_ms, s->counter ? r->rate : r->value);
		if (rc != SQLITE_OK)
			return rc;
	}
	s->last_ms = ts_ms;
	return SQLITE_OK;
}

static int block_due(const struct pseries *s, int quiet)
{
	return s->raw.n &&
	       (quiet || s->raw.n >= s->target || pack_bytes(&s->raw) >= PACK_BLOCK_BYTES ||
		s->raw_end - s->raw_start >= BLOCK_SPAN_MS);
}

/* The earliest staged time s still needs: its open block, and the minutes
 * no rollup row holds yet. */
static int64_t series_frontier(const struct pseries *s)
{
	int64_t f = INT64_MAX;

	if (s->raw.n)
		f = s->raw_start;
	if (s->dirty && s->dirty_from < f)
		f = s->dirty_from;
	if (s->acc_n && s->acc_min < f)
		f = s->acc_min;
	return f;
}

/* Closes or writes what is due of s, within the budgets; counts its
 * backlog and frontier into p for the next tick and the stage. */
static int series_tick(struct store_pack *p, struct pseries *s, int64_t now_ms, unsigned *closes,
		       unsigned *writes)
{
	int quiet = now_ms - s->last_ms >= QUIET_MS;
	int rc = SQLITE_OK, due = block_due(s, quiet);

	p->due += (unsigned)due;
	p->dirty += (unsigned)s->dirty;
	if (quiet && s->acc_n)
		rc = end_minute(p, s);
	if (rc == SQLITE_OK && *closes && due) {
		rc = close_block(p, s);
		--*closes;
	}
	if (rc == SQLITE_OK && *writes && s->dirty) {
		rc = write_hour(p, s);
		--*writes;
	}
	if (rc != SQLITE_OK)
		return rc;
	if (series_frontier(s) < p->frontier)
		p->frontier = series_frontier(s);
	/* a quiet series with everything stored needs no memory */
	if (quiet && !s->raw.n && !s->dirty && !s->acc_n)
		series_drop(p, s->id);
	return SQLITE_OK;
}

int store_pack_tick(struct store_pack *p, int64_t now_ms, unsigned budget)
{
	/* at least budget, and an eighth of the last tick's backlog: with
	 * many series (10000 close 40 blocks a tick, and write as many rollup
	 * hours a minute as there are) the work keeps up, spread over ticks */
	unsigned closes = p->due / 8 > budget ? p->due / 8 : budget;
	unsigned writes = p->dirty / 8 > budget ? p->dirty / 8 : budget;
	int rc = SQLITE_OK;

	p->due = p->dirty = 0;
	p->frontier = INT64_MAX;
	/* one pass over every series, round robin: the next tick starts where
	 * this one ran out of a budget, so none waits long */
	for (size_t k = 0, out = 0; rc == SQLITE_OK && k < p->cap; k++) {
		size_t i = (p->cursor + k) % p->cap;

		if (p->s[i])
			rc = series_tick(p, p->s[i], now_ms, &closes, &writes);
		if ((!closes || !writes) && !out++)
			p->cursor = i + 1;
	}
	return rc;
}

uint64_t store_pack_corrupt(const struct store_pack *p, enum store_corrupt_kind kind)
{
	return p->corrupt[kind].count;
}

int64_t store_pack_frontier(const struct store_pack *p)
{
	return p->frontier;
}

int store_pack_flush(struct store_pack *p)
{
	int rc = SQLITE_OK;

	for (size_t i = 0; rc == SQLITE_OK && i < p->cap; i++) {
		struct pseries *s = p->s[i];

		if (!s)
			continue;
		if (s->acc_n)
			rc = end_minute(p, s);
		if (rc == SQLITE_OK && s->raw.n)
			rc = close_block(p, s);
		if (rc == SQLITE_OK && s->dirty)
			rc = write_hour(p, s);
	}
	return rc;
}
