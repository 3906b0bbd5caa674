/* SPDX-License-Identifier: MIT */
#ifndef FABMON_DETECT_INCAST_H
#define FABMON_DETECT_INCAST_H

#include <stddef.h>

#include "events.h"

/* What the incast detector looks at, per peer this host sends to. */
struct incast_input {
	const char *peer;
	double srtt_s; /* largest smoothed RTT to the peer; 0 if unknown */
	double retransmits_per_s; /* retransmissions to the peer */
};

/*
 * Incast, seen from one sender: among at least three peers with an RTT, one
 * whose RTT is rtt_factor times the median or more, and at least rtt_floor_s
 * above it (a queue towards that receiver, not jitter), names the receiver.
 * In all-to-all every sender sees the same receiver stand out. Score:
 * (srtt / median) / rtt_factor. Pure: no I/O, no state.
 */
size_t detect_incast(const struct incast_input *in, size_t n, double rtt_factor, double rtt_floor_s,
		     struct event_verdict *out, size_t max);

#endif
