/* SPDX-License-Identifier: MIT */
#ifndef FABMON_DETECT_STALL_H
#define FABMON_DETECT_STALL_H

#include <stddef.h>

#include "events.h"

/*
 * What a path gives right after a stall on it — retransmissions, a slow
 * start, the transfer the stall held up — belongs to the stall, which is
 * reported as one: the path and hand-off detectors take no samples from a
 * peer for this long after it was stalled.
 */
#define STALL_AFTERMATH_MS 1000

/* What the stall detector looks at, per peer, this tick. */
struct stall_input {
	const char *peer; /* the remote address */
	double ack_stall_s; /* longest wait without ack progress with data pending */
	double in_flight_bytes; /* sent, not acknowledged */
	double zero_window; /* connections with data queued behind a closed window */
	/* when the peer's address is a local sender too (another namespace on
	 * this host), the longest its own connections have waited; else 0 */
	double sender_stall_s;
};

/*
 * A stall: a peer with data pending and no ack progress for after_s or more
 * (a paused or dead rank, a downed link, a zero window). Writes a verdict per
 * stalled peer into out (at most max), subject "peer=ADDR", score
 * ack_stall_s / after_s, at_once behind a closed window. Returns how many.
 * Pure: no I/O, no state.
 *
 * A stalled collective stalls its other ranks within a tick; where this host
 * sees the peers' own senders (sender_stall_s), the victims are left out:
 *  - behind a closed window, a peer that is itself stalled sending stopped
 *    reading because it waits on someone else: the culprit is further on;
 *  - with data in flight and no acks, a peer that is stalled both ways is
 *    the cut-off one, and the peers it sent to are its victims.
 * If that would leave no one (a cycle), every stalled peer is reported. The
 * culprit's evidence counts the victims left out.
 */
size_t detect_stall(const struct stall_input *in, size_t n, double after_s,
		    struct event_verdict *out, size_t max);

#endif
