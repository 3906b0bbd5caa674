/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/lib/crc32c.h"
#include "agent/store/pack.h"
#include "suites.h"

/* A double with the given bits (a NaN's payload, say). */
static double with_bits(uint64_t b)
{
	double v;

	memcpy(&v, &b, sizeof(v));
	return v;
}

/* Packs n rows of cols values and reads them back bit for bit. Returns the
 * stream's size in bytes. */
static size_t round_trip(const int64_t *ts, const double *vals, unsigned n, unsigned cols)
{
	struct pack_writer w;
	struct pack_reader r;
	double got[PACK_COLS_MAX];
	int64_t t;
	size_t bytes;

	pack_writer_init(&w, cols);
	for (unsigned i = 0; i < n; i++)
		ck_assert_int_eq(pack_append(&w, ts[i], &vals[i * cols]), 0);
	ck_assert_uint_eq(w.n, n);
	bytes = pack_bytes(&w);
	pack_reader_init(&r, w.buf, bytes, cols, n);
	for (unsigned i = 0; i < n; i++) {
		ck_assert_int_eq(pack_next(&r, &t, got), 1);
		ck_assert_msg(t == ts[i], "row %u: time %lld, want %lld", i, (long long)t,
			      (long long)ts[i]);
		for (unsigned c = 0; c < cols; c++)
			ck_assert_msg(memcmp(&got[c], &vals[i * cols + c], sizeof(double)) == 0,
				      "row %u col %u: %a, want %a", i, c, got[c],
				      vals[i * cols + c]);
	}
	ck_assert_int_eq(pack_next(&r, &t, got), 0);
	pack_writer_reset(&w);
	return bytes;
}

/* The awkward values, one after another and next to ordinary ones. */
START_TEST(test_special_values)
{
	static const double v[] = {
		0.0,
		-0.0,
		NAN,
		-NAN,
		INFINITY,
		-INFINITY,
		1.0,
		1.0,
		0.1,
		1e300,
		-1e-300,
		5e-324,
		42.0,
		9007199254740992.0,
		-9007199254740992.0,
		9007199254740993.0,
		18446744073709551616.0,
		3.0,
		-3.0,
		1.7976931348623157e308,
		0.0,
		2.5,
		2.5,
		NAN,
		7.0,
	};
	unsigned n = sizeof(v) / sizeof(v[0]);
	int64_t ts[sizeof(v) / sizeof(v[0])];
	double with_payload[sizeof(v) / sizeof(v[0])];

	for (unsigned i = 0; i < n; i++)
		ts[i] = 1796177400000LL + i * 1000;
	(void)round_trip(ts, v, n, 1);
	/* a NaN with a payload of its own keeps it */
	memcpy(with_payload, v, sizeof(v));
	with_payload[3] = with_bits(0x7ff8dead0000beefULL);
	with_payload[5] = with_bits(0xfff0000000000001ULL);
	(void)round_trip(ts, with_payload, n, 1);
}
END_TEST

/* Times that repeat, go back, jump by years or to the ends of int64. */
START_TEST(test_times)
{
	static const int64_t ts[] = {
		1796177400000LL,
		1796177401000LL,
		1796177402003LL,
		1796177402003LL,
		1796177401000LL,
		1796177401000LL + 86400000LL * 365 * 30,
		0,
		-5,
		INT64_MAX,
		INT64_MIN,
		1796177400000LL,
		1796177400100LL,
		1796177400200LL,
		1796177400300LL,
		1796177400300LL + 40000,
		1796177400300LL + 40000 + 70000,
	};
	unsigned n = sizeof(ts) / sizeof(ts[0]);
	double v[sizeof(ts) / sizeof(ts[0])];

	for (unsigned i = 0; i < n; i++)
		v[i] = (double)i;
	(void)round_trip(ts, v, n, 1);
}
END_TEST

/* Counters: steady, idle, reset to zero, wrapping past 2^53, and a jump
 * too big for the integer codes; in five columns, like a rollup. */
START_TEST(test_counters_and_columns)
{
	enum { N = 2000, COLS = 5 };
	int64_t *ts = calloc(N, sizeof(*ts));
	double *v = calloc(N * COLS, sizeof(*v));
	double total = 1e12;
	unsigned seed = 7;

	ck_assert_ptr_nonnull(ts);
	ck_assert_ptr_nonnull(v);
	for (unsigned i = 0; i < N; i++) {
		ts[i] = 1796177400000LL + (int64_t)i * 1000 + (rand_r(&seed) % 5) - 2;
		total += 1.25e9 + (double)(rand_r(&seed) % 100000);
		if (i == 700)
			total = 0; /* a reset */
		if (i == 900)
			total = 9007199254740990.0; /* past 2^53: no longer whole */
		if (i == 1200)
			total = 3.0;
		if (i == 1500)
			total = 4e15; /* a jump too big for 32 bits */
		v[i * COLS + 0] = total;
		v[i * COLS + 1] = 0.0; /* idle */
		v[i * COLS + 2] = 1.0 + (double)(rand_r(&seed) % 1000) / 7.0; /* a float gauge */
		v[i * COLS + 3] = i % 3 ? 5.0 : NAN;
		v[i * COLS + 4] = -(double)i;
	}
	(void)round_trip(ts, v, N, COLS);
	free(ts);
	free(v);
}
END_TEST

/* What a row costs: an idle counter a few bits, a busy one a few bytes. */
START_TEST(test_sizes)
{
	enum { N = 1000 };
	int64_t ts[N];
	double idle[N], busy[N];
	unsigned seed = 11;
	double total = 5e11;
	size_t b_idle, b_busy;

	for (unsigned i = 0; i < N; i++) {
		ts[i] = 1796177400000LL + (int64_t)i * 1000 + (rand_r(&seed) % 3) - 1;
		idle[i] = 17.0;
		total += 1e6 + (double)(rand_r(&seed) % 10000);
		busy[i] = total;
	}
	b_idle = round_trip(ts, idle, N, 1);
	b_busy = round_trip(ts, busy, N, 1);
	ck_assert_msg(b_idle < N, "idle counter: %zu bytes for %d rows", b_idle, N);
	ck_assert_msg(b_busy < 4 * N, "busy counter: %zu bytes for %d rows", b_busy, N);
}
END_TEST

/* A cut or garbled stream is refused, never read past its end. */
START_TEST(test_bad_streams)
{
	enum { N = 64 };
	struct pack_writer w;
	struct pack_reader r;
	int64_t t;
	double got, got3[3];
	uint8_t junk[32];
	int rc = 1;
	unsigned rows = 0;

	pack_writer_init(&w, 1);
	for (unsigned i = 0; i < N; i++)
		ck_assert_int_eq(pack_append(&w, (int64_t)i * 1000, &(double){ i * 1.5 }), 0);
	for (size_t cut = 0; cut < pack_bytes(&w); cut++) {
		pack_reader_init(&r, w.buf, cut, 1, N);
		rows = 0;
		while ((rc = pack_next(&r, &t, &got)) == 1)
			rows++;
		ck_assert_msg(rc == -EBADMSG && rows < N, "cut at %zu: rc %d after %u rows", cut,
			      rc, rows);
	}
	memset(junk, 0xff, sizeof(junk));
	pack_reader_init(&r, junk, sizeof(junk), 3, 1000);
	while ((rc = pack_next(&r, &t, got3)) == 1)
		rows++;
	ck_assert_int_eq(rc, -EBADMSG);
	pack_writer_reset(&w);
}
END_TEST

/*
 * pack_read_all takes a stream whole or not at all: every row, in order and
 * within the bounds given; a stream cut short, times out of the bounds and
 * times that go back (a flipped bit makes them) give -EBADMSG and no row.
 */
START_TEST(test_read_all)
{
	static const int64_t back[] = { 1000, 3000, 2000 };
	struct pack_rows rows = { 0 };
	struct pack_writer w;

	pack_writer_init(&w, 2);
	for (unsigned i = 0; i < 300; i++)
		ck_assert_int_eq(
			pack_append(&w, 1000 * (int64_t)(i + 1), (double[]){ i, -1.0 * i }), 0);
	ck_assert_int_eq(pack_read_all(w.buf, pack_bytes(&w), 2, 300, 1000, 300000, &rows), 0);
	ck_assert_uint_eq(rows.n, 300);
	ck_assert(rows.ts[299] == 300000 && rows.vals[2 * 299] == 299.0 &&
		  rows.vals[2 * 299 + 1] == -299.0);
	ck_assert_int_eq(pack_read_all(w.buf, pack_bytes(&w) - 1, 2, 300, 1000, 300000, &rows),
			 -EBADMSG);
	ck_assert_uint_eq(rows.n, 0);
	ck_assert_int_eq(pack_read_all(w.buf, pack_bytes(&w), 2, 300, 1000, 299999, &rows),
			 -EBADMSG);
	ck_assert_int_eq(pack_read_all(w.buf, pack_bytes(&w), 2, 300, 1001, 300000, &rows),
			 -EBADMSG);
	pack_writer_reset(&w);
	for (unsigned i = 0; i < 3; i++)
		ck_assert_int_eq(pack_append(&w, back[i], (double[]){ i, i }), 0);
	ck_assert_int_eq(pack_read_all(w.buf, pack_bytes(&w), 2, 3, 0, 5000, &rows), -EBADMSG);
	ck_assert_uint_eq(rows.n, 0);
	pack_writer_reset(&w);
	pack_rows_release(&rows);
}
END_TEST

/* The blocks' checksum is CRC-32C: its check value ("123456789") and the
 * 32 zero bytes of RFC 3720, B.4; a sum continued over two parts is the
 * sum of the whole. */
START_TEST(test_crc32c)
{
	static const uint8_t zeros[32];

	ck_assert_uint_eq(crc32c(0, "123456789", 9), 0xe3069283);
	ck_assert_uint_eq(crc32c(0, zeros, sizeof(zeros)), 0x8a9136aa);
	ck_assert_uint_eq(crc32c(crc32c(0, "1234", 4), "56789", 5), 0xe3069283);
}
END_TEST

Suite *pack_suite(void)
{
	Suite *s = suite_create("pack");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_special_values);
	tcase_add_test(tc, test_times);
	tcase_add_test(tc, test_counters_and_columns);
	tcase_add_test(tc, test_sizes);
	tcase_add_test(tc, test_bad_streams);
	tcase_add_test(tc, test_read_all);
	tcase_add_test(tc, test_crc32c);
	suite_add_tcase(s, tc);
	return s;
}
