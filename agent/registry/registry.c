/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/registry/registry.h"

#define REGISTRY_NONE UINT32_MAX
#define FAMILY_BUCKETS 256
#define SKIP_SLOTS 16

struct family {
	char *name;
	char *help;
	enum metric_type type;
	struct family *next;
};

/* A series' identity is its family's name and its labels: no key of its own
 * (at a thousand mesh peers it was a tenth of the registry's memory). */
struct rseries {
	struct series pub;
	uint32_t hash; /* of name and labels */
	uint32_t next; /* bucket chain */
	uint64_t last_raw;
	unsigned char bits;
	int used;
};

struct sample_sink {
	struct registry *reg;
	unsigned skip_slot;
};

struct registry {
	unsigned max_series;
	int64_t expiry_ms;
	int64_t now_ms;

	struct rseries *slots;
	uint32_t nslots, alloc;
	uint32_t free_head; /* free list threaded through next */
	unsigned count;
	uint64_t dropped;

	uint32_t *buckets;
	uint32_t nbuckets;

	uint32_t *order; /* live series sorted for rendering */
	uint32_t norder;
	int order_dirty;

	struct family *families[FAMILY_BUCKETS];

	struct {
		const char *collector;
		uint64_t count;
	} skips[SKIP_SLOTS];

	struct sample_sink sink;
	struct strbuf labels; /* of the sample being added */
};

#define FNV_OFFSET 2166136261u

/* FNV-1a, from h on: short keys, no adversary, cheap. */
static uint32_t hash_str(uint32_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619u;
	}
	return h;
}

/* A series' hash: its name, a byte no name holds, its labels. */
static uint32_t hash_series(const char *name, const char *labels)
{
	return hash_str((hash_str(FNV_OFFSET, name) ^ '{') * 16777619u, labels);
}

struct registry *registry_new(unsigned max_series, int64_t expiry_ms)
{
	struct registry *reg = calloc(1, sizeof(*reg));

	if (!reg)
		return NULL;
	reg->max_series = max_series ? max_series : 1;
	reg->expiry_ms = expiry_ms;
	reg->free_head = REGISTRY_NONE;
	reg->nbuckets = 64;
	while (reg->nbuckets < reg->max_series && reg->nbuckets < (1u << 24))
		reg->nbuckets <<= 1;
	reg->buckets = malloc(reg->nbuckets * sizeof(*reg->buckets));
	if (!reg->buckets) {
		free(reg);
		return NULL;
	}
	memset(reg->buckets, 0xff, reg->nbuckets * sizeof(*reg->buckets));
	reg->sink.reg = reg;
	strbuf_init(&reg->labels);
	return reg;
}

void registry_free(struct registry *reg)
{
	if (!reg)
		return;
	for (uint32_t i = 0; i < reg->nslots; i++)
		if (reg->slots[i].used)
			free((char *)reg->slots[i].pub.labels);
	for (unsigned b = 0; b < FAMILY_BUCKETS; b++)
		for (struct family *f = reg->families[b], *n; f; f = n) {
			n = f->next;
			free(f->name);
			free(f->help);
			free(f);
		}
	free(reg->slots);
	free(reg->buckets);
	free(reg->order);
	strbuf_release(&reg->labels);
	free(reg);
}

void registry_begin_tick(struct registry *reg, int64_t now_ms)
{
	reg->now_ms = now_ms;
}

int64_t registry_now(const struct registry *reg)
{
	return reg->now_ms;
}

struct sample_sink *registry_sink(struct registry *reg, const char *collector)
{
	unsigned i;

	for (i = 0; i < SKIP_SLOTS && reg->skips[i].collector; i++)
		if (reg->skips[i].collector == collector ||
		    strcmp(reg->skips[i].collector, collector) == 0)
			break;
	if (i == SKIP_SLOTS)
		i = SKIP_SLOTS - 1; /* more collectors than slots: share the last */
	else if (!reg->skips[i].collector)
		reg->skips[i].collector = collector;
	reg->sink.skip_slot = i;
	return &reg->sink;
}

uint64_t registry_skipped(const struct registry *reg, const char *collector)
{
	for (unsigned i = 0; i < SKIP_SLOTS && reg->skips[i].collector; i++)
		if (strcmp(reg->skips[i].collector, collector) == 0)
			return reg->skips[i].count;
	return 0;
}

void sample_skip(struct sample_sink *out)
{
	out->reg->skips[out->skip_slot].count++;
}

unsigned registry_count(const struct registry *reg)
{
	return reg->count;
}

uint64_t registry_dropped(const struct registry *reg)
{
	return reg->dropped;
}

static struct family *family_get(struct registry *reg, const struct metric_desc *desc)
{
	uint32_t b = hash_str(FNV_OFFSET, desc->name) % FAMILY_BUCKETS;
	struct family *f;

	for (f = reg->families[b]; f; f = f->next)
		if (strcmp(f->name, desc->name) == 0)
			return f->type == desc->type ? f : NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->name = strdup(desc->name);
	f->help = strdup(desc->help ? desc->help : "");
	if (!f->name || !f->help) {
		free(f->name);
		free(f->help);
		free(f);
		return NULL;
	}
	f->type = desc->type;
	f->next = reg->families[b];
	reg->families[b] = f;
	return f;
}

/* Text format 0.0.4: label values escape backslash, double quote and newline. */
static void labels_format(struct strbuf *sb, const struct label *labels, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (i)
			strbuf_addch(sb, ',');
		strbuf_addstr(sb, labels[i].key);
		strbuf_add(sb, "=\"", 2);
		for (const char *v = labels[i].value ? labels[i].value : ""; *v; v++) {
			if (*v == '\\' || *v == '"')
				strbuf_addch(sb, '\\');
			if (*v == '\n')
				strbuf_add(sb, "\\n", 2);
			else
				strbuf_addch(sb, *v);
		}
		strbuf_addch(sb, '"');
	}
}

static struct rseries *series_lookup(struct registry *reg, const char *name, const char *labels,
				     uint32_t h)
{
	for (uint32_t i = reg->buckets[h & (reg->nbuckets - 1)]; i != REGISTRY_NONE;
	     i = reg->slots[i].next) {
		const struct series *s = &reg->slots[i].pub;

		if (reg->slots[i].hash == h && strcmp(s->name, name) == 0 &&
		    strcmp(s->labels, labels) == 0)
			return &reg->slots[i];
	}
	return NULL;
}

static int slot_alloc(struct registry *reg, uint32_t *ret_idx)
{
	if (reg->free_head != REGISTRY_NONE) {
		*ret_idx = reg->free_head;
		reg->free_head = reg->slots[*ret_idx].next;
		return 0;
	}
	if (reg->nslots == reg->alloc) {
		uint32_t nalloc = reg->alloc ? reg->alloc * 2 : 256;
		struct rseries *ns = realloc(reg->slots, nalloc * sizeof(*ns));
		uint32_t *no = realloc(reg->order, nalloc * sizeof(*no));

		if (ns)
			reg->slots = ns;
		if (no)
			reg->order = no;
		if (!ns || !no)
			return -ENOMEM;
		reg->alloc = nalloc;
	}
	*ret_idx = reg->nslots++;
	return 0;
}

/* Finds or creates the series for desc and labels; NULL with *err set. */
static struct rseries *series_get(struct registry *reg, const struct metric_desc *desc,
				  const struct label *labels, size_t n, int *err)
{
	struct family *fam;
	struct rseries *s;
	uint32_t h, idx;

	strbuf_reset(&reg->labels);
	labels_format(&reg->labels, labels, n);
	if (reg->labels.failed) {
		*err = -ENOMEM;
		return NULL;
	}
	h = hash_series(desc->name, reg->labels.buf);
	s = series_lookup(reg, desc->name, reg->labels.buf, h);
	if (s)
		return s;
	if (reg->count >= reg->max_series) {
		reg->dropped++;
		*err = -ENOSPC;
		return NULL;
	}
	fam = family_get(reg, desc);
	if (!fam) {
		*err = -EINVAL;
		return NULL;
	}
	*err = slot_alloc(reg, &idx);
	if (*err < 0)
		return NULL;
	s = &reg->slots[idx];
	memset(s, 0, sizeof(*s));
	s->pub.labels = strdup(reg->labels.buf);
	if (!s->pub.labels) {
		s->next = reg->free_head;
		reg->free_head = idx;
		*err = -ENOMEM;
		return NULL;
	}
	s->pub.name = fam->name;
	s->pub.help = fam->help;
	s->pub.type = fam->type;
	s->pub.last_ms = INT64_MIN;
	s->hash = h;
	s->bits = desc->bits;
	s->used = 1;
	s->next = reg->buckets[h & (reg->nbuckets - 1)];
	reg->buckets[h & (reg->nbuckets - 1)] = idx;
	reg->count++;
	reg->order_dirty = 1;
	return s;
}

static double desc_scale(const struct metric_desc *desc)
{
	return desc->scale != 0 ? desc->scale : 1.0;
}

/*
 * How far a counter moved since the last reading. A reading below the last
 * one is a wrap when the counter is narrower than 64 bits and the distance
 * across the wrap is plausible (under half the range); otherwise the source
 * was reset and has counted raw since.
 */
static uint64_t counter_delta(uint64_t last, uint64_t raw, unsigned bits)
{
	uint64_t range;

	if (raw >= last)
		return raw - last;
	if (bits == 0 || bits >= 64)
		return raw;
	range = (uint64_t)1 << bits;
	if (last < range && range - last + raw <= range / 2)
		return range - last + raw;
	return raw;
}

int sample_counter(struct sample_sink *out, const struct metric_desc *desc,
		   const struct label *labels, size_t n_labels, uint64_t raw)
{
	struct registry *reg = out->reg;
	double scale = desc_scale(desc);
	struct rseries *s;
	int err = 0;

	if (desc->type != METRIC_COUNTER && desc->type != METRIC_HISTOGRAM)
		return -EINVAL;
	s = series_get(reg, desc, labels, n_labels, &err);
	if (!s)
		return err;
	if (s->pub.last_ms == reg->now_ms)
		return 0; /* reported twice in one tick: the first reading stands */
	if (s->pub.last_ms == INT64_MIN) {
		s->pub.value = (double)raw * scale;
	} else {
		double d = (double)counter_delta(s->last_raw, raw, s->bits) * scale;
		int64_t dt = reg->now_ms - s->pub.last_ms;

		s->pub.value += d;
		s->pub.rate = dt > 0 ? d * 1000.0 / (double)dt : 0.0;
		s->pub.has_rate = 1;
	}
	s->last_raw = raw;
	s->pub.last_ms = reg->now_ms;
	return 0;
}

int sample_gauge(struct sample_sink *out, const struct metric_desc *desc,
		 const struct label *labels, size_t n_labels, double value)
{
	struct rseries *s;
	int err = 0;

	if (desc->type != METRIC_GAUGE)
		return -EINVAL;
	s = series_get(out->reg, desc, labels, n_labels, &err);
	if (!s)
		return err;
	s->pub.value = value * desc_scale(desc);
	s->pub.last_ms = out->reg->now_ms;
	return 0;
}

static void series_remove(struct registry *reg, uint32_t idx)
{
	struct rseries *s = &reg->slots[idx];
	uint32_t *link = &reg->buckets[s->hash & (reg->nbuckets - 1)];

	while (*link != idx)
		link = &reg->slots[*link].next;
	*link = s->next;
	free((char *)s->pub.labels);
	s->used = 0;
	s->next = reg->free_head;
	reg->free_head = idx;
	reg->count--;
	reg->order_dirty = 1;
}

void registry_end_tick(struct registry *reg)
{
	for (uint32_t i = 0; i < reg->nslots; i++)
		if (reg->slots[i].used && reg->now_ms - reg->slots[i].pub.last_ms > reg->expiry_ms)
			series_remove(reg, i);
}

/*
 * Buckets of one histogram series differ only in "le", their last label:
 * they are ordered by its value as a number (0.002 before 0.016, +Inf last),
 * as the text format lists them.
 */
static int le_cmp(const struct series *x, const struct series *y)
{
	const char *lx = strstr(x->labels, "le=\""), *ly = strstr(y->labels, "le=\"");
	double vx, vy;

	if (!lx || !ly || lx - x->labels != ly - y->labels ||
	    strncmp(x->labels, y->labels, (size_t)(lx - x->labels)) != 0)
		return strcmp(x->labels, y->labels);
	vx = strtod(lx + 4, NULL);
	vy = strtod(ly + 4, NULL);
	return (vx > vy) - (vx < vy);
}

static int order_cmp(const void *a, const void *b, void *arg)
{
	const struct registry *reg = arg;
	const struct series *x = &reg->slots[*(const uint32_t *)a].pub;
	const struct series *y = &reg->slots[*(const uint32_t *)b].pub;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return x->type == METRIC_HISTOGRAM ? le_cmp(x, y) : strcmp(x->labels, y->labels);
}

int registry_foreach(struct registry *reg, int (*fn)(struct series *s, void *arg), void *arg)
{
	if (reg->order_dirty) {
		reg->norder = 0;
		for (uint32_t i = 0; i < reg->nslots; i++)
			if (reg->slots[i].used)
				reg->order[reg->norder++] = i;
		qsort_r(reg->order, reg->norder, sizeof(*reg->order), order_cmp, reg);
		reg->order_dirty = 0;
	}
	for (uint32_t i = 0; i < reg->norder; i++) {
		struct rseries *s = &reg->slots[reg->order[i]];
		int r;

		if (s->pub.last_ms != reg->now_ms)
			continue;
		r = fn(&s->pub, arg);
		if (r)
			return r;
	}
	return 0;
}

void registry_forget_store_ids(struct registry *reg)
{
	for (uint32_t i = 0; i < reg->nslots; i++)
		reg->slots[i].pub.store_id = 0;
}
