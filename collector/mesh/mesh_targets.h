/* SPDX-License-Identifier: MIT */
#ifndef FABMON_MESH_TARGETS_H
#define FABMON_MESH_TARGETS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Who to probe: the hosts of a Prometheus file_sd target list (the list
 * Prometheus scrapes fabmon by), and a static list of addresses. Addresses
 * are IPv4, host byte order; a target's port is ignored (peers are probed on
 * mesh_listen's port); names are resolved (getaddrinfo, which may block:
 * call this off the tick).
 */
struct mesh_targets {
	uint32_t *addrs; /* sorted, no duplicates */
	size_t n;
	unsigned unresolved; /* names that had no IPv4 address, left out */
};

/*
 * Reads path (file_sd JSON: [{"targets": ["host:port", ...], "labels": {...}}])
 * and adds the static list peers ("A.B.C.D,..."; may be "", path may be "")
 * into *ret (released first on success only). Returns 0; or -errno with
 * "FILE:LINE: ..." in err, *ret untouched, so the caller keeps the old list.
 * A target that cannot be probed is left out, not an error (on 0, err says
 * which, or is ""): an IPv6 one (a dual-stack list), and a name without an
 * IPv4 address (one host gone from DNS must not freeze the list for the
 * rest) unless no name resolved at all (-ENOENT: name service down).
 */
int mesh_targets_load(const char *path, const char *peers, struct mesh_targets *ret, char *err,
		      size_t err_len);

/* True if addr (host byte order) is a target. */
int mesh_targets_has(const struct mesh_targets *t, uint32_t addr);

/* Frees the list; accepts a zeroed one. */
void mesh_targets_release(struct mesh_targets *t);

#endif
