/* SPDX-License-Identifier: MIT */
#ifndef FABMON_DETECT_STALL_H
#define FABMON_DETECT_STALL_H

#include <stddef.h>
#include <stdint.h>

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
	/* longest time the peer acknowledged data without its application
	 * reading any (its window's edge stood still); and, as sender_stall_s,
	 * the same for its own connections' receivers */
	double read_stall_s;
	double sender_read_stall_s;
	/* as sender_stall_s: how long its longest send under way has run */
	double sender_busy_s;
	/* an incast paces this host's collective this tick (detect_path()) */
	int paced;
	/* how long ago any connection to it, or from it as sender_stall_s,
	 * last had data acknowledged */
	double progress_age_s;
};

/*
 * A wait for acks of this share of stall_after, under it, holds an open stall
 * (VERDICT_HOLD): a connection back from a retransmission timeout can move
 * once and then wait again on its next, backed-off timer. t_ring, its link
 * back up: one ack, then 0.8 s without, then the burst; its stall closed on
 * the three ticks under (waits of 0.02, 0.12 and 0.22 s) and a second one
 * opened 300 ms later. A path that moves is acked within a round trip.
 */
#define STALL_HOLD_SHARE 0.25

struct stall_bounds {
	double after_s; /* no ack progress with data pending this long */
	double read_after_s; /* acked, not read, this long; or cut off both ways */
};

/*
 * A stall: a peer with data pending and no ack progress for b->after_s or
 * more (a paused or dead rank, a downed link, a zero window), or whose
 * kernel acked data its application has not read for b->read_after_s or
 * more (a paused or hung receiver, before its window closes), or with data
 * to it and from it (sender_stall_s) both unacked for b->read_after_s and
 * nothing to or from it acknowledged for as long (progress_age_s: cut off;
 * a pair of connections that wait both ways on retransmission timeouts,
 * while the peer's others move, is no cut-off). Writes a verdict per
 * stalled peer into out (at most max), subject "peer=ADDR", score the
 * larger wait over its bound, weight VERDICT_AT_ONCE where the peer
 * stopped reading or is cut off. Returns how many. Pure: no I/O, no
 * state.
 *
 * A stalled collective stalls its other ranks within a tick; where this host
 * sees the peers' own senders (sender_*), the victims are left out:
 *  - a peer that stopped reading is a victim if its own sending has been
 *    blocked at least as long (by a receiver that stopped reading, or by
 *    missing acks): it waits on someone else, the culprit is further on;
 *  - with data in flight and no acks, a peer that is stalled both ways is
 *    the cut-off one, and the peers it sent to are its victims.
 * If that would leave no one (a cycle), every stalled peer is reported. The
 * culprit's evidence counts the victims left out.
 *
 * After those, a VERDICT_HOLD for each peer under the bounds that has waited
 * for acks STALL_HOLD_SHARE of after_s or more: it keeps the peer's open
 * stall event open and does nothing else.
 *
 * A peer that has not read since before a send of its own began, a send
 * still moving (sender_busy_s at least its read stall, sender_stall_s
 * under it), has no read stall: its application waits on that send, as
 * an all-to-all rank does on the slowest of its receivers, and the slow
 * path is that path's event (incast, hotspot). A paused rank's own send
 * drains within the read bound and ends. Nor does any peer while an
 * incast paces the collective (paced): each rank waits on the hot
 * receiver's senders, and one blocked reading a slow sender leaves the
 * others' data unread, for as long as the incast lasts (t_incast: 857 ms
 * on a bystander whose own sending was idle, 1 run in 15; 332 ms on the
 * hot receiver in another). Waits for acks one way are still judged; a
 * peer whose data waits both ways is not, while the incast lasts: its
 * connections with the hot receiver queue at that receiver's port in both
 * directions, data one way and acks the other, and retransmission timers
 * then hold both (a 4 MiB all-to-all with rank 3's port cut to 1/8 for
 * 5 s, 24 times: 12 such stalls named bystanders, waits of 0.35-0.85 s
 * both ways within 0.02 s of each other, in 6 of the 24). The cost: a
 * bystander truly cut off while an incast lasts is named once it ends.
 */
size_t detect_stall(const struct stall_input *in, size_t n, const struct stall_bounds *b,
		    struct event_verdict *out, size_t max);

/* Peers cut off (detect_stall()) lately: up to STALL_CUT_PEERS of them. */
#define STALL_CUT_PEERS 64

struct stall_history {
	struct {
		char peer[48];
		int64_t start_ms, last_ms; /* first and last tick cut off */
	} cut[STALL_CUT_PEERS];
	size_t n;
};

/*
 * The aftermath of a cut-off: once a peer's link is back, its own
 * connections wait on retransmission timers backed off while it was down,
 * for up to as long again as it was cut off, which began read_after_s
 * before it was seen (the timeout doubles with each
 * retransmission, RFC 6298 5.5); the peers it sends to then show waits that
 * are its. Notes in h (zeroed by the caller before first use) which peers of
 * in[0..n) are cut off at now_ms, and clears the ack stall of each peer that
 * is not cut off and does not stop reading where a peer cut off within its
 * aftermath waits on its own sending at least as long (sender_stall_s): a
 * victim of that cut-off, not a stall of its own. The culprit itself may
 * stall again in its aftermath, and is left as it is.
 */
void stall_aftermath(struct stall_history *h, struct stall_input *in, size_t n,
		     const struct stall_bounds *b, int64_t now_ms);

#endif
