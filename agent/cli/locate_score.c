/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cli/locate_score.h"

const char *const locate_kind_names[] = { "host", "port", "hop" };

void locate_instance_host(const char *instance, char *buf, size_t len)
{
	const char *colon = strrchr(instance, ':');
	size_t n = strlen(instance);

	if (instance[0] == '[' && colon && colon[-1] == ']')
		snprintf(buf, len, "%.*s", (int)(colon - instance - 2), instance + 1);
	else if (colon && strchr(instance, ':') == colon)
		snprintf(buf, len, "%.*s", (int)(colon - instance), instance);
	else
		snprintf(buf, len, "%.*s", (int)n, instance);
}

struct out {
	struct locate_suspect *s;
	int n, alloc;
};

static struct locate_suspect *out_add(struct out *o)
{
	if (o->n == o->alloc) {
		int alloc = o->alloc ? 2 * o->alloc : 16;
		struct locate_suspect *s = realloc(o->s, (size_t)alloc * sizeof(*s));

		if (!s)
			return NULL;
		o->s = s;
		o->alloc = alloc;
	}
	memset(&o->s[o->n], 0, sizeof(o->s[0]));
	return &o->s[o->n++];
}

/* Adds name to a comma-separated list once; "..." when it is full. */
static int reporter_add(char *list, const char *name)
{
	size_t len = strlen(list), n = strlen(name);
	const char *p = list;

	for (; (p = strstr(p, name)); p += n)
		if ((p == list || p[-1] == ',') && (p[n] == ',' || !p[n]))
			return 0;
	if (len + n + 5 > LOCATE_REPORTERS_LEN) {
		if (len < 3 || strcmp(list + len - 3, "...") != 0)
			snprintf(list + len, LOCATE_REPORTERS_LEN - len, ",...");
		return 1;
	}
	snprintf(list + len, LOCATE_REPORTERS_LEN - len, "%s%s", len ? "," : "", name);
	return 1;
}

static void first_seen(struct locate_suspect *s, int64_t ms)
{
	if (ms && (!s->first_ms || ms < s->first_ms))
		s->first_ms = ms;
}

/* Hosts: every peer named, by how many other nodes. */
static int score_hosts(const struct locate_input *in, struct out *o)
{
	char self[256];

	for (int i = 0; i < in->nblames; i++) {
		const struct locate_blame *b = &in->blames[i];
		struct locate_suspect *s = NULL;

		locate_instance_host(b->reporter, self, sizeof(self));
		if (strcmp(self, b->host) == 0)
			continue; /* a node does not blame itself */
		for (int k = 0; k < o->n && !s; k++)
			if (o->s[k].kind == LOCATE_HOST && strcmp(o->s[k].name, b->host) == 0)
				s = &o->s[k];
		if (!s && !(s = out_add(o)))
			return -ENOMEM;
		if (!s->name[0]) {
			s->kind = LOCATE_HOST;
			snprintf(s->name, sizeof(s->name), "%s", b->host);
		}
		s->failing += reporter_add(s->reporters, b->reporter);
		first_seen(s, b->first_ms);
	}
	/* the others of the nodes up, at least those that named it */
	for (int k = 0; k < o->n; k++) {
		struct locate_suspect *s = &o->s[k];

		s->of = in->nodes - 1 > s->failing ? in->nodes - 1 : s->failing;
		s->score = (double)s->failing / s->of;
	}
	return 0;
}

static int score_ports(const struct locate_input *in, struct out *o)
{
	for (int i = 0; i < in->nports; i++) {
		const struct locate_port *p = &in->ports[i];
		struct locate_suspect *s;

		if (!(p->errors > 0))
			continue;
		if (!(s = out_add(o)))
			return -ENOMEM;
		s->kind = LOCATE_PORT;
		snprintf(s->name, sizeof(s->name), "%s %s%s%s", p->node, p->interface,
			 p->neighbor ? " -> " : "", p->neighbor ? p->neighbor : "");
		s->failing = s->of = 1;
		s->errors = p->errors;
		s->score = p->errors / (p->errors + LOCATE_PORT_ERRORS_HALF);
		reporter_add(s->reporters, p->node);
		s->first_ms = p->first_ms;
	}
	return 0;
}

static int path_crosses(const struct locate_path *p, const char *hop)
{
	for (int h = 0; h < p->nhops; h++)
		if (strcmp(p->hops[h], hop) == 0)
			return 1;
	return 0;
}

/* Hops: each address a lossy path crosses, kept if no healthy path of the
 * same reporters crosses it and lossy paths of several nodes do. */
static int score_hops(const struct locate_input *in, struct out *o)
{
	int lossy = 0;

	for (int i = 0; i < in->npaths; i++)
		lossy += in->paths[i].lossy != 0;
	for (int i = 0; i < in->npaths; i++) {
		const struct locate_path *p = &in->paths[i];

		for (int h = 0; p->lossy && h < p->nhops; h++) {
			const char *hop = p->hops[h];
			struct locate_suspect s = { .kind = LOCATE_HOP, .of = lossy };
			int seen = 0, healthy = 0;

			for (int k = 0; k < o->n && !seen; k++)
				seen = o->s[k].kind == LOCATE_HOP && strcmp(o->s[k].name, hop) == 0;
			for (int j = 0; !seen && j < in->npaths; j++) {
				const struct locate_path *q = &in->paths[j];

				if (!path_crosses(q, hop))
					continue;
				if (!q->lossy) {
					healthy++;
					continue;
				}
				s.failing++;
				reporter_add(s.reporters, q->reporter);
				first_seen(&s, q->first_ms);
			}
			if (seen || healthy || s.failing == 0 ||
			    !strchr(s.reporters, ',')) /* one node's paths only */
				continue;
			snprintf(s.name, sizeof(s.name), "%s", hop);
			s.score = (double)s.failing / lossy;
			{
				struct locate_suspect *d = out_add(o);

				if (!d)
					return -ENOMEM;
				*d = s;
			}
		}
	}
	return 0;
}

static int cmp_suspect(const void *a, const void *b)
{
	const struct locate_suspect *x = a, *y = b;

	if (fabs(x->score - y->score) > 1e-9)
		return x->score > y->score ? -1 : 1;
	if (x->failing != y->failing)
		return x->failing > y->failing ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Same score, same count, same reporters: the data cannot tell them apart. */
static int inseparable(const struct locate_suspect *x, const struct locate_suspect *y)
{
	return fabs(x->score - y->score) <= 1e-9 && x->failing == y->failing && x->of == y->of &&
	       strcmp(x->reporters, y->reporters) == 0;
}

int locate_score(const struct locate_input *in, struct locate_suspect **ret, int *ret_n)
{
	struct out o = { 0 };
	int r, hosts, tie = 0;

	r = score_hosts(in, &o);
	/* hosts named by fewer nodes than the bound are not suspects */
	hosts = 0;
	for (int k = 0; !r && k < o.n; k++)
		if (o.s[k].failing >= LOCATE_MIN_REPORTERS)
			o.s[hosts++] = o.s[k];
	o.n = hosts;
	if (!r)
		r = score_ports(in, &o);
	if (!r)
		r = score_hops(in, &o);
	if (r < 0) {
		free(o.s);
		return r;
	}
	if (o.n)
		qsort(o.s, (size_t)o.n, sizeof(*o.s), cmp_suspect);
	for (int k = 1; k < o.n; k++)
		if (inseparable(&o.s[k - 1], &o.s[k]))
			o.s[k].tie = o.s[k - 1].tie ? o.s[k - 1].tie : (o.s[k - 1].tie = ++tie);
	*ret = o.s;
	*ret_n = o.n;
	return 0;
}
