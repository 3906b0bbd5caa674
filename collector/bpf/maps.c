/* SPDX-License-Identifier: MIT */
/*
 * maps: the probes' hash maps copied to user space whole each tick, and
 * what the copy says of their fill (collector/bpf/maps.h).
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>

#include "collector/bpf/maps.h"

int map_reader_init(struct map_reader *r, const struct bpf_map *map, int percpu, int ncpus)
{
	size_t v = bpf_map__value_size(map);

	r->fd = bpf_map__fd(map);
	r->name = bpf_map__name(map);
	r->key_size = bpf_map__key_size(map);
	/* per-CPU values come as one 8-byte-aligned slot per possible CPU */
	r->val_size = percpu ? ((v + 7) & ~(size_t)7) * (size_t)ncpus : v;
	r->max_entries = bpf_map__max_entries(map);
	r->keys = calloc(r->max_entries, r->key_size);
	r->vals = calloc(r->max_entries, r->val_size);
	return r->keys && r->vals ? 0 : -ENOMEM;
}

void map_reader_release(struct map_reader *r)
{
	free(r->keys);
	free(r->vals);
}

int map_reader_read(struct map_reader *r)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	uint64_t batch = 0;
	int first = 1, err;

	r->count = 0;
	for (;;) {
		__u32 n = r->max_entries - r->count;

		if (n == 0)
			return 0;
		err = bpf_map_lookup_batch(r->fd, first ? NULL : &batch, &batch,
					   (char *)r->keys + (size_t)r->count * r->key_size,
					   (char *)r->vals + (size_t)r->count * r->val_size, &n,
					   &opts);
		if (err < 0)
			err = -errno;
		r->count += n;
		first = 0;
		if (err == -ENOENT)
			return 0;
		/* 524 is the kernel's ENOTSUPP, which the batch calls return where
		 * a map type lacks them (include/linux/errno.h, not in uapi) */
		if (err == -EINVAL || err == -EOPNOTSUPP || err == -524)
			break;
		if (err < 0)
			return err;
	}
	/* no batch operations: walk the keys */
	r->count = 0;
	for (const void *prev = NULL; r->count < r->max_entries;) {
		char *k = (char *)r->keys + (size_t)r->count * r->key_size;

		if (bpf_map_get_next_key(r->fd, prev, k) < 0)
			break;
		if (bpf_map_lookup_elem(r->fd, k,
					(char *)r->vals + (size_t)r->count * r->val_size) == 0)
			r->count++;
		prev = k;
	}
	return 0;
}

void map_reader_delete(struct map_reader *r, const void *key)
{
	if (bpf_map_delete_elem(r->fd, key) == 0)
		r->deleted++;
}

void map_reader_emit(struct map_reader *r, struct sample_sink *out, int counts_made)
{
	static const struct metric_desc entries = {
		.name = "fabmon_bpf_map_entries",
		.help = "Entries in the probe's map at the last read.",
		.type = METRIC_GAUGE
	};
	static const struct metric_desc max = { .name = "fabmon_bpf_map_max_entries",
						.help = "Capacity of the probe's map.",
						.type = METRIC_GAUGE };
	static const struct metric_desc evicted = {
		.name = "fabmon_bpf_map_evicted_entries_total",
		.help = "Entries the kernel pushed out of the full LRU map before fabmon read them "
			"as idle: their last counts are lost (raise bpf_max_flows if this grows).",
		.type = METRIC_COUNTER
	};
	struct label l = { "map", r->name };

	if (r->fd < 0)
		return;
	(void)sample_gauge(out, &entries, &l, 1, r->count);
	(void)sample_gauge(out, &max, &l, 1, r->max_entries);
	if (counts_made) {
		/* made = deleted by us + evicted + still there; the running sum
		 * only ever rises, whatever the per-CPU read raced with */
		uint64_t gone =
			r->made > r->deleted + r->count ? r->made - r->deleted - r->count : 0;

		if (gone > r->evicted)
			r->evicted = gone;
		(void)sample_counter(out, &evicted, &l, 1, r->evicted);
	}
}
