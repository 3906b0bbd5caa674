/* SPDX-License-Identifier: MIT */
/*
 * The topology collector: this node's line of the static topology file
 * (collector/topology_file.h) as fabmon_topology_info{host,rack,rail,pod,
 * leaf}, and the file's links that touch this host or its leaf as
 * fabmon_topology_link_info{a,b}, at most TOPOLOGY_LINKS_EXPORTED: every
 * node exports its own facts only, so the cluster's series grow with its
 * nodes, not with their square. The file is read and checked once, at
 * init (a reload reads it again); without topology_file there is nothing
 * to export, which is not an error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/lib/file_read.h"
#include "collector/collector.h"
#include "collector/topology_file.h"

#define TOPOLOGY_LINKS_EXPORTED 64

struct topology_state {
	struct topology *t;
	const struct topology_host *self; /* NULL: this host has no line */
};

static const struct metric_desc desc_info = {
	.name = "fabmon_topology_info",
	.help = "Always 1; labels: this node's line of the topology file (host, rack, rail, pod, "
		"leaf).",
	.type = METRIC_GAUGE,
};
static const struct metric_desc desc_link = {
	.name = "fabmon_topology_link_info",
	.help = "Always 1; a link of the topology file that ends at this host or its leaf.",
	.type = METRIC_GAUGE,
};

static int topology_init(const struct collector_env *env, void **ret_state, char *why,
			 size_t why_len)
{
	struct topology_state *st;
	char *text = NULL;
	size_t len;
	int r;

	if (!env->topology_file || !env->topology_file[0]) {
		snprintf(why, why_len, "no topology_file set: nothing to export");
		*ret_state = NULL;
		return 0;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	r = file_read(env->topology_file, &text, &len);
	if (r < 0) {
		snprintf(why, why_len, "unable to read '%s': %s", env->topology_file,
			 file_read_strerror(r));
		goto fail;
	}
	r = topology_parse(text, env->topology_file, &st->t, why, why_len);
	if (r < 0)
		goto fail;
	st->self = topology_find_host(st->t, env->topology_host);
	if (!st->self)
		snprintf(why, why_len, "'%s' has no line for host '%s'", env->topology_file,
			 env->topology_host);
	free(text);
	*ret_state = st;
	return 0;
fail:
	/* a file that is not there or not valid is the operator's to fix:
	 * the collector is down, with the reason */
	free(text);
	free(st);
	return r == -ENOENT ? -ENOENT : -EINVAL;
}

static int topology_sample(void *state, const struct collector_env *env, struct sample_sink *out)
{
	struct topology_state *st = state;
	const char *leaf;
	struct label l[1 + TOPOLOGY_ATTRS];
	int n = 0;

	(void)env;
	if (!st || !st->self)
		return 0;
	l[n++] = (struct label){ "host", st->self->name };
	for (int a = 0; a < TOPOLOGY_ATTRS; a++)
		if (st->self->attr[a][0])
			l[n++] = (struct label){ topology_attr_names[a], st->self->attr[a] };
	(void)sample_gauge(out, &desc_info, l, (size_t)n, 1);
	n = 0;
	leaf = st->self->attr[3];
	for (size_t i = 0; i < st->t->nlinks && n < TOPOLOGY_LINKS_EXPORTED; i++) {
		const struct topology_link *k = &st->t->links[i];
		struct label ab[2] = { { "a", k->a }, { "b", k->b } };

		if (strcmp(k->a, st->self->name) != 0 && strcmp(k->b, st->self->name) != 0 &&
		    (!leaf[0] || (strcmp(k->a, leaf) != 0 && strcmp(k->b, leaf) != 0)))
			continue;
		(void)sample_gauge(out, &desc_link, ab, 2, 1);
		n++;
	}
	return 0;
}

static void topology_fini(void *state)
{
	struct topology_state *st = state;

	if (!st)
		return;
	topology_free(st->t);
	free(st);
}

const struct collector_ops topology_collector = {
	.name = "topology",
	.init = topology_init,
	.sample = topology_sample,
	.fini = topology_fini,
};
