/* SPDX-License-Identifier: MIT */
#ifndef FABMON_DETECT_HOTSPOT_H
#define FABMON_DETECT_HOTSPOT_H

#include <stddef.h>

#include "agent/detect/events.h"

/*
 * What the hotspot detector looks at, per link this tick: how full the link
 * is and whether anything shows congestion on it. Rates are per second over
 * the last tick; a reading the host does not have is 0.
 */
struct hotspot_input {
	char subject[EVENT_SUBJECT_MAX]; /* "interface=eth0" */
	double tx_bytes_rate, rx_bytes_rate;
	double link_bytes; /* link speed, bytes per second; 0 if unknown */
	double shaped_bytes; /* the root qdisc's shaping rate, bytes per second; 0 if none */
	/* congestion evidence */
	double backlog_bytes; /* root qdisc backlog now */
	double backlog_growth; /* its change since the last tick, bytes per second */
	double qdisc_drops_rate; /* root qdisc drops per second */
	double overlimits_rate; /* root qdisc: packets held back over its rate, per second */
	double if_drops_rate; /* the interface's rx + tx drops per second */
	double rx_pause_rate; /* pause frames received per second (ethtool) */
	double ecn_ce_rate; /* ECN CE-marked packets per second (tc probe, all peers) */
};

/*
 * A hotspot: a link near capacity that shows congestion. Utilisation is the
 * larger of tx over the transmit capacity (the smaller of the link speed and
 * the shaping rate) and rx over the link speed — a shaper holds back only what
 * leaves. Over the bound when utilisation >= util_bound (a share, 0.8 for
 * 80 %) and at least one congestion signal is present: drops (qdisc or
 * interface), overlimits, pause received, ECN CE, a backlog that grew, or a
 * standing backlog worth a millisecond of transmit capacity. A full link with
 * no queue is merely well used, and congestion on an idle link is someone
 * else's hotspot. A link of unknown capacity is never one.
 *
 * A link whose hotspot is open stays one while its utilisation is at
 * least HOTSPOT_HOLD_SHARE of util_bound with congestion (a hold verdict,
 * agent/detect/events.h): a congested link's queue overflows, its flows wait out their
 * retransmission timers, and it runs under the bound for a tick or three
 * as they recover (t_spine: a tick at 0.64 with tail drops, a tick idle,
 * one at 0.78 with a backlog, which closed its event mid-fault and opened
 * a second in 2 of 7 runs).
 *
 * Score: utilisation / util_bound (>= 1 for a verdict that is not a hold):
 * how far into saturation the link is. The congestion signals gate but do
 * not scale it, since their units (packets, bytes, frames) do not compare. Evidence: the
 * readings as JSON. Pure: no I/O, no state.
 */
/* The share of util_bound that keeps an open hotspot open. */
#define HOTSPOT_HOLD_SHARE 0.5

/* The link's utilisation as detect_hotspot() reads it (a share of its
 * capacity); < 0 when neither its speed nor its shaping rate is known. */
double hotspot_util(const struct hotspot_input *p);

size_t detect_hotspot(const struct hotspot_input *in, size_t n, double util_bound,
		      struct event_verdict *out, size_t max);

#endif
