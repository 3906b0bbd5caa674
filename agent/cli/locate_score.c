/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cli/locate_score.h"

const char *const locate_kind_names[] = { "host", "port", "hop", "link" };

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
		if (!b->self && strcmp(self, b->host) == 0)
			continue; /* a node blames itself only by its own word */
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
		s->self |= b->self;
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

/* Elements of a path whose hops are known: the node it starts from (its
 * host, idx 0), then its hops (idx even) and the links between two
 * consecutive ones (idx odd), a link named by its ends in sorted order so
 * that both directions are one link. The start counts because a host's
 * own access link loses its outbound paths as much as those towards it.
 * A hop that did not answer is no element, nor a link to it: every such
 * hop would be one name; a hop heard twice in a row is one hop, and no
 * link to itself. */
static int path_elements(const struct locate_path *p)
{
	return p->nhops ? 2 * p->nhops + 1 : 0;
}

/* Vertex v of p's walk: its start's host (v 0, into self), then its hops. */
static const char *path_vertex(const struct locate_path *p, int v, char *self, size_t len)
{
	if (v)
		return p->hops[v - 1];
	locate_instance_host(p->reporter, self, len);
	return self;
}

/* Element idx of p: 1 with its name in buf, or 0: none. */
static int path_element(const struct locate_path *p, int idx, char *buf, size_t len)
{
	char self[256];
	const char *a = path_vertex(p, idx / 2, self, sizeof(self)), *b = "";

	if (idx % 2) /* a link: its other end */
		b = path_vertex(p, idx / 2 + 1, self, sizeof(self));
	else if (idx) /* a hop: the one before, which it must not repeat */
		b = path_vertex(p, idx / 2 - 1, self, sizeof(self));
	if (strcmp(a, LOCATE_HOP_UNKNOWN) == 0 || strcmp(a, b) == 0 ||
	    (idx % 2 && strcmp(b, LOCATE_HOP_UNKNOWN) == 0))
		return 0;
	/* a name too long to hold is none: it would merge with another */
	if (!(idx % 2))
		return snprintf(buf, len, "%s", a) < (int)len;
	if (strcmp(a, b) > 0) {
		const char *t = a;

		a = b;
		b = t;
	}
	return snprintf(buf, len, "%s - %s", a, b) < (int)len;
}

/* The elements all paths cross, each once (interned by name), with what
 * crosses it: counted in one pass over the paths, whatever their number. */
struct element {
	char name[256];
	enum locate_kind kind;
	int lossy, healthy;
	int tested; /* a lossy path across it has a clean sibling */
	int end; /* a path's start or peer, or the link to one: every sibling crosses it */
	int nodes, lossy_nodes; /* other nodes whose paths cross it, whose lossy paths do */
	const char *last, *last_lossy; /* the node counted last in each */
	int suspect; /* its suspect's index + 1; -1: not one */
};

struct elements {
	struct element *e;
	int n, cap; /* cap: a power of two, over twice the elements */
	int *slot; /* hash slot -> element index + 1 */
	int *ids; /* per path, its elements' indices (path_elements each) */
};

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static int intern(struct elements *es, const char *name, enum locate_kind kind)
{
	uint32_t i = name_hash(name) & (uint32_t)(es->cap - 1);

	for (; es->slot[i]; i = (i + 1) & (uint32_t)(es->cap - 1))
		if (strcmp(es->e[es->slot[i] - 1].name, name) == 0)
			return es->slot[i] - 1;
	snprintf(es->e[es->n].name, sizeof(es->e[0].name), "%s", name);
	es->e[es->n].kind = kind;
	es->slot[i] = ++es->n;
	return es->n - 1;
}

static int cmp_reporter(const void *a, const void *b)
{
	return strcmp((*(const struct locate_path *const *)a)->reporter,
		      (*(const struct locate_path *const *)b)->reporter);
}

/* Counts node once for an element: the paths come node by node. */
static int node_once(const char **last, const char *node)
{
	if (*last && strcmp(*last, node) == 0)
		return 0;
	*last = node;
	return 1;
}

/* Interns every path's elements (es->ids, in the paths' order) and counts
 * what crosses each, visiting the paths node by node so that a node is
 * counted once an element. 0 or -ENOMEM. */
static int elements_build(const struct locate_input *in, struct elements *es)
{
	const struct locate_path **order = calloc((size_t)in->npaths + 1, sizeof(*order));
	int *off = calloc((size_t)in->npaths + 1, sizeof(*off));
	char name[256];
	int total = 0, r = -ENOMEM;

	for (int i = 0; i < in->npaths; i++) {
		total += path_elements(&in->paths[i]);
		if (order && off) {
			order[i] = &in->paths[i];
			off[i + 1] = total;
		}
	}
	for (es->cap = 16; es->cap < 2 * total; es->cap *= 2)
		;
	es->e = calloc((size_t)total + 1, sizeof(*es->e));
	es->slot = calloc((size_t)es->cap, sizeof(*es->slot));
	es->ids = calloc((size_t)total + 1, sizeof(*es->ids));
	if (!es->e || !es->slot || !es->ids || !order || !off)
		goto out;
	if (in->npaths)
		qsort(order, (size_t)in->npaths, sizeof(*order), cmp_reporter);
	for (int j = 0; j < in->npaths; j++) {
		const struct locate_path *p = order[j];
		int n = path_elements(p), k = off[p - in->paths];
		/* its trace reached the peer: its last hop and the link to it are
		 * the peer's end */
		int to_peer = n && strcmp(p->hops[p->nhops - 1], p->peer) == 0;

		for (int e = 0; e < n; e++, k++) {
			enum locate_kind kind = e % 2 ? LOCATE_LINK : LOCATE_HOP;
			struct element *el;
			int own;

			if (!path_element(p, e, name, sizeof(name))) {
				es->ids[k] = -1;
				continue;
			}
			if (kind == LOCATE_HOP && (!e || strcmp(name, p->peer) == 0))
				kind = LOCATE_HOST;
			es->ids[k] = intern(es, name, kind);
			el = &es->e[es->ids[k]];
			/* a node's own start (its host, its link out) is
			 * corroborated by others or not at all, as a node does
			 * not blame itself */
			own = e <= 1;
			el->nodes += !own && node_once(&el->last, p->reporter);
			if (p->lossy <= 0) {
				el->healthy += !p->lossy;
				continue;
			}
			el->lossy++;
			el->tested |= p->sibling_clean;
			el->end |= e <= 1 || (to_peer && e >= n - 2);
			el->lossy_nodes += !own && node_once(&el->last_lossy, p->reporter);
		}
	}
	r = 0;
out:
	free(order);
	free(off);
	return r;
}

static void elements_release(struct elements *es)
{
	free(es->e);
	free(es->slot);
	free(es->ids);
}

static struct locate_suspect *find(struct out *o, enum locate_kind kind, const char *name)
{
	for (int k = 0; k < o->n; k++)
		if (o->s[k].kind == kind && strcmp(o->s[k].name, name) == 0)
			return &o->s[k];
	return NULL;
}

/* Elements lossy paths of several nodes cross, more than clean ones do: a
 * hop, a link, or (a path's start or last hop) a host, whose stronger
 * score of the two (events, paths) stands. */
static int score_paths(const struct locate_input *in, struct out *o)
{
	struct elements es = { 0 };
	int lossy = 0, r, k = 0;

	for (int i = 0; i < in->npaths; i++)
		lossy += in->paths[i].lossy > 0;
	r = elements_build(in, &es);
	for (int i = 0; !r && i < in->npaths; i++) {
		const struct locate_path *p = &in->paths[i];

		for (int e = 0; !r && e < path_elements(p); e++, k++) {
			struct element *el;
			double score;
			struct locate_suspect *d;

			if (es.ids[k] < 0)
				continue;
			el = &es.e[es.ids[k]];
			/* a path's end is every sibling flow's: siblings
			 * cannot place it, nor fault it for want of a clean one */
			score = (double)el->lossy / lossy * el->lossy / (el->lossy + el->healthy) *
				(el->tested || el->end ? 1 : LOCATE_UNTESTED_SHARE);
			/* a fault on it shows on most of the nodes whose paths
			 * cross it; a busy host's late answers on a few */
			if (p->lossy <= 0 || el->healthy >= el->lossy ||
			    el->lossy_nodes < LOCATE_MIN_REPORTERS ||
			    2 * el->lossy_nodes <= el->nodes || el->suspect < 0)
				continue;
			if (!el->suspect) { /* first met: named already, more strongly? */
				d = find(o, el->kind, el->name);
				if (d && d->score >= score) {
					el->suspect = -1;
					continue;
				}
				if (!d && !(d = out_add(o))) {
					r = -ENOMEM;
					break;
				}
				*d = (struct locate_suspect){ .kind = el->kind,
							      .score = score,
							      .by_paths = 1,
							      .failing = el->lossy,
							      .clean = el->healthy,
							      .of = lossy };
				snprintf(d->name, sizeof(d->name), "%s", el->name);
				el->suspect = (int)(d - o->s) + 1;
			}
			d = &o->s[el->suspect - 1];
			reporter_add(d->reporters, p->reporter);
			first_seen(d, p->first_ms);
		}
	}
	elements_release(&es);
	return r;
}

/* Whether s is host node or a link with node at one end. */
static int at_host(const struct locate_suspect *s, const char *node)
{
	size_t n = strlen(node);
	const char *sep = strstr(s->name, " - ");

	if (s->kind == LOCATE_HOST)
		return strcmp(s->name, node) == 0;
	return s->kind == LOCATE_LINK && sep &&
	       ((sep - s->name == (ptrdiff_t)n && strncmp(s->name, node, n) == 0) ||
		strcmp(sep + 3, node) == 0);
}

/* A host whose own port counts errors: the port is where on it (or on its
 * access link) its paths lose, so the port takes the strongest of their
 * scores and they are dropped. */
static void ports_place_hosts(struct out *o)
{
	char node[256];
	int n = 0;

	for (int k = 0; k < o->n; k++) {
		struct locate_suspect *p = &o->s[k];

		if (p->kind != LOCATE_PORT)
			continue;
		locate_instance_host(p->reporters, node, sizeof(node));
		for (int i = 0; i < o->n; i++) {
			if (!at_host(&o->s[i], node))
				continue;
			if (o->s[i].score > p->score)
				p->score = o->s[i].score;
			o->s[i].score = -1;
		}
	}
	for (int k = 0; k < o->n; k++)
		if (o->s[k].score >= 0)
			o->s[n++] = o->s[k];
	o->n = n;
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
	/* hosts named by fewer nodes than the bound are not suspects, unless
	 * by their own */
	hosts = 0;
	for (int k = 0; !r && k < o.n; k++)
		if (o.s[k].failing >= LOCATE_MIN_REPORTERS || o.s[k].self)
			o.s[hosts++] = o.s[k];
	o.n = hosts;
	if (!r)
		r = score_ports(in, &o);
	if (!r)
		r = score_paths(in, &o);
	if (r < 0) {
		free(o.s);
		return r;
	}
	ports_place_hosts(&o);
	if (o.n)
		qsort(o.s, (size_t)o.n, sizeof(*o.s), cmp_suspect);
	for (int k = 1; k < o.n; k++)
		if (inseparable(&o.s[k - 1], &o.s[k]))
			o.s[k].tie = o.s[k - 1].tie ? o.s[k - 1].tie : (o.s[k - 1].tie = ++tie);
	*ret = o.s;
	*ret_n = o.n;
	return 0;
}
