/* SPDX-License-Identifier: MIT */
#ifndef FABMON_MESH_RESPONDER_H
#define FABMON_MESH_RESPONDER_H

#include <stddef.h>
#include <stdint.h>

#include "collector/mesh/mesh_wire.h"

/*
 * The responder's rules, without its socket: which probes are answered.
 * A probe is answered only if it is well formed, comes from an allowed
 * source, and that source is within its rate (a token bucket of source_pps
 * a second, as deep). Counts what it refused and why.
 */

#define MESH_RATE_SLOTS 1024

struct mesh_rate_slot {
	uint32_t addr; /* 0: free */
	double tokens;
	int64_t last_ns;
};

struct mesh_responder_stats {
	uint64_t answered;
	uint64_t refused_source; /* not a target, not in mesh_allow */
	uint64_t refused_malformed; /* truncated, oversized, foreign or not a probe */
	uint64_t rate_limited;
};

struct mesh_responder {
	unsigned source_pps;
	struct mesh_rate_slot slots[MESH_RATE_SLOTS];
	struct mesh_responder_stats stats;
};

/* Zeroes r and sets its per-source rate (>= 1). */
void mesh_responder_init(struct mesh_responder *r, unsigned source_pps);

/*
 * Judges a datagram of len bytes from src (host byte order), whose source
 * the caller found allowed or not, received at now_ns. Returns 0 with the
 * probe in *ret_probe if it is to be answered; -EBADMSG (malformed),
 * -EACCES (source not allowed) or -EBUSY (over the source's rate) if not.
 * Each outcome is counted in r->stats.
 */
int mesh_responder_admit(struct mesh_responder *r, uint32_t src, int allowed, const uint8_t *buf,
			 size_t len, int64_t now_ns, struct mesh_msg *ret_probe);

#endif
