/* SPDX-License-Identifier: MIT */
#ifndef FABMON_STAGE_H
#define FABMON_STAGE_H

#include <stddef.h>
#include <stdint.h>

/*
 * A tick's samples as one blob: the store's stage table keeps the newest
 * ticks this way until every series has packed them into a block
 * (agent/store/pack.h). One row a tick costs one insert, and a query for one
 * series finds its sample in a tick by binary search.
 *
 * Layout: a version byte (1), then records sorted by series id, each
 * STAGE_REC_BYTES little-endian: u32 series id, u8 flags, f64 value,
 * f64 rate (0 unless STAGE_HAS_RATE).
 */

#define STAGE_REC_BYTES 21

enum {
	STAGE_COUNTER = 1, /* the value is a counter's total */
	STAGE_HAS_RATE = 2, /* not a counter's first reading */
};

struct stage_rec {
	int64_t id;
	unsigned flags;
	double value, rate;
};

/* Bytes a blob of n records takes. */
size_t stage_size(size_t n);

/*
 * Sorts recs[n] by id and writes them into out[stage_size(n)]. Returns 0, or
 * -EOVERFLOW if an id does not fit 32 bits.
 */
int stage_encode(struct stage_rec *recs, size_t n, uint8_t *out);

/* Records in a blob of len bytes, or -EBADMSG if it is not one. */
long stage_count(const void *blob, size_t len);

/* Record i of a blob stage_count accepted. */
void stage_get(const void *blob, size_t i, struct stage_rec *ret);

/* Finds id in a blob of n records: 1 and *ret, or 0. */
int stage_find(const void *blob, size_t n, int64_t id, struct stage_rec *ret);

#endif
