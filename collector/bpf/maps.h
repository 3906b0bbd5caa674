/* SPDX-License-Identifier: MIT */
#ifndef FABMON_BPF_MAPS_H
#define FABMON_BPF_MAPS_H

#include <stddef.h>
#include <stdint.h>

#include "collector/collector.h"

/*
 * A BPF hash map read whole each tick, into buffers sized for all of it, so
 * that the tick's work walks a copy and makes no syscall an entry. Entry i
 * of the last read is map_reader_key(r, i) and map_reader_val(r, i).
 */
struct bpf_map;

struct map_reader {
	int fd; /* -1 until map_reader_init() */
	const char *name;
	size_t key_size, val_size; /* val_size: all CPUs for a per-CPU map */
	unsigned max_entries;
	void *keys, *vals;
	unsigned count; /* entries read this tick */
	uint64_t deleted; /* entries the collector deleted as idle */
	uint64_t made; /* entries the probe created (0: not counted for this map) */
	uint64_t evicted; /* monotonic: entries the kernel's LRU pushed out */
};

/*
 * Sizes r for map, which is loaded; percpu: its values are per CPU, for
 * ncpus possible CPUs. Returns 0, or -ENOMEM; either way
 * map_reader_release() frees what r holds.
 */
int map_reader_init(struct map_reader *r, const struct bpf_map *map, int percpu, int ncpus);

/* Frees r's buffers; a zeroed r is a no-op. */
void map_reader_release(struct map_reader *r);

/*
 * Reads every entry into r->keys/r->vals: batch lookups where the kernel has
 * them (5.6+), one key at a time otherwise. Returns 0 or -errno.
 */
int map_reader_read(struct map_reader *r);

/* Entry i's key (i < r->count): points into r, valid until the next read. */
static inline void *map_reader_key(const struct map_reader *r, unsigned i)
{
	return (char *)r->keys + (size_t)i * r->key_size;
}

/* Entry i's value, all CPUs' for a per-CPU map, one 8-byte-aligned slot each. */
static inline void *map_reader_val(const struct map_reader *r, unsigned i)
{
	return (char *)r->vals + (size_t)i * r->val_size;
}

/* Deletes an idle entry; counted so evictions can be told from deletions. */
void map_reader_delete(struct map_reader *r, const void *key);

/*
 * Emits the map's fill and capacity, labelled by its name, and, where
 * counts_made (the probe counts the entries it makes in r->made), the
 * entries the kernel evicted. Nothing for a map never initialised.
 */
void map_reader_emit(struct map_reader *r, struct sample_sink *out, int counts_made);

#endif
