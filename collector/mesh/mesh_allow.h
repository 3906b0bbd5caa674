/* SPDX-License-Identifier: MIT */
#ifndef FABMON_MESH_ALLOW_H
#define FABMON_MESH_ALLOW_H

#include <stddef.h>
#include <stdint.h>

/* IPv4 networks a responder answers besides its targets (mesh_allow). */
struct mesh_cidr {
	uint32_t net, mask; /* host byte order */
};

#define MESH_CIDRS_MAX 64

/*
 * Parses "198.18.0.0/15,10.1.2.3" (a bare address is a /32) into out (room
 * for max). Returns how many, or -EINVAL with the bad item in why, or -E2BIG
 * past max.
 */
int mesh_allow_parse(const char *text, struct mesh_cidr *out, size_t max, char *why,
		     size_t why_len);

/* True if addr (host byte order) is in one of the n networks. */
int mesh_allow_match(const struct mesh_cidr *cidrs, size_t n, uint32_t addr);

#endif
