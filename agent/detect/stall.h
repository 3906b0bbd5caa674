/* SPDX-License-Identifier: MIT */
#ifndef FABMON_DETECT_STALL_H
#define FABMON_DETECT_STALL_H

#include <stddef.h>
#include <stdint.h>

#include "agent/detect/events.h"

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
	 * reading any (its window's edge stood still, or it closed); and, as
	 * sender_stall_s, the same for its own connections' receivers */
	double read_stall_s;
	double sender_read_stall_s;
	/* as sender_stall_s: how long its longest send under way has run */
	double sender_busy_s;
	/* an incast paces this host's collective this tick (detect_path()) */
	int paced;
	/* how long ago any connection to it, or from it as sender_stall_s,
	 * last had data acknowledged; 0: none known */
	double progress_age_s;
	/* this host's own longest send to the peer under way: how long */
	double open_s;
	/* the path delivers: the mesh's probes to the peer were answered in
	 * the second half of its wait for acks (the connection waits on its
	 * own backed-off retransmission timer, in a congested queue) */
	int reached;
};

/*
 * A wait for acks of this share of stall_after, under it, holds an open stall
 * (VERDICT_HOLD): a connection back from a retransmission timeout can move
 * once and then wait again on its next, backed-off timer, and a path that
 * moves is acked within a round trip.
 */
#define STALL_HOLD_SHARE 0.25

struct stall_bounds {
	double after_s; /* the network's: data in flight and no ack progress this long */
	double host_after_s; /* the host's: acked and not read this long */
};

/*
 * Two kinds, told apart by whose evidence it is.
 *
 * stall (network): a peer with data in flight, its window open, and no ack
 * progress for b->after_s or more (a downed link, a black hole, a path cut
 * both ways); or with data to it and from it (sender_stall_s, where this
 * host sees its senders) both unacked for b->after_s and nothing to or from
 * it acknowledged for as long (progress_age_s: cut off). Score: the wait
 * over after_s; VERDICT_AT_ONCE when cut off (two connections in opposite
 * directions wait on no one timer: the wait was the persistence), else
 * VERDICT_OVER. Not while an incast paces the collective (paced) for data
 * that waits both ways: the hot receiver's port queues both directions.
 * Never on a peer the mesh still reaches (reached), nor, for data one way,
 * on one whose other connections had data acknowledged in the wait's
 * second half (progress_age_s under half the wait): a cut silences the
 * probes and every connection together, and a path that loses some is the
 * mesh's lossy_link to name.
 *
 * host_stall (host): a peer whose kernel went on acknowledging data its
 * application has not read for b->host_after_s or more (read_stall_s: the
 * path works, the application stopped), unless the application waits on a
 * send of its own that still moves (sender_busy_s at least its read stall,
 * sender_stall_s under it): then the slow path is the network's to name.
 * Score: the read stall over host_after_s; VERDICT_AT_ONCE (the wait was
 * the persistence).
 *
 * A stalled collective stalls its other ranks within a tick; where this host
 * sees the peers' own senders (sender_*), the victims are left out:
 *  - a peer that stopped reading is a victim if its own sending has been
 *    blocked at least as long: it waits on someone else;
 *  - with a peer cut off, the other network-stalled peers are its victims.
 * If that would leave no one of a kind (a cycle), every one is reported.
 * The culprit's evidence counts the victims left out.
 *
 * After those, a VERDICT_HOLD stall for each peer under the bounds, and not
 * reached either way, that has waited for acks of data in flight STALL_HOLD_SHARE of
 * after_s or more: it keeps the peer's open stall open and does nothing else. Writes at most max verdicts into
 * out; returns how many. Pure: no I/O, no state.
 */
size_t detect_stall(const struct stall_input *in, size_t n, const struct stall_bounds *b,
		    struct event_verdict *out, size_t max);

/* This host's own side, per local address: data its applications left
 * unread (collector/unread.h), which the peers may not see. */
struct unread_input {
	const char *local; /* the address */
	double unread_s; /* the longest any connection's data stood unread */
	double connections, bytes; /* connections whose data stood, and how much */
	double reading; /* connections whose application read since the previous reading */
	/* how long the connection its application most likely waits on has
	 * received nothing (unread_awaited(): quiet since before the data
	 * stood); 0: none */
	double awaited_s;
};

/* This host's unread episodes excused as a wait on another (below), up to
 * UNREAD_EXCUSED_MAX local addresses: the unread time each had. */
#define UNREAD_EXCUSED_MAX 16

struct unread_history {
	struct {
		char local[48];
		double unread_s;
	} excused[UNREAD_EXCUSED_MAX];
	size_t n;
};

/*
 * host_stall (host) on this host: data stood unread in a receive queue of
 * its connections from local for b->host_after_s or more and no connection
 * from local was read since the previous reading (its application stopped, and
 * its kernel took what the peers sent: one that reads anything is alive,
 * and may be waiting for another peer's data first), unless the
 * application has waited on another as long, a victim: in a send of its
 * own under way (a peer of peers[0..npeers) with open_s at least as long;
 * one that moves is the network's to name if slow, one a receiver's closed
 * window holds waits on that receiver), on data to a peer unacknowledged
 * as long (ack_stall_s: a cut path holds its send), or on a peer that
 * stopped reading (stall_input.read_stall_s, as detect_stall() takes it)
 * as long: a rank whose chunk went into a stopped one's buffer then waits
 * for the stopped one's chunk (a stopped rank in an all-to-all stops every
 * rank); or in a receive of its own from a peer gone quiet (awaited_s) at
 * most b->host_after_s before the data stood: an application blocks on its
 * next receive within moments of its last, and a connection quiet longer is
 * idle, not awaited. An episode so excused stays so, in h (zeroed by the caller before
 * first use), while its unread time grows: the wait can end a tick before
 * the application reads again. Subject "host=LOCAL", score and weight as a
 * peer's host_stall. Writes at most max verdicts into out; returns how many.
 */
size_t detect_unread(const struct unread_input *in, size_t n, const struct stall_input *peers,
		     size_t npeers, const struct stall_bounds *b, struct unread_history *h,
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
 * for up to as long again as it was cut off, which began after_s
 * before it was seen (the timeout doubles with each
 * retransmission, RFC 6298 5.5); the peers it sends to then show waits that
 * are its. Notes in h (zeroed by the caller before first use) which peers of
 * in[0..n) are cut off at now_ms, and clears the ack stall of each peer that
 * is not cut off and does not stop reading where a peer cut off within its
 * aftermath waits on its own sending at least as long (sender_stall_s): a
 * victim of that cut-off, not a stall of its own. The culprit itself may
 * stall again in its aftermath, and is left as it is; its read stall is
 * cleared (its application, too, waits on those timers), as is any peer's
 * that began before the cut-off ended: while cut off, the collective
 * waited on it (no host_stall then), and that wait ends with its
 * aftermath, not with the cut-off.
 */
void stall_aftermath(struct stall_history *h, struct stall_input *in, size_t n,
		     const struct stall_bounds *b, int64_t now_ms);

#endif
