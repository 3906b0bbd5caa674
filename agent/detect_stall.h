/* SPDX-License-Identifier: MIT */
#ifndef FABMON_DETECT_STALL_H
#define FABMON_DETECT_STALL_H

#include <stddef.h>

#include "events.h"

/* What the stall detector looks at, per peer, this tick. */
struct stall_input {
	const char *peer; /* the remote address */
	double ack_stall_s; /* longest wait without ack progress with data pending */
	double in_flight_bytes; /* sent, not acknowledged */
	double zero_window; /* connections with data queued behind a closed window */
};

/*
 * A stall: a peer with data pending and no ack progress for after_s or more
 * (a paused or dead rank, a downed link, a zero window). Writes a verdict per
 * stalled peer into out (at most max), subject "peer=ADDR", score
 * ack_stall_s / after_s. Returns how many. Pure: no I/O, no state.
 */
size_t detect_stall(const struct stall_input *in, size_t n, double after_s,
		    struct event_verdict *out, size_t max);

#endif
