/* SPDX-License-Identifier: MIT */
#ifndef FABMON_DETECT_HANDOFF_H
#define FABMON_DETECT_HANDOFF_H

#include <stddef.h>
#include <stdint.h>

#include "agent/detect/events.h"
#include "agent/detect/stall.h"
#include "agent/detect/window.h"

/*
 * Slow hand-offs: point-to-point bulk transfers (a prefill host pushing a KV
 * cache to a decode host) that take much longer than they used to. Each tick
 * a peer to which bulk transfers completed brings their mean duration; the
 * newest three such ticks are compared with the ones before them.
 */

/* What one peer brought this tick. */
struct handoff_input {
	const char *peer; /* the remote address */
	double transfers; /* bulk transfers completed, per second (0: none this tick) */
	double seconds; /* their durations summed, per second */
	/* over the stall detector's bound this tick, or not reading, or its
	 * mesh probes lost at random lately (a lossy path's, lossy_link's) */
	int stalled;
	double goodput; /* their bytes over their durations (0: none this tick) */
};

/* What makes a sample slow (below). */
struct handoff_bounds {
	double ratio; /* its duration over the baseline's, at least */
	double extra_s; /* and longer than the baseline's by this at least */
};

#define HANDOFF_PEERS 1024
/* Newest samples judged, and the fewest older ones that make a baseline. */
#define HANDOFF_RECENT 3
#define HANDOFF_BASELINE_MIN 5
struct handoff_peer {
	char peer[48];
	struct window seconds; /* mean transfer duration of each tick with transfers */
	struct window goodput; /* and their bytes per second */
	/* the samples that left the newest HANDOFF_RECENT without being slow */
	struct window baseline;
	struct window baseline_goodput; /* the goodput of each */
	int64_t last_ms; /* last sample */
	int64_t stalled_ms; /* last tick stalled */
};

struct handoff_history {
	struct handoff_peer peers[HANDOFF_PEERS];
	size_t n;
	size_t hint; /* name_find()'s */
};

/*
 * Adds this tick's samples to h (zeroed before first use). A sample joins the
 * baseline once HANDOFF_RECENT newer ones have come, unless it was slow
 * (below): a lasting slowdown stays one until the peer
 * has been idle for window_ms and is forgotten. A transfer that
 * completes within STALL_AFTERMATH_MS of a stall on its peer is the
 * stall's, already reported: it is not a sample. Peers without a sample for
 * window_ms are forgotten.
 */
void handoff_history_update(struct handoff_history *h, const struct handoff_input *in, size_t n,
			    const struct handoff_bounds *b, int64_t window_ms, int64_t now_ms);

/*
 * A slow hand-off: the median of a peer's newest HANDOFF_RECENT samples is at
 * least b->ratio times the median of its baseline, which holds at least
 * HANDOFF_BASELINE_MIN samples, and b->extra_s longer, and the median of
 * their goodput at most 1 / b->ratio times the baseline's. A few
 * milliseconds' transfer made several times longer by a busy host's
 * scheduling (each end waits for a core at each wake-up) is no path's
 * fault: extra_s is the least slowdown that counts. Duration alone reads
 * a change of workload as a slowdown: a lab clean run whose all-gather transfers to a
 * peer (about 1 MiB, 24 ms at the baseline's median) gave way to 4 MiB
 * hand-offs (88 ms; 46-48 MB/s in both) raised a 20 s slow_handoff.
 * Transfers are judged once they complete: one under way that has run past
 * its baseline is as often a sender the host did not schedule (a stream's
 * drain between writes makes "transfers" of a few ms) as a slow path. Peers are
 judged until window_ms after their last sample (a slow transfer completes
 * ticks apart, and the verdict holds between), and only while fewer than three peers
 * are being compared by detect_path (active_paths): with siblings to compare,
 * a slow path is an incast or a straggler. Score: the observed ratio over
 * b->ratio. Writes at most max verdicts; returns how many. Pure: no I/O.
 */
size_t detect_handoff(const struct handoff_history *h, const struct handoff_bounds *b,
		      size_t active_paths, int64_t window_ms, int64_t now_ms,
		      struct event_verdict *out, size_t max);

#endif
