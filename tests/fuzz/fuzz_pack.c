/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the packed-sample codec (agent/store/pack.c). First the
 * bytes as a stored block: the first byte picks the columns (1..5), the next
 * two the rows; pack_next must read it without going outside it and end in
 * rows, 0 or -EBADMSG. Then a round trip: the bytes read as rows (a time and
 * the columns' 64-bit values, so NaN payloads, -0.0, infinities and wild
 * time jumps come up) are appended and must come back bit for bit.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/store/pack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ROWS_MAX 512

static uint64_t take64(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;

	for (int i = 0; i < 8 && *p < end; i++)
		v |= (uint64_t) * (*p)++ << (8 * i);
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int64_t ts[ROWS_MAX];
	static double vals[ROWS_MAX][PACK_COLS_MAX];
	struct pack_writer w;
	struct pack_reader r;
	const uint8_t *p, *end = data + size;
	double got[PACK_COLS_MAX];
	unsigned cols, rows, n = 0;
	uint8_t *copy;
	int64_t t;
	int k;

	if (size < 3)
		return 0;
	cols = 1 + data[0] % PACK_COLS_MAX;
	rows = (unsigned)data[1] | (unsigned)data[2] << 8;

	/* 1. arbitrary bytes as a block: a copy of exactly their size for ASan */
	copy = malloc(size - 3 ? size - 3 : 1);
	if (!copy)
		return 0;
	memcpy(copy, data + 3, size - 3);
	pack_reader_init(&r, copy, size - 3, cols, rows);
	while ((k = pack_next(&r, &t, got)) == 1)
		n++;
	if (k != 0 && k != -EBADMSG)
		abort();
	if (k == 0 && n != rows)
		abort(); /* the end comes after the rows promised */
	free(copy);

	/* 2. round trip: rows of a time and cols values from the bytes; a
	 * small time step most of the time, as a tick makes */
	p = data + 3;
	rows = 0;
	while (p < end && rows < ROWS_MAX) {
		uint8_t mode = *p++;

		ts[rows] = (mode & 1) ? (int64_t)take64(&p, end)
				      : (int64_t)((uint64_t)(rows ? ts[rows - 1] : 0) +
						  (uint64_t)((int8_t)(mode >> 1) * 100));
		for (unsigned c = 0; c < cols; c++) {
			uint64_t bits =
				(mode & 2) ? take64(&p, end) : (uint64_t)(p < end ? *p++ : 0);
			double d;

			/* whole small numbers (counters) or raw IEEE bits */
			if (!(mode & 2))
				d = (double)bits + (rows ? vals[rows - 1][c] : 0);
			else
				memcpy(&d, &bits, sizeof(d));
			vals[rows][c] = d;
		}
		rows++;
	}
	pack_writer_init(&w, cols);
	for (unsigned i = 0; i < rows; i++)
		if (pack_append(&w, ts[i], vals[i]) < 0) {
			pack_writer_reset(&w);
			return 0;
		}
	pack_reader_init(&r, w.buf, pack_bytes(&w), cols, rows);
	for (unsigned i = 0; i < rows; i++) {
		if (pack_next(&r, &t, got) != 1 || t != ts[i])
			abort();
		if (memcmp(got, vals[i], cols * sizeof(double)) != 0)
			abort(); /* bit for bit */
	}
	if (pack_next(&r, &t, got) != 0)
		abort();
	pack_writer_reset(&w);
	return 0;
}
