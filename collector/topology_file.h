/* SPDX-License-Identifier: MIT */
#ifndef FABMON_TOPOLOGY_FILE_H
#define FABMON_TOPOLOGY_FILE_H

#include <stddef.h>

/*
 * The static topology file: what LLDP cannot see (racks, rails, pods, the
 * switches a host's leaf is cabled to), one fact a line (docs/cluster.md):
 *
 *   # comment
 *   host NAME [rack R] [rail R] [pod P] [leaf SWITCH]
 *   link A B
 *
 * NAME, values and link ends are 1 to 63 of [A-Za-z0-9._:/-]; a host is
 * named once, an attribute once a line. Blank lines and comments are
 * skipped.
 */

#define TOPOLOGY_NAME_MAX 64
#define TOPOLOGY_ATTRS 4 /* rack, rail, pod, leaf */

/* "rack", "rail", "pod", "leaf": the attributes, the labels they export as. */
extern const char *const topology_attr_names[TOPOLOGY_ATTRS];

struct topology_host {
	char name[TOPOLOGY_NAME_MAX];
	char attr[TOPOLOGY_ATTRS][TOPOLOGY_NAME_MAX]; /* "" when not given */
};

struct topology_link {
	char a[TOPOLOGY_NAME_MAX], b[TOPOLOGY_NAME_MAX];
};

struct topology {
	struct topology_host *hosts;
	size_t nhosts;
	struct topology_link *links;
	size_t nlinks;
};

/*
 * Parses text (the file's contents; path only names it in errors). Returns
 * 0 and *ret (free with topology_free), or -EINVAL with "PATH:LINE: why" in
 * why, or -ENOMEM.
 */
int topology_parse(const char *text, const char *path, struct topology **ret, char *why,
		   size_t why_len);

/* True if s is a valid name or value: 1 to 63 of [A-Za-z0-9._:/-]. */
int topology_name_ok(const char *s);

/* The host called name, or NULL. */
const struct topology_host *topology_find_host(const struct topology *t, const char *name);

void topology_free(struct topology *t);

#endif
