/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kmap.h"

struct kmap {
	size_t key_size, val_off, slot_size;
	unsigned nslots; /* a power of two, at least twice max_entries */
	unsigned max_entries, count;
	unsigned char *slots; /* each: used byte, key, padding, value */
	unsigned char *scratch; /* keys to remove during a sweep */
};

#define KMAP_ALIGN 8

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
	m->val_off = align_up(1 + key_size);
	m->slot_size = align_up(m->val_off + val_size);
	m->max_entries = max_entries ? max_entries : 1;
	m->nslots = 16;
	while (m->nslots < 2 * m->max_entries)
		m->nslots <<= 1;
	m->slots = calloc(m->nslots, m->slot_size);
	m->scratch = malloc((size_t)m->max_entries * key_size);
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

/* FNV-1a over the key bytes. */
static unsigned kmap_hash(const struct kmap *m, const void *key)
{
	const unsigned char *p = key;
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < m->key_size; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	return h & (m->nslots - 1);
}

static unsigned char *slot(const struct kmap *m, unsigned i)
{
	return m->slots + (size_t)i * m->slot_size;
}

/* The slot holding key, or the empty slot where it would go. */
static unsigned kmap_find(const struct kmap *m, const void *key)
{
	unsigned i = kmap_hash(m, key);

	while (slot(m, i)[0] && memcmp(slot(m, i) + 1, key, m->key_size) != 0)
		i = (i + 1) & (m->nslots - 1);
	return i;
}

void *kmap_get(const struct kmap *m, const void *key)
{
	unsigned char *s = slot(m, kmap_find(m, key));

	return s[0] ? s + m->val_off : NULL;
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
	memset(s, 0, m->slot_size);
	s[0] = 1;
	memcpy(s + 1, key, m->key_size);
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
		unsigned home = kmap_hash(m, slot(m, j) + 1);

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
	memset(m->slots, 0, (size_t)m->nslots * m->slot_size);
	m->count = 0;
}

void kmap_sweep(struct kmap *m, int (*fn)(const void *key, void *val, void *arg), void *arg)
{
	unsigned n = 0;

	for (unsigned i = 0; i < m->nslots; i++) {
		unsigned char *s = slot(m, i);

		if (s[0] && !fn(s + 1, s + m->val_off, arg))
			memcpy(m->scratch + (size_t)n++ * m->key_size, s + 1, m->key_size);
	}
	for (unsigned i = 0; i < n; i++)
		kmap_del(m, m->scratch + (size_t)i * m->key_size);
}
