/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/topology_file.h"

const char *const topology_attr_names[TOPOLOGY_ATTRS] = { "rack", "rail", "pod", "leaf" };

#define WORDS_MAX (2 + 2 * TOPOLOGY_ATTRS + 1) /* one more shows a line too long */

int topology_name_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n < TOPOLOGY_NAME_MAX &&
	       strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:/-") ==
		       n;
}

/* Grows *arr (elements of size) to hold one more than n. */
static int grow(void **arr, size_t n, size_t *alloc, size_t size)
{
	void *p;

	if (n < *alloc)
		return 0;
	*alloc = *alloc ? 2 * *alloc : 64;
	p = realloc(*arr, *alloc * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	return 0;
}

struct parse {
	struct topology *t;
	size_t hosts_alloc, links_alloc;
	char *why;
	size_t why_len;
	const char *path;
	int line;
};

static int bad(struct parse *p, const char *fmt, const char *arg)
{
	char msg[256];

	snprintf(msg, sizeof(msg), fmt, arg);
	snprintf(p->why, p->why_len, "%s:%d: %s", p->path, p->line, msg);
	return -EINVAL;
}

static int parse_host(struct parse *p, char **w, int n)
{
	struct topology_host *h;

	if (n < 2 || !topology_name_ok(w[1]))
		return bad(p, "host: a name of 1 to 63 of [A-Za-z0-9._:/-] expected%s", "");
	if (topology_find_host(p->t, w[1]))
		return bad(p, "host '%s' is named twice", w[1]);
	if (grow((void **)&p->t->hosts, p->t->nhosts, &p->hosts_alloc, sizeof(*h)) < 0)
		return -ENOMEM;
	h = &p->t->hosts[p->t->nhosts];
	memset(h, 0, sizeof(*h));
	snprintf(h->name, sizeof(h->name), "%s", w[1]);
	for (int i = 2; i < n; i += 2) {
		int a = 0;

		while (a < TOPOLOGY_ATTRS && strcmp(w[i], topology_attr_names[a]) != 0)
			a++;
		if (a == TOPOLOGY_ATTRS)
			return bad(p, "unknown attribute '%s' (rack, rail, pod, leaf)", w[i]);
		if (i + 1 >= n || !topology_name_ok(w[i + 1]))
			return bad(p, "%s: a value of 1 to 63 of [A-Za-z0-9._:/-] expected", w[i]);
		if (h->attr[a][0])
			return bad(p, "%s given twice", w[i]);
		snprintf(h->attr[a], sizeof(h->attr[a]), "%s", w[i + 1]);
	}
	p->t->nhosts++;
	return 0;
}

static int parse_link(struct parse *p, char **w, int n)
{
	struct topology_link *l;

	if (n != 3 || !topology_name_ok(w[1]) || !topology_name_ok(w[2]))
		return bad(p, "link: two names of 1 to 63 of [A-Za-z0-9._:/-] expected%s", "");
	if (strcmp(w[1], w[2]) == 0)
		return bad(p, "link: '%s' to itself", w[1]);
	if (grow((void **)&p->t->links, p->t->nlinks, &p->links_alloc, sizeof(*l)) < 0)
		return -ENOMEM;
	l = &p->t->links[p->t->nlinks++];
	snprintf(l->a, sizeof(l->a), "%s", w[1]);
	snprintf(l->b, sizeof(l->b), "%s", w[2]);
	return 0;
}

int topology_parse(const char *text, const char *path, struct topology **ret, char *why,
		   size_t why_len)
{
	struct parse p = { .why = why, .why_len = why_len, .path = path };
	char *copy = strdup(text), *line, *save = NULL;
	int r = -ENOMEM;

	p.t = calloc(1, sizeof(*p.t));
	if (!copy || !p.t)
		goto out;
	r = 0;
	/* strsep keeps empty lines, so that line numbers stay right */
	for (char *rest = copy; !r && (line = strsep(&rest, "\n"));) {
		char *w[WORDS_MAX];
		int n = 0;

		p.line++;
		line[strcspn(line, "#")] = '\0';
		for (char *t = strtok_r(line, " \t\r", &save); t && n < WORDS_MAX;
		     t = strtok_r(NULL, " \t\r", &save))
			w[n++] = t;
		if (!n)
			continue;
		if (n == WORDS_MAX)
			r = bad(&p, "too many words (%s)", "host NAME and four attributes at most");
		else if (strcmp(w[0], "host") == 0)
			r = parse_host(&p, w, n);
		else if (strcmp(w[0], "link") == 0)
			r = parse_link(&p, w, n);
		else
			r = bad(&p, "unknown keyword '%s' (host, link)", w[0]);
	}
out:
	free(copy);
	if (r < 0) {
		topology_free(p.t);
		return r;
	}
	*ret = p.t;
	return 0;
}

const struct topology_host *topology_find_host(const struct topology *t, const char *name)
{
	for (size_t i = 0; i < t->nhosts; i++)
		if (strcmp(t->hosts[i].name, name) == 0)
			return &t->hosts[i];
	return NULL;
}

void topology_free(struct topology *t)
{
	if (!t)
		return;
	free(t->hosts);
	free(t->links);
	free(t);
}
