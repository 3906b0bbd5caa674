/* SPDX-License-Identifier: MIT */
#ifndef FABMON_DETECT_ROCE_H
#define FABMON_DETECT_ROCE_H

#include <stddef.h>

#include "agent/detect/events.h"

/*
 * Incast seen in RoCEv2 traffic itself, where no TCP socket is there to time:
 * a mirror port's capture, a capture file, Soft-RoCE under the tc probe.
 * Switches mark ECN CE on the packets queued towards a congested port (DCQCN,
 * IBTA A17.9), so in an all-to-all the packets towards an incast receiver
 * carry CE marks while those towards the other receivers do not. Each tick
 * brings, per destination peer, the rate of RoCEv2 packets sent towards it
 * and of those marked CE.
 */

struct roce_input {
	const char *peer; /* the destination address */
	double packets; /* RoCEv2 data packets/s towards it (send, write, read response) */
	double ce; /* CE-marked packets/s towards it */
};

/* A peer is judged only with at least this many packets a second towards it:
 * a share of a handful of packets is noise. */
#define ROCE_MIN_PACKETS 100
/* At least this share of its packets must be CE-marked: ECN marking starts
 * below any queue that costs much (DCQCN's Kmin), so a sliver is normal. */
#define ROCE_MIN_CE_FRACTION 0.01

/*
 * Judges every peer against the other peers (at least two with
 * ROCE_MIN_PACKETS): an incast receiver has a CE share of at least
 * ROCE_MIN_CE_FRACTION and the median of the others' CE shares is under
 * incast_fraction of its own (with the default 25 %: four times as
 * congested). Score: its share times incast_fraction over the others'
 * median (1 at the threshold; a large number when the others have none).
 * Writes at most max verdicts to out; returns how many. Pure: no I/O.
 */
size_t detect_roce(const struct roce_input *in, size_t n, double incast_fraction,
		   struct event_verdict *out, size_t max);

#endif
