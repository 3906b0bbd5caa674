/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collector/kmap.h"

struct kmap {
	size_t key_size, val_off, slot_size;
	unsigned nslots; /* a power of two, at least twice count */
	unsigned max_entries, count;
	unsigned char *slots; /* each: used byte, padding, key, padding, value */
	unsigned char *scratch; /* keys to remove during a sweep: nslots / 2 of them */
};

#define KMAP_ALIGN 8
/* Where a slot's key starts: aligned, as its value is, since callers read
 * both through their own structs (kmap_sweep()'s fn; UBSan caught keys at
 * offset 1 read as struct peer_id) */
#define KMAP_KEY_OFF KMAP_ALIGN
/* Slots a table starts with; it doubles as it fills, up to what
 * max_entries needs, so that a bound sized for the worst case (a million
 * flows in a capture) costs memory only when it is used. */
#define KMAP_SLOTS_MIN 64

static size_t align_up(size_t n)
{
	return (n + KMAP_ALIGN - 1) & ~(size_t)(KMAP_ALIGN - 1);
}

struct kmap *kmap_new(size_t key_size, size_t val_size, unsigned max_entries)
{
	struct kmap *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->key_size = key_size;
	m->val_off = align_up(KMAP_KEY_OFF + key_size);
	m->slot_size = align_up(m->val_off + val_size);
	m->max_entries = max_entries ? max_entries : 1;
	m->nslots = KMAP_SLOTS_MIN;
	m->slots = calloc(m->nslots, m->slot_size);
	m->scratch = malloc((size_t)m->nslots / 2 * key_size);
	if (!m->slots || !m->scratch) {
		kmap_free(m);
		return NULL;
	}
	return m;
}

void kmap_free(struct kmap *m)
{
	if (!m)
		return;
	free(m->slots);
	free(m->scratch);
	free(m);
}

/*
 * A multiplicative hash over the key, eight bytes at a time: keys are
 * 40-odd bytes (two IPv6 addresses and ports), and a byte-wise hash cost a
 * multiply per byte on every packet `fabmon replay` counts. The constant is
 * 2^64 over the golden ratio (Knuth, TAOCP vol. 3, 6.4); the final fold brings
 * the well-mixed high bits down to the slot index.
 */
static unsigned kmap_hash(const struct kmap *m, const void *key)
{
	const unsigned char *p = key;
	uint64_t h = m->key_size, w;
	size_t i = 0;

	for (; i + 8 <= m->key_size; i += 8) {
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
	}
	/* the last bytes as the low bytes of a word, in fixed-size pieces: a
	 * copy of a length only known at run time is a call into libc */
	if (i < m->key_size) {
		size_t left = m->key_size - i, at = 0;
		uint32_t w4;
		uint16_t w2;

		w = 0;
		if (left & 4) {
			memcpy(&w4, p + i, 4);
			w = w4;
			at = 4;
		}
		if (left & 2) {
			memcpy(&w2, p + i + at, 2);
			w |= (uint64_t)w2 << (8 * at);
			at += 2;
		}
		if (left & 1)
			w |= (uint64_t)p[i + at] << (8 * at);
		h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
	}
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 32;
	return (unsigned)h & (m->nslots - 1);
}

static unsigned char *slot(const struct kmap *m, unsigned i)
{
	return m->slots + (size_t)i * m->slot_size;
}

/* The slot holding key, or the empty slot where it would go. */
static unsigned kmap_find(const struct kmap *m, const void *key)
{
	unsigned i = kmap_hash(m, key);

	while (slot(m, i)[0] && memcmp(slot(m, i) + KMAP_KEY_OFF, key, m->key_size) != 0)
		i = (i + 1) & (m->nslots - 1);
	return i;
}

void *kmap_get(const struct kmap *m, const void *key)
{
	unsigned char *s = slot(m, kmap_find(m, key));

	return s[0] ? s + m->val_off : NULL;
}

/* Doubles the slots and places every entry anew. -ENOMEM leaves m as it was. */
static int kmap_grow(struct kmap *m)
{
	struct kmap old = *m;
	unsigned char *scratch;

	m->nslots = old.nslots * 2;
	m->slots = calloc(m->nslots, m->slot_size);
	scratch = realloc(old.scratch, (size_t)m->nslots / 2 * m->key_size);
	if (!m->slots || !scratch) {
		free(m->slots);
		*m = old;
		if (scratch)
			m->scratch = scratch;
		return -ENOMEM;
	}
	m->scratch = scratch;
	for (unsigned i = 0; i < old.nslots; i++)
		if (slot(&old, i)[0])
			memcpy(slot(m, kmap_find(m, slot(&old, i) + KMAP_KEY_OFF)), slot(&old, i),
			       m->slot_size);
	free(old.slots);
	return 0;
}

void *kmap_put(struct kmap *m, const void *key, int *ret_created)
{
	unsigned char *s = slot(m, kmap_find(m, key));

	if (ret_created)
		*ret_created = 0;
	if (s[0])
		return s + m->val_off;
	if (m->count >= m->max_entries)
		return NULL;
	/* at most half the slots used keeps probe runs short */
	if (m->count + 1 > m->nslots / 2) {
		if (kmap_grow(m) < 0)
			return NULL;
		s = slot(m, kmap_find(m, key));
	}
	memset(s, 0, m->slot_size);
	s[0] = 1;
	memcpy(s + KMAP_KEY_OFF, key, m->key_size);
	m->count++;
	if (ret_created)
		*ret_created = 1;
	return s + m->val_off;
}

void kmap_del(struct kmap *m, const void *key)
{
	unsigned mask = m->nslots - 1, i = kmap_find(m, key), j;

	if (!slot(m, i)[0])
		return;
	/* Backward-shift: move later entries of the probe run into the hole
	 * unless that would put them before their home slot. */
	for (j = (i + 1) & mask; slot(m, j)[0]; j = (j + 1) & mask) {
		unsigned home = kmap_hash(m, slot(m, j) + KMAP_KEY_OFF);

		if (((j - home) & mask) >= ((j - i) & mask)) {
			memcpy(slot(m, i), slot(m, j), m->slot_size);
			i = j;
		}
	}
	slot(m, i)[0] = 0;
	m->count--;
}

unsigned kmap_count(const struct kmap *m)
{
	return m->count;
}

void kmap_clear(struct kmap *m)
{
	/* keeps the slots it grew to: a table refilled each tick stays warm */
	memset(m->slots, 0, (size_t)m->nslots * m->slot_size);
	m->count = 0;
}

void kmap_sweep(struct kmap *m, int (*fn)(const void *key, void *val, void *arg), void *arg)
{
	unsigned n = 0;

	for (unsigned i = 0; i < m->nslots; i++) {
		unsigned char *s = slot(m, i);

		if (s[0] && !fn(s + KMAP_KEY_OFF, s + m->val_off, arg))
			memcpy(m->scratch + (size_t)n++ * m->key_size, s + KMAP_KEY_OFF,
			       m->key_size);
	}
	for (unsigned i = 0; i < n; i++)
		kmap_del(m, m->scratch + (size_t)i * m->key_size);
}
