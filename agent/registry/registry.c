/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/registry/registry.h"

#define REGISTRY_NONE UINT32_MAX
#define FAMILY_BUCKETS 256
#define SKIP_SLOTS 16
#define NAME_MAX_LEN 256
/* an entry of the render order: a slot, and which of its parts (a
 * histogram's buckets, _count or _sum, each under its own family name) */
#define ORDER_PART_BITS 2
#define ORDER_SLOTS_MAX (UINT32_MAX >> ORDER_PART_BITS)

struct family {
	char *name;
	char *help;
	enum metric_type type;
	struct family *next;
};

/* One counter of a histogram entry. */
struct hpart {
	double value, rate;
	uint64_t last_raw;
	int64_t store_id;
};

/*
 * A histogram's readings under one entry, not one entry a bucket: a
 * thousand mesh peers' RTT histograms were 19,000 of the registry's 22,000
 * entries, each with its own label text. The parts: bounds->n + 1 buckets
 * (+Inf last), then _count, then _sum.
 */
struct hist {
	const struct histogram_bounds *bounds;
	const struct family *count, *sum; /* the buckets' is the entry's own */
	struct hpart part[];
};

/* A series' identity is its family's name and its labels: no key of its own
 * (at a thousand mesh peers it was a tenth of the registry's memory). A
 * histogram entry's name is its _bucket family's, its labels those of all
 * its series but "le". */
struct rseries {
	struct series pub;
	uint32_t hash; /* of name and labels */
	uint32_t next; /* bucket chain */
	uint64_t last_raw;
	struct hist *hist; /* NULL: a plain series */
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
	unsigned count; /* series, a histogram's each */
	uint64_t dropped;

	uint32_t *buckets;
	uint32_t nbuckets;

	uint32_t *order; /* live entries' parts sorted for rendering */
	uint32_t norder, order_alloc;
	uint32_t nparts; /* of the live entries: the order's length */
	int order_dirty;

	struct family *families[FAMILY_BUCKETS];

	struct {
		const char *collector;
		uint64_t count;
	} skips[SKIP_SLOTS];

	struct sample_sink sink;
	struct strbuf labels; /* of the sample being added */
	struct strbuf le_labels; /* of the histogram bucket being visited */
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
	strbuf_init(&reg->le_labels);
	return reg;
}

void registry_free(struct registry *reg)
{
	if (!reg)
		return;
	for (uint32_t i = 0; i < reg->nslots; i++)
		if (reg->slots[i].used) {
			free((char *)reg->slots[i].pub.labels);
			free(reg->slots[i].hist);
		}
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
	strbuf_release(&reg->le_labels);
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
	if (reg->nslots == ORDER_SLOTS_MAX)
		return -ENOSPC;
	if (reg->nslots == reg->alloc) {
		uint32_t nalloc = reg->alloc ? reg->alloc * 2 : 256;
		struct rseries *ns = realloc(reg->slots, nalloc * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		reg->slots = ns;
		reg->alloc = nalloc;
	}
	*ret_idx = reg->nslots++;
	return 0;
}

/* Room in the order for parts more: registry_foreach() never allocates. */
static int order_reserve(struct registry *reg, uint32_t parts)
{
	uint32_t want = reg->nparts + parts, nalloc = reg->order_alloc ? reg->order_alloc : 256;
	uint32_t *no;

	if (want <= reg->order_alloc)
		return 0;
	while (nalloc < want)
		nalloc *= 2;
	no = realloc(reg->order, nalloc * sizeof(*no));
	if (!no)
		return -ENOMEM;
	reg->order = no;
	reg->order_alloc = nalloc;
	return 0;
}

/* name and suffix into buf of NAME_MAX_LEN. Returns 0 or -EINVAL. */
static int name_suffixed(char *buf, const char *name, const char *suffix)
{
	size_t n = strlen(name), k = strlen(suffix);

	if (n + k >= NAME_MAX_LEN)
		return -EINVAL;
	memcpy(buf, name, n);
	memcpy(buf + n, suffix, k + 1);
	return 0;
}

/* The family desc->name + suffix, of desc's help and type; NULL if none. */
static struct family *family_suffixed(struct registry *reg, const struct metric_desc *desc,
				      const char *suffix)
{
	char name[NAME_MAX_LEN];
	struct metric_desc d = *desc;

	d.name = name;
	return name_suffixed(name, desc->name, suffix) == 0 ? family_get(reg, &d) : NULL;
}

/* Series an entry of histogram bounds b (NULL: a plain series) shows, and
 * its parts in the render order. */
static unsigned bounds_width(const struct histogram_bounds *b)
{
	return b ? b->n + 3 : 1;
}

static unsigned bounds_parts(const struct histogram_bounds *b)
{
	return b ? 3 : 1;
}

/* A histogram entry's parts for b, of family desc (named X); NULL on failure. */
static struct hist *hist_new(struct registry *reg, const struct metric_desc *desc,
			     const struct histogram_bounds *b)
{
	struct hist *h = calloc(1, sizeof(*h) + bounds_width(b) * sizeof(h->part[0]));

	if (!h)
		return NULL;
	h->bounds = b;
	h->count = family_suffixed(reg, desc, "_count");
	h->sum = family_suffixed(reg, desc, "_sum");
	if (!h->count || !h->sum) {
		free(h);
		return NULL;
	}
	return h;
}

static unsigned entry_width(const struct rseries *s)
{
	return bounds_width(s->hist ? s->hist->bounds : NULL);
}

static unsigned entry_parts(const struct rseries *s)
{
	return bounds_parts(s->hist ? s->hist->bounds : NULL);
}

/*
 * Finds or creates the entry for desc and labels: a plain series, or with
 * hist_desc (the family X of desc, named X_bucket) a histogram of bounds b.
 * NULL with *err set.
 */
static struct rseries *series_get(struct registry *reg, const struct metric_desc *desc,
				  const struct label *labels, size_t n,
				  const struct metric_desc *hist_desc,
				  const struct histogram_bounds *b, int *err)
{
	const struct histogram_bounds *kind = hist_desc ? b : NULL;
	unsigned width = bounds_width(kind);
	struct hist *hist = NULL;
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
	if (s && (!s->hist != !hist_desc || (s->hist && s->hist->bounds != b))) {
		*err = -EINVAL; /* a histogram's name and labels as a plain series' */
		return NULL;
	}
	if (s)
		return s;
	if (reg->count + width > reg->max_series) {
		reg->dropped += width;
		*err = -ENOSPC;
		return NULL;
	}
	fam = family_get(reg, desc);
	if (fam && hist_desc)
		hist = hist_new(reg, hist_desc, b);
	if (!fam || (hist_desc && !hist)) {
		*err = -EINVAL;
		return NULL;
	}
	*err = order_reserve(reg, bounds_parts(kind));
	if (*err == 0)
		*err = slot_alloc(reg, &idx);
	if (*err < 0) {
		free(hist);
		return NULL;
	}
	s = &reg->slots[idx];
	memset(s, 0, sizeof(*s));
	s->pub.labels = strdup(reg->labels.buf);
	if (!s->pub.labels) {
		s->next = reg->free_head;
		reg->free_head = idx;
		free(hist);
		*err = -ENOMEM;
		return NULL;
	}
	s->hist = hist;
	s->pub.name = fam->name;
	s->pub.help = fam->help;
	s->pub.type = fam->type;
	s->pub.last_ms = INT64_MIN;
	s->hash = h;
	s->bits = desc->bits;
	s->used = 1;
	s->next = reg->buckets[h & (reg->nbuckets - 1)];
	reg->buckets[h & (reg->nbuckets - 1)] = idx;
	reg->count += width;
	reg->nparts += entry_parts(s);
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

/*
 * Takes reading raw of a counter into its total (scaled) and its rate; the
 * last reading, *last_raw, was at last_ms (INT64_MIN: none, and no rate).
 */
static void counter_take(const struct registry *reg, int64_t last_ms, unsigned bits, double scale,
			 uint64_t raw, double *value, double *rate, uint64_t *last_raw)
{
	if (last_ms == INT64_MIN) {
		*value = (double)raw * scale;
	} else {
		double d = (double)counter_delta(*last_raw, raw, bits) * scale;
		int64_t dt = reg->now_ms - last_ms;

		*value += d;
		*rate = dt > 0 ? d * 1000.0 / (double)dt : 0.0;
	}
	*last_raw = raw;
}

int sample_counter(struct sample_sink *out, const struct metric_desc *desc,
		   const struct label *labels, size_t n_labels, uint64_t raw)
{
	struct registry *reg = out->reg;
	struct rseries *s;
	int err = 0;

	if (desc->type != METRIC_COUNTER && desc->type != METRIC_HISTOGRAM)
		return -EINVAL;
	s = series_get(reg, desc, labels, n_labels, NULL, NULL, &err);
	if (!s)
		return err;
	if (s->pub.last_ms == reg->now_ms)
		return 0; /* reported twice in one tick: the first reading stands */
	counter_take(reg, s->pub.last_ms, s->bits, desc_scale(desc), raw, &s->pub.value,
		     &s->pub.rate, &s->last_raw);
	s->pub.has_rate = s->pub.last_ms != INT64_MIN;
	s->pub.last_ms = reg->now_ms;
	return 0;
}

int sample_histogram(struct sample_sink *out, const struct metric_desc *desc,
		     const struct label *labels, size_t n_labels, const struct histogram_bounds *b,
		     const uint64_t *buckets, uint64_t sum, uint64_t count)
{
	struct registry *reg = out->reg;
	char name[NAME_MAX_LEN];
	struct metric_desc bucket = *desc;
	struct rseries *s;
	int err = 0;

	bucket.name = name;
	if (desc->type != METRIC_HISTOGRAM || name_suffixed(name, desc->name, "_bucket") < 0)
		return -EINVAL;
	s = series_get(reg, &bucket, labels, n_labels, desc, b, &err);
	if (!s)
		return err;
	if (s->pub.last_ms == reg->now_ms)
		return 0; /* as sample_counter() */
	for (unsigned i = 0; i < bounds_width(b); i++) {
		struct hpart *p = &s->hist->part[i];
		uint64_t raw = i <= b->n ? buckets[i] : i == b->n + 1 ? count : sum;

		counter_take(reg, s->pub.last_ms, s->bits, i == b->n + 2 ? desc_scale(desc) : 1.0,
			     raw, &p->value, &p->rate, &p->last_raw);
	}
	s->pub.has_rate = s->pub.last_ms != INT64_MIN;
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
	s = series_get(out->reg, desc, labels, n_labels, NULL, NULL, &err);
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
	reg->count -= entry_width(s);
	reg->nparts -= entry_parts(s);
	free((char *)s->pub.labels);
	free(s->hist);
	s->used = 0;
	s->next = reg->free_head;
	reg->free_head = idx;
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

/* The family name an order entry sorts by: a histogram's parts go under
 * _bucket, _count and _sum, as their series did one entry each. */
static const char *part_name(const struct rseries *s, unsigned part)
{
	if (!s->hist || part == 0)
		return s->pub.name;
	return part == 1 ? s->hist->count->name : s->hist->sum->name;
}

static int order_cmp(const void *a, const void *b, void *arg)
{
	const struct registry *reg = arg;
	uint32_t ea = *(const uint32_t *)a, eb = *(const uint32_t *)b;
	const struct rseries *x = &reg->slots[ea >> ORDER_PART_BITS];
	const struct rseries *y = &reg->slots[eb >> ORDER_PART_BITS];
	const char *nx = part_name(x, ea & ((1u << ORDER_PART_BITS) - 1));
	const char *ny = part_name(y, eb & ((1u << ORDER_PART_BITS) - 1));
	int c = nx == ny ? 0 : strcmp(nx, ny);

	if (c)
		return c;
	if (x->pub.type == METRIC_HISTOGRAM && !x->hist && !y->hist)
		return le_cmp(&x->pub, &y->pub);
	return strcmp(x->pub.labels, y->pub.labels);
}

/* fn on v with the values of part p, keeping the store id fn gives it. */
static int part_visit(struct series *v, struct hpart *p, int (*fn)(struct series *s, void *arg),
		      void *arg)
{
	int r;

	v->value = p->value;
	v->rate = p->rate;
	v->store_id = p->store_id;
	r = fn(v, arg);
	p->store_id = v->store_id;
	return r;
}

/* fn on the series of one part of histogram entry s, made for the call:
 * its buckets with their "le" label last, or its _count, or its _sum. */
static int hist_visit(struct registry *reg, struct rseries *s, unsigned part,
		      int (*fn)(struct series *s, void *arg), void *arg)
{
	const struct histogram_bounds *b = s->hist->bounds;
	struct series v = s->pub;
	int r = 0;

	if (part) {
		v.name = part_name(s, part);
		return part_visit(&v, &s->hist->part[b->n + part], fn, arg);
	}
	for (unsigned i = 0; i <= b->n && r == 0; i++) {
		strbuf_reset(&reg->le_labels);
		strbuf_addstr(&reg->le_labels, s->pub.labels);
		if (*s->pub.labels)
			strbuf_addch(&reg->le_labels, ',');
		strbuf_add(&reg->le_labels, "le=\"", 4);
		strbuf_addstr(&reg->le_labels, b->le[i]);
		strbuf_addch(&reg->le_labels, '"');
		if (reg->le_labels.failed)
			return -ENOMEM;
		v.labels = reg->le_labels.buf;
		r = part_visit(&v, &s->hist->part[i], fn, arg);
	}
	return r;
}

int registry_foreach(struct registry *reg, int (*fn)(struct series *s, void *arg), void *arg)
{
	if (reg->order_dirty) {
		reg->norder = 0;
		for (uint32_t i = 0; i < reg->nslots; i++) {
			if (!reg->slots[i].used)
				continue;
			for (unsigned p = 0; p < entry_parts(&reg->slots[i]); p++)
				reg->order[reg->norder++] = i << ORDER_PART_BITS | p;
		}
		qsort_r(reg->order, reg->norder, sizeof(*reg->order), order_cmp, reg);
		reg->order_dirty = 0;
	}
	for (uint32_t i = 0; i < reg->norder; i++) {
		struct rseries *s = &reg->slots[reg->order[i] >> ORDER_PART_BITS];
		unsigned part = reg->order[i] & ((1u << ORDER_PART_BITS) - 1);
		int r;

		if (s->pub.last_ms != reg->now_ms)
			continue;
		r = s->hist ? hist_visit(reg, s, part, fn, arg) : fn(&s->pub, arg);
		if (r)
			return r;
	}
	return 0;
}

void registry_forget_store_ids(struct registry *reg)
{
	for (uint32_t i = 0; i < reg->nslots; i++) {
		struct hist *h = reg->slots[i].used ? reg->slots[i].hist : NULL;

		reg->slots[i].pub.store_id = 0;
		for (unsigned p = 0; h && p < h->bounds->n + 3; p++)
			h->part[p].store_id = 0;
	}
}
