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
 * The wait that makes peer p stalled: after_s, or half of it behind a closed
 * window. Data in flight without acks may be waiting on a retransmission
 * timer (Linux's is 200 ms at the least, and grows with the RTT's
 * variance: 0.38 s in the lab's 50 ms queues); a closed window is the
 * receiver saying it stopped reading, no timer involved.
 */
static inline double stall_bound(const struct stall_input *p, double after_s)
{
	return p->zero_window > 0 ? after_s / 2 : after_s;
}

/*
 * A stall: a peer with data pending and no ack progress for stall_bound()
 * or more (a paused or dead rank, a downed link, a zero window). Writes a
 * verdict per stalled peer into out (at most max), subject "peer=ADDR",
 * score ack_stall_s over that bound. Returns how many. Pure: no I/O, no
 * state.
 *
 * A stalled collective stalls its other ranks within a tick; where this host
 * sees the peers' own senders (sender_stall_s), the victims are left out:
 *  - behind a closed window, a peer that is itself stalled sending (its
 *    sender_stall_s past its bound) stopped reading because it waits on
 *    someone else: the culprit is further on;
 *  - with data in flight and no acks, a peer that is stalled both ways is
 *    the cut-off one, and the peers it sent to are its victims.
 * If that would leave no one (a cycle), every stalled peer is reported. The
 * culprit's evidence counts the victims left out.
 */
size_t detect_stall(const struct stall_input *in, size_t n, double after_s,
		    struct event_verdict *out, size_t max);

#endif
