/* SPDX-License-Identifier: MIT */
#ifndef FABMON_PACK_H
#define FABMON_PACK_H

#include <stddef.h>
#include <stdint.h>

/*
 * Packed sample blocks: a run of (time, k values) rows encoded as one bit
 * stream, after the ideas of Facebook's Gorilla paper (Pelkonen et al.,
 * VLDB 2015: delta-of-delta times, XOR-coded floats), with one addition for
 * counters: a value that is a whole number, like the one before it, is coded
 * as the change of its increase, so a steady counter costs a few bits and
 * an idle one a single bit.
 *
 * Every value comes back bit for bit: NaN payloads, -0.0, infinities, and
 * times that jump back or by years.
 *
 * Layout of the stream (bits, most significant first):
 *   row 0:  time as 64 bits, then each value as its 64 IEEE 754 bits;
 *   row i:  time delta-of-delta (ms):
 *             0                   0
 *             10   + 4 bits       -8 .. 7
 *             110  + 9 bits       -256 .. 255
 *             1110 + 16 bits      -32768 .. 32767
 *             1111 + 64 bits      anything
 *           then each value, in column order:
 *             when this and the previous value are whole numbers within
 *             ±2^53 (not -0.0), z = zigzag(increase - previous increase):
 *               0                 z = 0
 *               10    + 6 bits    z < 2^6
 *               110   + 13 bits   z < 2^13
 *               1110  + 22 bits   z < 2^22
 *               11110 + 32 bits   z < 2^32
 *               11111 + xor       otherwise
 *             when only the previous one is whole: 11111 + xor;
 *             otherwise: xor, with x = bits ^ previous bits:
 *               0                 x = 0
 *               10 + m bits       x within the previous window of m bits
 *               11 + 6 bits leading zeros + 6 bits (m - 1) + m bits
 */

#define PACK_COLS_MAX 5

struct pack_col {
	uint64_t bits; /* the previous value */
	int64_t whole, step; /* it as an integer, and its increase */
	/* bytes, not ints: 32 bytes a column, not 40 */
	uint8_t is_whole;
	uint8_t lead, len; /* the xor window: leading zeros, meaningful bits (64 at most) */
};

/*
 * The columns' state and the stream share one allocation, made at the first
 * row and freed by pack_writer_reset(): a store holds two writers for every
 * series, most of them empty (a rollup hour parked in its row) or of one
 * column, and a writer with room for five columns inline was 208 bytes.
 */
struct pack_writer {
	struct pack_col *col; /* cols of them; NULL while empty */
	uint8_t *buf; /* the stream, cap bytes, just after col */
	size_t cap, nbits;
	unsigned cols, n;
	int64_t ts, dt;
};

/* An empty writer of rows of cols values (1..PACK_COLS_MAX). */
void pack_writer_init(struct pack_writer *w, unsigned cols);

/* Frees the buffer and empties the writer. */
void pack_writer_reset(struct pack_writer *w);

/* Appends a row. Returns 0 or -ENOMEM (the writer is unchanged then). */
int pack_append(struct pack_writer *w, int64_t ts_ms, const double *vals);

/* The stream so far: (w->nbits + 7) / 8 bytes of w->buf. */
size_t pack_bytes(const struct pack_writer *w);

struct pack_reader {
	const uint8_t *buf;
	size_t nbits, pos;
	unsigned cols, left, n;
	int64_t ts, dt;
	struct pack_col col[PACK_COLS_MAX];
};

/* Reads rows of cols values from len bytes holding n rows. */
void pack_reader_init(struct pack_reader *r, const void *buf, size_t len, unsigned cols,
		      unsigned n);

/*
 * The next row into *ts_ms and vals[cols]. Returns 1, 0 after the last row,
 * or -EBADMSG when the stream ends early or holds a code no writer makes.
 */
int pack_next(struct pack_reader *r, int64_t *ts_ms, double *vals);

/* Rows read whole: ts[i] and cols values from vals[i * cols]. */
struct pack_rows {
	int64_t *ts;
	double *vals;
	size_t n, cap;
};

/* Frees the rows' arrays and empties them. */
void pack_rows_release(struct pack_rows *rows);

/*
 * Reads all n rows of cols values from len bytes into rows (its arrays
 * reused, grown as rows come), and checks them as a writer makes them: each
 * time after the one before, all within [from_ms, to_ms]. Returns 0, -ENOMEM,
 * or -EBADMSG (rows->n is 0 then: nothing of a stream that fails is used).
 */
int pack_read_all(const void *buf, size_t len, unsigned cols, unsigned n, int64_t from_ms,
		  int64_t to_ms, struct pack_rows *rows);

#endif
