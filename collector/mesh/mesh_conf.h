/* SPDX-License-Identifier: MIT */
#ifndef FABMON_MESH_CONF_H
#define FABMON_MESH_CONF_H

#include <limits.h>
#include <stdint.h>

/*
 * The mesh collector's settings (config keys mesh_*). Plain data with inline
 * strings, so that struct config can hold it and be copied whole.
 */

#define MESH_DEFAULT_LISTEN ":9479"
#define MESH_FLOWS_MAX 64
#define MESH_ADDRS_MAX 4096 /* peers a target list or a static list may name */

/* How long a probe's answer is waited for before it counts as lost, at a
 * probe interval of interval_ms: half an interval, but not under 200 ms (a
 * loaded host leaves a responder unscheduled for tens of ms) nor over a
 * second (a fabric's round trip is microseconds). The detector counts a
 * probe as answered or lost only this long after it was sent. */
static inline int64_t mesh_answer_wait_ms(int64_t interval_ms)
{
	return interval_ms / 2 < 200 ? 200 : interval_ms / 2 < 1000 ? interval_ms / 2 : 1000;
}

struct mesh_conf {
	char targets[PATH_MAX]; /* Prometheus file_sd JSON; "" = none */
	char peers[1024]; /* comma-separated IPv4 addresses; "" = none */
	char listen[64]; /* "ADDR:PORT" the responder binds and the peers are probed on */
	int64_t interval_ms; /* a peer is probed on every flow this often (jittered) */
	unsigned flows; /* source ports each peer is probed from, 1..MESH_FLOWS_MAX */
	unsigned dscp; /* DSCP of the probes, 0..63 */
	unsigned pps; /* probes a second, all peers and flows, at most */
	unsigned source_pps; /* probes a second one source is answered, at most */
	char allow[512]; /* CIDRs answered besides the targets; "" = targets only */
	int64_t path_interval_ms; /* each flow's hops are learnt again this often */
	unsigned max_series; /* per-peer, per-flow and hop series, at most */
};

#endif
