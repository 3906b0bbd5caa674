/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/mesh/mesh_targets.h"
#include "collector/mesh/mesh_conf.h"

struct addr_list {
	uint32_t *a;
	size_t n;
};

/* Resolves host ("198.18.0.3", "node7") to one IPv4 address. Returns 0 or -ENOENT. */
static int host_resolve(const char *host, uint32_t *ret_addr)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_DGRAM }, *res = NULL;

	if (getaddrinfo(host, NULL, &hints, &res) != 0 || !res)
		return -ENOENT;
	*ret_addr =
		ntohl(((const struct sockaddr_in *)(const void *)res->ai_addr)->sin_addr.s_addr);
	freeaddrinfo(res);
	return 0;
}

/* The line of text the first quoted needle is on, or 0: jansson keeps no
 * positions for values, and an operator wants the line of a bad target. */
static int line_of(const char *text, const char *needle)
{
	char quoted[300];
	const char *at;
	int line = 1;

	snprintf(quoted, sizeof(quoted), "\"%s\"", needle);
	at = strstr(text, quoted);
	if (!at)
		return 0;
	for (const char *p = text; p < at; p++)
		line += *p == '\n';
	return line;
}

static int list_add(struct addr_list *l, uint32_t addr)
{
	if (l->n == MESH_ADDRS_MAX)
		return -E2BIG;
	l->a[l->n++] = addr;
	return 0;
}

/* Adds the host of target "host:port" (or "host"). Returns 0; -EINVAL if it
 * is not of that form, -EAFNOSUPPORT for an IPv6 address ("[v6]:port": the
 * probes are IPv4), -ENOENT for a name without an IPv4 address, -E2BIG. */
static int target_add(struct addr_list *l, const char *target)
{
	char host[256];
	const char *colon = strrchr(target, ':');
	size_t hlen = colon ? (size_t)(colon - target) : strlen(target);
	struct in6_addr a6;
	uint32_t addr;

	if (hlen == 0 || hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, target, hlen);
	host[hlen] = '\0';
	if (host[0] == '[') {
		if (hlen < 3 || host[hlen - 1] != ']')
			return -EINVAL;
		host[hlen - 1] = '\0';
		return inet_pton(AF_INET6, host + 1, &a6) == 1 ? -EAFNOSUPPORT : -EINVAL;
	}
	if (inet_pton(AF_INET6, target, &a6) == 1)
		return -EAFNOSUPPORT; /* a bare IPv6 address, no port */
	if (host_resolve(host, &addr) < 0)
		return -ENOENT;
	return list_add(l, addr);
}

/* Targets left out of a list that is otherwise used: the first (for the
 * message) and how many. */
struct skipped {
	char first[200];
	unsigned n, unresolved;
};

static void skip(struct skipped *k, const char *path, int line, const char *target, int r)
{
	if (!k->n++)
		snprintf(k->first, sizeof(k->first), "%s:%d: target '%.64s' skipped: %s", path,
			 line, target,
			 r == -EAFNOSUPPORT ? "IPv6 (the probes are IPv4)" : "no IPv4 address");
	k->unresolved += r == -ENOENT;
}

static int file_sd_parse(const char *path, struct addr_list *l, struct skipped *k, char *err,
			 size_t err_len)
{
	json_error_t jerr;
	json_t *root = NULL, *group;
	char *text = NULL;
	size_t gi;
	long size;
	FILE *f = fopen(path, "re");
	int r = 0;

	if (!f) {
		r = -errno;
		snprintf(err, err_len, "unable to open '%s': %s", path, strerror(errno));
		return r;
	}
	/* a target list is kilobytes; a file of megabytes is a mistake */
	if (fseek(f, 0, SEEK_END) < 0 || (size = ftell(f)) < 0 || size > (1 << 22) ||
	    fseek(f, 0, SEEK_SET) < 0) {
		snprintf(err, err_len, "%s: not a regular file of at most 4 MiB", path);
		r = -EINVAL;
		goto out;
	}
	text = calloc(1, (size_t)size + 1);
	if (!text || fread(text, 1, (size_t)size, f) != (size_t)size) {
		snprintf(err, err_len, "%s: unable to read", path);
		r = -EIO;
		goto out;
	}
	root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		snprintf(err, err_len, "%s:%d: %s", path, jerr.line, jerr.text);
		r = -EINVAL;
		goto out;
	}
	if (!json_is_array(root)) {
		snprintf(err, err_len, "%s:1: expected a JSON array of target groups", path);
		r = -EINVAL;
		goto out;
	}
	json_array_foreach(root, gi, group)
	{
		json_t *targets = json_object_get(group, "targets"), *t;
		size_t ti;

		if (!json_is_array(targets)) {
			snprintf(
				err, err_len,
				"%s: target group %zu: expected an object with a \"targets\" array",
				path, gi + 1);
			r = -EINVAL;
			goto out;
		}
		json_array_foreach(targets, ti, t)
		{
			const char *s = json_string_value(t);

			r = s ? target_add(l, s) : -EINVAL;
			if (r == -EAFNOSUPPORT || r == -ENOENT) {
				skip(k, path, line_of(text, s), s, r);
				r = 0;
				continue;
			}
			if (r == -E2BIG) {
				snprintf(err, err_len, "%s: more than %d targets", path,
					 MESH_ADDRS_MAX);
				goto out;
			}
			if (r < 0) {
				snprintf(err, err_len,
					 "%s:%d: target '%.64s': expected \"HOST:PORT\"", path,
					 s ? line_of(text, s) : 0, s ? s : "(not a string)");
				goto out;
			}
		}
	}
out:
	json_decref(root);
	free(text);
	fclose(f);
	return r;
}

static int peers_parse(const char *peers, struct addr_list *l, char *err, size_t err_len)
{
	char buf[1024], *save = NULL;
	int r = 0;

	snprintf(buf, sizeof(buf), "%s", peers);
	for (char *it = strtok_r(buf, ", ", &save); it && r == 0;
	     it = strtok_r(NULL, ", ", &save)) {
		struct in_addr a;

		r = inet_pton(AF_INET, it, &a) == 1 ? list_add(l, ntohl(a.s_addr)) : -EINVAL;
		if (r < 0)
			snprintf(err, err_len, "mesh_peers: '%.40s' is not an IPv4 address", it);
	}
	return r;
}

static int addr_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

int mesh_targets_load(const char *path, const char *peers, struct mesh_targets *ret, char *err,
		      size_t err_len)
{
	struct addr_list l = { .a = calloc(MESH_ADDRS_MAX, sizeof(uint32_t)) };
	struct skipped k = { "", 0, 0 };
	size_t n = 0;
	int r = l.a ? 0 : -ENOMEM;

	if (r == 0 && path[0])
		r = file_sd_parse(path, &l, &k, err, err_len);
	/* no name resolved, none given as an address: name service down,
	 * not every host gone */
	if (r == 0 && k.unresolved && !l.n) {
		snprintf(err, err_len, "%s (no target resolved)", k.first);
		r = -ENOENT;
	}
	if (r == 0)
		r = peers_parse(peers, &l, err, err_len);
	if (r < 0) {
		free(l.a);
		return r;
	}
	qsort(l.a, l.n, sizeof(l.a[0]), addr_cmp);
	for (size_t i = 0; i < l.n; i++)
		if (n == 0 || l.a[n - 1] != l.a[i])
			l.a[n++] = l.a[i];
	mesh_targets_release(ret);
	ret->addrs = l.a;
	ret->n = n;
	ret->unresolved = k.unresolved;
	err[0] = '\0';
	if (k.n)
		snprintf(err, err_len, "%s (%u skipped in all)", k.first, k.n);
	return 0;
}

int mesh_targets_has(const struct mesh_targets *t, uint32_t addr)
{
	return t->n && bsearch(&addr, t->addrs, t->n, sizeof(addr), addr_cmp) != NULL;
}

void mesh_targets_release(struct mesh_targets *t)
{
	free(t->addrs);
	t->addrs = NULL;
	t->n = 0;
}
