/* SPDX-License-Identifier: MIT */
#ifndef FABMON_DETECT_PATH_H
#define FABMON_DETECT_PATH_H

#include <stddef.h>
#include <stdint.h>

#include "agent/detect/events.h"
#include "agent/detect/stall.h"
#include "agent/detect/window.h"

/*
 * Slow paths among the peers a host sends to: incast and stragglers. Each
 * tick a peer that was delivered data brings one sample of the kernel's
 * delivery rate towards it, one of the goodput of the bulk transfers to it
 * that completed (bytes over the time data was pending: what the path gave
 * while there was something to move), and the fan-out of its senders. A
 * collective moves the same bytes to every peer and waits for the slowest,
 * so throughput averaged over a tick is equal everywhere; these are not.
 */

/* What one peer brought this tick. */
struct path_input {
	const char *peer; /* the remote address */
	double rate; /* delivery rate, bytes/s; 0 when nothing was delivered this tick */
	double fanout; /* most peers one of its senders delivered to this tick */
	double goodput; /* bytes/s of the bulk transfers completed this tick; 0 if none */
	int stalled; /* over the stall detector's bound this tick, or not reading */
	/* retransmissions towards it its own path explains, per second
	 * (fabmon_tcp_path_retransmits_total: not its senders' ports') */
	double retransmits;
	double acked; /* bytes it acknowledged, per second */
	/* seconds per second the connections to it had data to move; 0 when
	 * this tick's are not the path's measure (the caller's to say: the
	 * peer waits unacked) */
	double busy;
	/*
	 * The peer left data unread this tick (a read stall): its busy rate
	 * is no straggler's sample, as the reader may have set it (its window
	 * fills; a paused rank would be named a straggler before it is a
	 * stall).
	 */
	int unread;
	/* connections to it its receive window held back this tick (closed, or
	 * as full as what is in flight): its host reads slower than the path
	 * delivers, so the path's rate is the reader's, not the network's */
	double window_limited;
	/* where the data to it comes from one local sender that local
	 * connections deliver to too (a ring's previous link): what those gave
	 * while busy this tick, bytes/s; else 0 */
	double upstream_rate;
};

/* The last PATH_SAMPLES delivered ticks of each of up to PATH_PEERS peers. */
#define PATH_SAMPLES WINDOW_SAMPLES
/*
 * A tick whose connections were busy for less than this share of it gives
 * no busy rate: a few ms of a transfer's start or tail are its RTT, not its
 * path's rate. Nor does one without a delivery rate (under 64 KiB
 * acknowledged by any connection to the peer).
 */
#define PATH_BUSY_MIN 0.1
/* Busy rate samples a ring peer needs before it is judged: a new
 * connection's first transfers are its slow start. */
#define PATH_STRAGGLER_SAMPLES 3
/* How long after a loss a ring peer's path counts as losing. */
#define PATH_STRAGGLER_LOSS_MS 1000
/*
 * Ticks in a row an incast's newest samples stay under its bound before it
 * is named: a receiver's slow moment (its queue's loss burst, its host's
 * pause) passes within a tick or two, a hot receiver stays.
 */
#define PATH_INCAST_TICKS 3
/*
 * Loss is retransmitted segments per acknowledged byte, counted from one
 * segment per hundred of 1500 bytes; under that, a tick's few retransmits
 * on a fast path are noise.
 */
#define PATH_LOSS_FLOOR (1.0 / 150000.0)
/*
 * A ring peer whose one sender's own receiving (upstream_rate) reads under
 * this share of the others' is not named a straggler: that sender's port
 * is congested inbound and holds the ACKs of the peer's path. Early in 48
 * lab faults (a ring link at half rate, the first 0.6 s), the next link
 * read under the bound on 75 ticks, with its upstream at 0.39-0.65 of the
 * others' (once 1.14); the slow link's own upstream read under 0.7 on 5
 * of its 203 such ticks (0.52-0.66), under 0.8 on 13.
 */
#define PATH_UPSTREAM_SHARE 0.7
#define PATH_PEERS 1024

struct path_peer {
	char peer[48];
	struct window rate; /* delivery rate samples */
	struct window goodput; /* transfer goodput samples */
	struct window busy; /* busy rate samples: acked bytes over busy seconds */
	int64_t busy_ms; /* the last tick with one */
	double busy_now; /* that tick's sample as judged (detect_path()) */
	double busy_alone; /* and its busy rate alone, without the delivery rate */
	double upstream_rate; /* its sender's receiving's, that tick */
	/* the last tick's acknowledged bytes and busy seconds per second */
	double prev_acked, prev_busy;
	int64_t input_ms; /* that tick: the last the peer was in the input */
	double fanout; /* largest fan-out seen within the window */
	int64_t fanout_ms; /* when it was seen */
	int64_t last_ms; /* last tick with a sample */
	int64_t stalled_ms; /* last tick stalled */
	double loss; /* retransmits per acknowledged byte at loss_ms */
	int64_t loss_ms; /* the last tick that acknowledged or retransmitted */
	int64_t lost_ms; /* the last tick its loss reached PATH_LOSS_FLOOR */
	unsigned over_ticks; /* consecutive ticks judged an incast */
	int64_t over_start_ms, over_ms; /* the first and the last of them */
	int64_t held_ms; /* the last tick its window held its senders back */
	/* named a straggler, and under the hold bound on every tick since */
	int straggling;
};

/*
 * One reading of each peer this tick (NAN: none), and those readings
 * sorted: every peer is set against the median of the others', and one
 * sort a tick serves them all (at 1024 peers, a sort for each peer cost
 * 126 ms a tick, more than the tick; tests/bench/detectcost.c).
 */
struct path_measure {
	double v[PATH_PEERS];
	double sorted[PATH_PEERS];
	unsigned n; /* readings that are not NAN */
};

/* One tick's working readings of detect_path(), kept with the history so
 * that they are not on a stack (about 1.2 MB) and not shared between two
 * histories. Nothing in it outlives the call. */
struct path_scratch {
	double share[PATH_PEERS], mid[PATH_PEERS], held_share[PATH_PEERS];
	size_t others[PATH_PEERS];
	struct path_measure goodput_mid, rate_mid, loss, busy_typical, moving;
	unsigned char over[PATH_PEERS];
};

struct path_history {
	struct path_peer peers[PATH_PEERS];
	size_t n;
	size_t hint; /* name_find()'s */
	char straggler[48]; /* the peer the last tick named a straggler; "" if none */
	struct path_scratch scratch;
};

struct path_config {
	int64_t window_ms; /* a peer with no sample for this long is no longer compared */
	double incast_fraction; /* fan-out peer under this share of the others' median */
	int64_t incast_for_ms; /* for this long, and PATH_INCAST_TICKS ticks */
	double straggler_fraction; /* ring peer (fan-out 1) under this share */
};

/*
 * Adds this tick's samples to h (zeroed by the caller before first use) and
 * forgets peers idle past window_ms. Peers beyond PATH_PEERS are ignored. A
 * peer gives no samples for STALL_AFTERMATH_MS after a stall.
 */
void path_history_update(struct path_history *h, const struct path_input *in, size_t n,
			 int64_t window_ms, int64_t now_ms);

/* Peers with samples, the last within window_ms: the paths being compared. */
size_t path_history_active(const struct path_history *h, int64_t window_ms, int64_t now_ms);

/*
 * Judges every peer active within the window against the median of the
 * other active peers (at least two of them):
 *  - incast: its senders fan out to several peers (an all-to-all) and both
 *    the median of its last 3 transfer goodput samples and the median of its
 *    last 3 delivery rate samples are under incast_fraction of the median of
 *    the others' medians of the same, for PATH_INCAST_TICKS ticks in a row
 *    and incast_for_ms: a busy receiving host slows its paths for about as
 *    long as it leaves a reader unscheduled (host_stall_after).
 *    Either measure alone misleads: an all-to-all's short bursts make the
 *    rate estimate jump past any link (ACKs come compressed), and goodput to
 *    one peer mixes all its senders. A tick its receive window held a
 *    sender back (path_input's window_limited) is no incast's: the reader
 *    set that pace, not the path, and such a tick ends the run. Loss does not name an incast: in a
 *    congested all-to-all every receiver's queue drops now and then, and
 *    the path that lost this tick is any one of them. Its loss over the
 *    others' is in the evidence;
 *  - straggler: its senders send to it alone (a ring neighbour), it has
 *    PATH_STRAGGLER_SAMPLES busy rate samples, and this tick's, and its
 *    delivery rate too, are under straggler_fraction of the median of the
 *    others' typical busy rates (each the median of its newest 3). The
 *    busy rate, bytes acknowledged over the time there was data to move,
 *    is what the path gives while used: a ring paced by one slow link
 *    leaves the others idle between steps, which dilutes their throughput
 *    to the slow one's but not their busy rate, and a slow link shows on
 *    its first tick. A receiver's host that stalls for a moment slows its
 *    link's busy rate as much, but its ACKs then come in a burst, and the
 *    delivery rate jumps past the link's (the lab's clean runs: busy at
 *    0.4 of the others, delivery rate at 18 times): a slow link paces its
 *    ACKs, and both are low. Within PATH_STRAGGLER_LOSS_MS of a loss
 *    (PATH_LOSS_FLOOR) the busy rate is the lower of this tick's and
 *    that over this tick and the one before together: a retransmission
 *    that fills a hole acknowledges at once data that arrived while the
 *    hole held it, which lifts one tick's busy rate over what the path
 *    gave and sinks the one before's; over both it evens out, and a slow
 *    link's first losing tick stays as low as it reads. The delivery rate
 *    is not enough there on its own: on clean ticks after a loss it dips
 *    to a third of the others' (a 600 s clean lab run: 15 ticks under the
 *    bound and 2 false events with it alone, 2 ticks and none so). A ring has
 *    one slowest link, and its queue holds the next link's ACKs, which
 *    slows that one too, for a tick or a few (as much as the slow link
 *    itself, for half a second after the lab's port slowed). So a peer
 *    whose one sender's own receiving (upstream_rate) reads under
 *    PATH_UPSTREAM_SHARE of the others' is not named: that sender's port
 *    is congested inbound and holds the ACKs of the peer's path. At a
 *    fault's onset the next link can dip under the bound a tick or two
 *    before the slow one does (about 1 t_straggler run in 10 named it
 *    so), while the slow one already reads under that share; and while
 *    the slow one holds (below) reading just over the bound, the next
 *    one can dip under it (before this rule, 1 of 16 lab faults named
 *    the next link at 0.42 of the others beside the slow one's 0.61). Of
 *    the other peers under the bound one is named, the first of: one
 *    whose path lost data within PATH_STRAGGLER_LOSS_MS (the slow link's
 *    queue overflows; a link whose ACKs wait in it loses nothing), the
 *    one named the tick before, the one with the lowest typical rate.
 *    The events' ticks in a row (event_open_ticks) make it persistent.
 *    After it, a ring peer not named this tick, but named before and
 *    under the halfway point between straggler_fraction and the others'
 *    median (0.8 at 0.6) on every tick since (a tick it is not judged on
 *    ends that), gives a VERDICT_HOLD: it keeps the peer's open straggler
 *    open, and never opens one. A hold reads the busy rate alone, without
 *    the delivery rate: mid-fault, a half-rate link's delivery rate read
 *    1.3-21 times the others' on two or three ticks in a row while its
 *    busy rate stayed at 0.3-0.5, and its straggler closed and opened
 *    again (6 of 96 lab faults). A half-rate link read 0.60-0.72 on three
 *    ticks in a row early in its fault in 2 of 9 t_straggler runs (the
 *    others' typical still rising as the ring's pace let them run
 *    faster), and its one straggler closed and opened again. A peer is not
 *    judged on a tick when the median of the other peers' busy time was
 *    under PATH_BUSY_MIN: a slow link slows a ring, it does not stop it
 *    (the others stayed busy 0.25-1.0 of each tick of 12 t_straggler runs),
 *    while a rank that stops reading stops the whole ring within a tick or
 *    two (0.00-0.02 on the second tick after SIGSTOP in 4 of 6 t_pause_rank
 *    runs), and the stopped reader's path, acknowledging the last of what
 *    it took, reads 0.1-0.6 of the others' on both ticks before its read
 *    stall shows: a bench run named it a straggler beside its stall.
 * A peer is judged only once it has the samples its verdict looks at, so a
 * new connection's slow start is not one. Score: the bound over the
 * observed share (1 at the threshold).
 * Writes at most max verdicts to out; returns how many. Pure (no I/O); it
 * keeps the straggler's run of ticks in h, counting each tick (now_ms) once.
 */
size_t detect_path(struct path_history *h, const struct path_config *cfg, int64_t now_ms,
		   struct event_verdict *out, size_t max);

#endif
