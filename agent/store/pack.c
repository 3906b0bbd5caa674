/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agent/store/pack.h"

/* A row's worst case: a 68-bit time, and per value 5 + 2 + 12 + 64 bits. */
#define ROW_MAX_BYTES(cols) (9 + (cols)*11)

/* A writer's buffer grows to what it needs and an eighth more, in steps of
 * GROW_ALIGN bytes, not by doubling nor by a fixed step: a store holds an
 * open block and a rollup hour for every series, most of them a few dozen
 * bytes (a steady counter packs to a bit or three a row), and a doubled
 * buffer is up to half empty, a fixed one of 256 bytes nine tenths. */
#define GROW_ALIGN 32

/* 2^53: above it not every whole number is a double. */
#define WHOLE_MAX 9007199254740992.0

static uint64_t dbits(double v)
{
	uint64_t b;

	memcpy(&b, &v, sizeof(b));
	return b;
}

static double bitsd(uint64_t b)
{
	double v;

	memcpy(&v, &b, sizeof(v));
	return v;
}

/* True, with the integer, if v is a whole number whose double is exact. */
static int whole(double v, int64_t *ret)
{
	int64_t i;

	if (!(v >= -WHOLE_MAX && v <= WHOLE_MAX))
		return 0; /* NaN too */
	i = (int64_t)v;
	if ((double)i != v || (i == 0 && signbit(v)))
		return 0;
	*ret = i;
	return 1;
}

static uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t unzigzag(uint64_t z)
{
	return (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
}

/* Two's complement arithmetic without signed overflow. */
static int64_t wrap_sub(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a - (uint64_t)b);
}

static int64_t wrap_add(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

/* A signed value fits n bits. */
static int fits(int64_t v, unsigned n)
{
	int64_t half = (int64_t)1 << (n - 1);

	return v >= -half && v < half;
}

static int64_t sign_extend(uint64_t v, unsigned n)
{
	uint64_t m = (uint64_t)1 << (n - 1);

	return (int64_t)((v ^ m) - m);
}

static void put(struct pack_writer *w, uint64_t v, unsigned n)
{
	while (n) {
		size_t byte = w->nbits >> 3;
		unsigned room = 8 - (unsigned)(w->nbits & 7);
		unsigned take = n < room ? n : room;
		unsigned chunk = (unsigned)(v >> (n - take)) & ((1u << take) - 1);

		if (room == 8)
			w->buf[byte] = 0;
		w->buf[byte] |= (uint8_t)(chunk << (room - take));
		w->nbits += take;
		n -= take;
	}
}

void pack_writer_init(struct pack_writer *w, unsigned cols)
{
	memset(w, 0, sizeof(*w));
	w->cols = cols > PACK_COLS_MAX ? PACK_COLS_MAX : cols;
}

void pack_writer_reset(struct pack_writer *w)
{
	unsigned cols = w->cols;

	free(w->col);
	pack_writer_init(w, cols);
}

size_t pack_bytes(const struct pack_writer *w)
{
	return (w->nbits + 7) / 8;
}

static void put_xor(struct pack_writer *w, struct pack_col *c, uint64_t bits)
{
	uint64_t x = bits ^ c->bits;
	unsigned lead, trail, len;

	if (!x) {
		put(w, 0, 1);
		return;
	}
	lead = (unsigned)__builtin_clzll(x);
	trail = (unsigned)__builtin_ctzll(x);
	if (c->len && lead >= c->lead && trail >= 64u - c->lead - c->len) {
		put(w, 2, 2);
		put(w, x >> (64 - c->lead - c->len), c->len);
		return;
	}
	len = 64 - lead - trail;
	put(w, 3, 2);
	put(w, lead, 6);
	put(w, len - 1, 6);
	put(w, x >> trail, len);
	c->lead = (uint8_t)lead;
	c->len = (uint8_t)len;
}

static void put_value(struct pack_writer *w, struct pack_col *c, double v)
{
	static const unsigned width[] = { 0, 6, 13, 22, 32 };
	uint64_t bits = dbits(v), z;
	int64_t i = 0, inc = 0;
	int is_whole = whole(v, &i);
	unsigned k = 5;

	if (c->is_whole) {
		if (is_whole) {
			inc = i - c->whole;
			z = zigzag(inc - c->step);
			for (k = 0; k < 5 && (k ? z >> width[k] : z); k++)
				;
			/* k ones and a zero, then the bits; five ones: xor */
			if (k < 5) {
				put(w, ((1u << k) - 1) << 1, k + 1);
				put(w, z, width[k]);
			} else {
				put(w, 31, 5);
			}
		} else {
			put(w, 31, 5);
		}
		if (k == 5)
			put_xor(w, c, bits);
	} else {
		put_xor(w, c, bits);
	}
	c->step = c->is_whole && is_whole ? inc : 0;
	c->is_whole = is_whole;
	c->whole = i;
	c->bits = bits;
}

static void put_time(struct pack_writer *w, int64_t ts)
{
	int64_t dt = wrap_sub(ts, w->ts), dod = wrap_sub(dt, w->dt);

	if (dod == 0) {
		put(w, 0, 1);
	} else if (fits(dod, 4)) {
		put(w, 2, 2);
		put(w, (uint64_t)dod, 4);
	} else if (fits(dod, 9)) {
		put(w, 6, 3);
		put(w, (uint64_t)dod, 9);
	} else if (fits(dod, 16)) {
		put(w, 14, 4);
		put(w, (uint64_t)dod, 16);
	} else {
		put(w, 15, 4);
		put(w, (uint64_t)dod, 64);
	}
	w->dt = dt;
	w->ts = ts;
}

int pack_append(struct pack_writer *w, int64_t ts_ms, const double *vals)
{
	size_t need = pack_bytes(w) + ROW_MAX_BYTES(w->cols);

	if (need > w->cap) {
		size_t cap = (need + need / 8 + GROW_ALIGN - 1) / GROW_ALIGN * GROW_ALIGN;
		struct pack_col *col = realloc(w->col, w->cols * sizeof(*col) + cap);

		if (!col)
			return -ENOMEM;
		if (!w->col)
			memset(col, 0, w->cols * sizeof(*col));
		w->col = col;
		w->buf = (uint8_t *)(col + w->cols);
		w->cap = cap;
	}
	if (w->n == 0) {
		put(w, (uint64_t)ts_ms, 64);
		w->ts = ts_ms;
		for (unsigned c = 0; c < w->cols; c++) {
			struct pack_col *col = &w->col[c];

			put(w, dbits(vals[c]), 64);
			col->bits = dbits(vals[c]);
			col->is_whole = whole(vals[c], &col->whole);
		}
	} else {
		put_time(w, ts_ms);
		for (unsigned c = 0; c < w->cols; c++)
			put_value(w, &w->col[c], vals[c]);
	}
	w->n++;
	return 0;
}

void pack_reader_init(struct pack_reader *r, const void *buf, size_t len, unsigned cols, unsigned n)
{
	memset(r, 0, sizeof(*r));
	r->buf = buf;
	r->nbits = len * 8;
	r->cols = cols > PACK_COLS_MAX ? PACK_COLS_MAX : cols;
	r->left = n;
}

/* n bits into *v; -EBADMSG past the end. */
static int get(struct pack_reader *r, unsigned n, uint64_t *v)
{
	uint64_t out = 0;

	if (n > r->nbits - r->pos || r->pos > r->nbits)
		return -EBADMSG;
	while (n) {
		unsigned used = (unsigned)(r->pos & 7), room = 8 - used;
		unsigned take = n < room ? n : room;
		unsigned byte = r->buf[r->pos >> 3];

		out = (out << take) | ((byte >> (room - take)) & ((1u << take) - 1));
		r->pos += take;
		n -= take;
	}
	*v = out;
	return 0;
}

/* Counts ones before a zero, up to max. */
static int get_ones(struct pack_reader *r, unsigned max, unsigned *ret)
{
	uint64_t b = 1;
	unsigned k = 0;
	int e = 0;

	while (k < max && !(e = get(r, 1, &b)) && b)
		k++;
	*ret = k;
	return e;
}

static int get_xor(struct pack_reader *r, struct pack_col *c)
{
	uint64_t v, lead, len;
	int e = get(r, 1, &v);

	if (e || !v)
		return e;
	if ((e = get(r, 1, &v)))
		return e;
	if (!v) {
		if (!c->len)
			return -EBADMSG; /* no window yet */
	} else {
		if ((e = get(r, 6, &lead)) || (e = get(r, 6, &len)))
			return e;
		if (lead + len + 1 > 64)
			return -EBADMSG;
		c->lead = (uint8_t)lead;
		c->len = (uint8_t)(len + 1);
	}
	if ((e = get(r, c->len, &v)))
		return e;
	c->bits ^= v << (64 - c->lead - c->len);
	return 0;
}

static int get_value(struct pack_reader *r, struct pack_col *c)
{
	static const unsigned width[] = { 0, 6, 13, 22, 32 };
	int64_t i = 0, prev = c->whole;
	int was_whole = c->is_whole, e;
	unsigned k = 5;
	uint64_t z = 0;

	if (was_whole) {
		if ((e = get_ones(r, 5, &k)))
			return e;
		if (k < 5) {
			if ((e = get(r, width[k], &z)))
				return e;
			i = prev + c->step + unzigzag(z);
			if (!(i >= -(int64_t)WHOLE_MAX && i <= (int64_t)WHOLE_MAX))
				return -EBADMSG;
			c->bits = dbits((double)i);
		}
	}
	if (k == 5 && (e = get_xor(r, c)))
		return e;
	c->is_whole = whole(bitsd(c->bits), &i);
	c->step = was_whole && c->is_whole ? i - prev : 0;
	c->whole = i;
	return 0;
}

static int get_time(struct pack_reader *r)
{
	static const unsigned width[] = { 0, 4, 9, 16, 64 };
	unsigned k;
	uint64_t v = 0;
	int e = get_ones(r, 4, &k);

	if (e || (k && (e = get(r, width[k], &v))))
		return e;
	r->dt = wrap_add(r->dt, k ? sign_extend(v, width[k]) : 0);
	r->ts = wrap_add(r->ts, r->dt);
	return 0;
}

int pack_next(struct pack_reader *r, int64_t *ts_ms, double *vals)
{
	uint64_t v;
	int e = 0;

	if (!r->left)
		return 0;
	if (r->n == 0) {
		e = get(r, 64, &v);
		r->ts = (int64_t)v;
		for (unsigned c = 0; !e && c < r->cols; c++) {
			struct pack_col *col = &r->col[c];

			e = get(r, 64, &col->bits);
			col->is_whole = !e && whole(bitsd(col->bits), &col->whole);
		}
	} else {
		e = get_time(r);
		for (unsigned c = 0; !e && c < r->cols; c++)
			e = get_value(r, &r->col[c]);
	}
	if (e) {
		r->left = 0;
		return e;
	}
	*ts_ms = r->ts;
	for (unsigned c = 0; c < r->cols; c++)
		vals[c] = bitsd(r->col[c].bits);
	r->left--;
	r->n++;
	return 1;
}

void pack_rows_release(struct pack_rows *rows)
{
	free(rows->ts);
	free(rows->vals);
	memset(rows, 0, sizeof(*rows));
}

/* Room for one more row. */
static int rows_grow(struct pack_rows *rows)
{
	size_t cap = rows->cap ? rows->cap * 2 : 256;
	int64_t *ts;
	double *vals;

	if (rows->n < rows->cap)
		return 0;
	ts = realloc(rows->ts, cap * sizeof(*ts));
	if (ts)
		rows->ts = ts;
	vals = ts ? realloc(rows->vals, cap * PACK_COLS_MAX * sizeof(*vals)) : NULL;
	if (!vals)
		return -ENOMEM;
	rows->vals = vals;
	rows->cap = cap;
	return 0;
}

int pack_read_all(const void *buf, size_t len, unsigned cols, unsigned n, int64_t from_ms,
		  int64_t to_ms, struct pack_rows *rows)
{
	struct pack_reader r;
	int64_t ts;
	int e;

	rows->n = 0;
	pack_reader_init(&r, buf, len, cols, n);
	while ((e = rows_grow(rows)) == 0 &&
	       (e = pack_next(&r, &ts, rows->vals + rows->n * r.cols)) == 1) {
		if (ts < from_ms || ts > to_ms || (rows->n && ts <= rows->ts[rows->n - 1])) {
			e = -EBADMSG;
			break;
		}
		rows->ts[rows->n++] = ts;
	}
	if (e < 0)
		rows->n = 0;
	return e;
}
