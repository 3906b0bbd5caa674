/* SPDX-License-Identifier: MIT */
#ifndef FABMON_KMAP_H
#define FABMON_KMAP_H

#include <stddef.h>

/*
 * A bounded hash table of fixed-size keys and values, compared as bytes, for
 * user-space mirrors of BPF maps (a flow's last counters, a peer's totals).
 * Open addressing with linear probing and backward-shift deletion, no
 * tombstones. The slots double as entries are added, up to max_entries, and
 * never shrink. Keys must have their padding zeroed, as BPF map keys do.
 * A value pointer stays valid until the next kmap_put() or kmap_del() on
 * the same table (either may move entries). Keys handed to kmap_sweep()'s fn
 * and values are 8-byte aligned: read them through their structs.
 */

struct kmap;

/* Makes a table for up to max_entries entries. NULL on allocation failure. */
struct kmap *kmap_new(size_t key_size, size_t val_size, unsigned max_entries);
void kmap_free(struct kmap *m);

/* The value of key, or NULL. */
void *kmap_get(const struct kmap *m, const void *key);

/*
 * The value of key, created zeroed if absent (*ret_created 1). NULL when key
 * is absent and the table holds max_entries, or cannot grow (no memory).
 */
void *kmap_put(struct kmap *m, const void *key, int *ret_created);

/* Removes key if present. */
void kmap_del(struct kmap *m, const void *key);

unsigned kmap_count(const struct kmap *m);

/* Removes every entry. */
void kmap_clear(struct kmap *m);

/*
 * Calls fn for each entry; entries for which fn returns 0 are removed
 * (safely: removal happens after the walk). Order is unspecified.
 */
void kmap_sweep(struct kmap *m, int (*fn)(const void *key, void *val, void *arg), void *arg);

#endif
