/* SPDX-License-Identifier: MIT */
#ifndef FABMON_MESH_WIRE_H
#define FABMON_MESH_WIRE_H

#include <stddef.h>
#include <stdint.h>

/*
 * A mesh datagram, probe or reply: one fixed size, so that a reply is never
 * larger than the probe it answers (no amplification) and the responder
 * needs no room it was not given. Multi-byte fields are big-endian.
 *
 *   0  magic "FMSH"     4  version  5  type  6  flow  7  ttl
 *   8  seq (u32)       12  zero
 *  16  send_ns (u64)   the sender's clock, echoed
 *  24  rx_ns (u64)     the responder's receive time (0 in a probe)
 *  32  tx_ns (u64)     the responder's send time (0 in a probe)
 */
#define MESH_WIRE_LEN 40
#define MESH_WIRE_VERSION 1

enum mesh_wire_type { MESH_PROBE = 1, MESH_REPLY = 2 };

struct mesh_msg {
	enum mesh_wire_type type;
	uint8_t flow; /* the sender's flow index */
	uint8_t ttl; /* 0 for a plain probe; the TTL a path probe was sent with */
	uint32_t seq;
	uint64_t send_ns, rx_ns, tx_ns;
};

/* Writes m into buf (MESH_WIRE_LEN bytes). */
void mesh_wire_encode(const struct mesh_msg *m, uint8_t *buf);

/*
 * Reads a datagram of len bytes. Returns 0, or -EBADMSG if it is not a mesh
 * datagram of this version and size (truncated, oversized, foreign).
 */
int mesh_wire_decode(const uint8_t *buf, size_t len, struct mesh_msg *ret_msg);

#endif
