/* SPDX-License-Identifier: MIT */
#include <bpf/btf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector/bpf/drop_reasons.h"

struct drop_reason {
	unsigned value;
	char *name; /* prefix stripped */
};

/* Sorted by value, for drop_reasons_name() once per reason and tick. */
struct drop_reasons {
	struct drop_reason *v;
	size_t n;
};

static int reason_cmp(const void *a, const void *b)
{
	const struct drop_reason *x = a, *y = b;

	return (x->value > y->value) - (x->value < y->value);
}

/* SKB_DROP_REASON_ for the drops, SKB_ for the two values that are not (NOT_DROPPED_YET, CONSUMED). */
static const char *reason_strip(const char *name)
{
	static const char *const prefixes[] = { "SKB_DROP_REASON_", "SKB_" };

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t len = strlen(prefixes[i]);

		if (strncmp(name, prefixes[i], len) == 0)
			return name + len;
	}
	return name;
}

int drop_reasons_from_btf(const struct btf *btf, struct drop_reasons **ret_reasons)
{
	struct drop_reasons *reasons = NULL;
	const struct btf_enum *e;
	const struct btf_type *t;
	unsigned n;
	int err, id;

	id = btf__find_by_name_kind(btf, "skb_drop_reason", BTF_KIND_ENUM);
	if (id < 0) {
		err = id;
		goto out;
	}
	t = btf__type_by_id(btf, id);
	n = btf_vlen(t);
	e = btf_enum(t);
	reasons = calloc(1, sizeof(*reasons));
	if (!reasons) {
		err = -ENOMEM;
		goto out;
	}
	/* one spare, as calloc(0) may return NULL */
	reasons->v = calloc(n + 1, sizeof(*reasons->v));
	if (!reasons->v) {
		err = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < n; i++) {
		const char *name = btf__name_by_offset(btf, e[i].name_off);

		if (!name) {
			err = -EINVAL;
			goto out;
		}
		reasons->v[i].value = (unsigned)e[i].val;
		reasons->v[i].name = strdup(reason_strip(name));
		if (!reasons->v[i].name) {
			err = -ENOMEM;
			goto out;
		}
		reasons->n++;
	}
	qsort(reasons->v, reasons->n, sizeof(*reasons->v), reason_cmp);
	*ret_reasons = reasons;
	reasons = NULL;
	err = 0;
out:
	drop_reasons_free(reasons);
	return err;
}

int drop_reasons_load(struct drop_reasons **ret_reasons)
{
	struct btf *btf = btf__load_vmlinux_btf();
	int err = btf ? drop_reasons_from_btf(btf, ret_reasons) : -errno;

	btf__free(btf);
	return err;
}

const char *drop_reasons_name(const struct drop_reasons *reasons, unsigned value)
{
	const struct drop_reason key = { .value = value };
	const struct drop_reason *r;

	r = bsearch(&key, reasons->v, reasons->n, sizeof(*reasons->v), reason_cmp);
	return r ? r->name : NULL;
}

int drop_reasons_value(const struct drop_reasons *reasons, const char *name, unsigned *ret_value)
{
	for (size_t i = 0; i < reasons->n; i++) {
		if (strcmp(reasons->v[i].name, name) == 0) {
			*ret_value = reasons->v[i].value;
			return 0;
		}
	}
	return -ENOENT;
}

void drop_reasons_free(struct drop_reasons *reasons)
{
	if (!reasons)
		return;
	for (size_t i = 0; i < reasons->n; i++)
		free(reasons->v[i].name);
	free(reasons->v);
	free(reasons);
}
