/* SPDX-License-Identifier: MIT */
#ifndef FABMON_MESH_ENGINE_H
#define FABMON_MESH_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "collector/mesh/mesh_conf.h"
#include "collector/mesh/mesh_peer.h"
#include "collector/mesh/mesh_responder.h"

/*
 * The mesh's sockets and schedule: the responder on mesh_listen, one UDP
 * socket a flow (its source port fixed for the engine's life, so that each
 * flow keeps its ECMP path), probing every peer each interval within the pps
 * budget, and the path traces. It runs on its own thread (mesh_engine_start)
 * so that neither a slow peer nor a flood of probes delays the agent's
 * tick; the tick reads its state under mesh_engine_lock().
 */

struct mesh_engine_stats {
	uint64_t replies_invalid; /* wrong or late sequence, unknown peer, malformed */
	uint64_t send_errors;
	uint64_t budget_deferred; /* rounds put off by the pps budget */
	uint64_t targets_errors; /* target list reads that failed (the old list kept) */
};

struct mesh_engine;

/*
 * Opens the sockets for conf (copied). With respond, binds the responder on
 * conf->listen; the flows bind port 0 on the same address. Returns 0 and
 * sets *ret, or -errno with the reason in why. Nothing is probed until peers
 * are given, by conf's targets/peers (read at mesh_engine_start and again
 * when the file changes) or mesh_engine_set_peers().
 */
int mesh_engine_new(const struct mesh_conf *conf, int respond, struct mesh_engine **ret, char *why,
		    size_t why_len);

/* Reads the targets and starts the thread. Returns 0 or -errno (why says). */
int mesh_engine_start(struct mesh_engine *e, char *why, size_t why_len);

/*
 * Probes exactly these peers (host byte order), every flow at once and its
 * path now, instead of the targets: for a one-off probe (fabmon ping)
 * driven by mesh_engine_step(), on an engine not started. Returns 0 or
 * -ENOMEM.
 */
int mesh_engine_set_peers(struct mesh_engine *e, const uint32_t *addrs, size_t n);

/* One turn of the loop: waits up to max_wait_ms for a datagram or the next
 * probe due, then handles what is there. */
void mesh_engine_step(struct mesh_engine *e, int max_wait_ms);

/*
 * The state, for reading between mesh_engine_lock() and _unlock(): the
 * peers (sorted by address), the responder's counters and the engine's.
 */
void mesh_engine_lock(struct mesh_engine *e);
void mesh_engine_unlock(struct mesh_engine *e);
const struct mesh_peer *mesh_engine_peers(const struct mesh_engine *e, size_t *ret_n);
const struct mesh_responder_stats *mesh_engine_responder(const struct mesh_engine *e);
const struct mesh_engine_stats *mesh_engine_stats(const struct mesh_engine *e);

/* The port the responder is bound to (the probes' destination port). */
unsigned mesh_engine_port(const struct mesh_engine *e);

/* The flows' source ports, in flow order. */
unsigned mesh_engine_flow_port(const struct mesh_engine *e, unsigned flow);

/* What changed that an operator should hear of once (a bad target file),
 * or ""; clears it. */
void mesh_engine_news(struct mesh_engine *e, char *buf, size_t len);

/* Stops the thread, closes the sockets. Accepts NULL. */
void mesh_engine_free(struct mesh_engine *e);

#endif
