/* SPDX-License-Identifier: MIT */
#ifndef FABMON_DETECT_LINK_H
#define FABMON_DETECT_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "agent/detect/events.h"

/* One local interface this tick: its operational state (fabmon_netdev_up)
 * and the bytes it moved, both ways, per second. */
struct link_input {
	char subject[EVENT_SUBJECT_MAX]; /* "interface=eth0" */
	int up;
	double bytes_rate;
};

#define LINK_PORTS 64

struct link_port {
	char subject[EVENT_SUBJECT_MAX]; /* first: name_find() reads it */
	int64_t traffic_ms; /* the last tick it was up and moved bytes; 0: never seen */
	int64_t down_ms; /* the tick it went down after traffic; 0 while up */
	int64_t seen_ms; /* the last tick it was in the input */
};

struct link_history {
	struct link_port ports[LINK_PORTS];
	size_t n;
	/* the last time every port in use was down: from, until (0: still) */
	int64_t cut_from_ms, cut_until_ms;
	size_t hint; /* name_find()'s */
};

/* Folds this tick's readings into h; a port out of the input for window_ms
 * is forgotten. */
void link_history_update(struct link_history *h, const struct link_input *in, size_t n,
			 int64_t window_ms, int64_t now_ms);

/*
 * A link that went down while in use: an interface reading down (RFC 2863
 * operational state: a carrier lost, a peer port shut) that was up and moved
 * bytes within window_ms before it went. A `stall` of the interface, cause
 * network, at once (the state is the kernel's, not an estimate) and for as
 * long as it stays down; a port down from the start, or idle for window_ms
 * before it went, is an unused one and not named. Score 1. Writes at most
 * max verdicts; returns how many. Pure: no I/O.
 */
size_t detect_link(const struct link_history *h, int64_t now_ms, struct event_verdict *out,
		   size_t max);

/* True if this host is cut off (every port that moved bytes within the
 * window down, one at least), or was as long ago as it lasted: its peers'
 * stalls are its own link's, which detect_link() names, and TCP retries on
 * a timer that backed off while the link was down. */
int link_cut_off(const struct link_history *h, int64_t now_ms);

#endif
