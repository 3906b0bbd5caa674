/* SPDX-License-Identifier: MIT */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/store/stage.h"

#define STAGE_VERSION 1

size_t stage_size(size_t n)
{
	return 1 + n * STAGE_REC_BYTES;
}

static int by_id(const void *a, const void *b)
{
	const struct stage_rec *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

static void put64(uint8_t *p, double v)
{
	uint64_t b;

	memcpy(&b, &v, sizeof(b));
	b = htole64(b);
	memcpy(p, &b, sizeof(b));
}

static double get64(const uint8_t *p)
{
	uint64_t b;
	double v;

	memcpy(&b, p, sizeof(b));
	b = le64toh(b);
	memcpy(&v, &b, sizeof(v));
	return v;
}

static uint32_t rec_id(const uint8_t *p)
{
	uint32_t id;

	memcpy(&id, p, sizeof(id));
	return le32toh(id);
}

int stage_encode(struct stage_rec *recs, size_t n, uint8_t *out)
{
	qsort(recs, n, sizeof(*recs), by_id);
	out[0] = STAGE_VERSION;
	for (size_t i = 0; i < n; i++) {
		uint8_t *p = out + stage_size(i);
		uint32_t id = htole32((uint32_t)recs[i].id);

		if (recs[i].id < 0 || recs[i].id > UINT32_MAX)
			return -EOVERFLOW;
		memcpy(p, &id, sizeof(id));
		p[4] = (uint8_t)recs[i].flags;
		put64(p + 5, recs[i].value);
		put64(p + 13, recs[i].flags & STAGE_HAS_RATE ? recs[i].rate : 0.0);
	}
	return 0;
}

long stage_count(const void *blob, size_t len)
{
	const uint8_t *p = blob;

	if (len < 1 || p[0] != STAGE_VERSION || (len - 1) % STAGE_REC_BYTES)
		return -EBADMSG;
	return (long)((len - 1) / STAGE_REC_BYTES);
}

void stage_get(const void *blob, size_t i, struct stage_rec *ret)
{
	const uint8_t *p = (const uint8_t *)blob + stage_size(i);

	ret->id = rec_id(p);
	ret->flags = p[4];
	ret->value = get64(p + 5);
	ret->rate = get64(p + 13);
}

int stage_find(const void *blob, size_t n, int64_t id, struct stage_rec *ret)
{
	const uint8_t *base = (const uint8_t *)blob + 1;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int64_t at = rec_id(base + mid * STAGE_REC_BYTES);

		if (at == id) {
			stage_get(blob, mid, ret);
			return 1;
		}
		if (at < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}
