/* SPDX-License-Identifier: MIT */
#ifndef FABMON_DETECT_LOSSY_H
#define FABMON_DETECT_LOSSY_H

#include <stddef.h>
#include <stdint.h>

#include "agent/detect/events.h"

/*
 * A lossy link: a port that corrupts or loses packets while it is not busy
 * enough for congestion to explain it (a bad cable, optic or connector).
 * Each tick brings, per local port, the rate of its error counters beside
 * the packets it moved and how full it is.
 */
struct lossy_input {
	char subject[EVENT_SUBJECT_MAX]; /* "interface=eth0", "device=mlx5_0,port=1" */
	/* errors per second: Ethernet FCS and symbol errors (ethtool); RDMA
	 * symbol errors, receive errors, link error recoveries, and the
	 * transport's out_of_sequence, packet_seq_err, local_ack_timeout_err */
	double errors;
	double packets; /* packets per second through the port, both ways */
	double util; /* share of its capacity in use, the busier direction; < 0 if unknown */
};

struct lossy_bounds {
	double error_share; /* errors per packet at least this (lossy_link_ppm / 1e6) */
	double util; /* the port under this share of its capacity (hotspot_util_percent) */
	int64_t window_ms; /* over this long, on two ticks or more (lossy_link_for) */
};

/* The newest LOSSY_SAMPLES ticks of up to LOSSY_PORTS ports. */
#define LOSSY_SAMPLES 64
#define LOSSY_PORTS 256

struct lossy_port {
	char subject[EVENT_SUBJECT_MAX];
	struct {
		int64_t ms;
		double errors, packets; /* counted over the tick */
		double util;
	} tick[LOSSY_SAMPLES];
	unsigned next, count;
	int64_t last_ms; /* the last tick it was in the input */
};

struct lossy_history {
	struct lossy_port ports[LOSSY_PORTS];
	size_t n;
};

/*
 * Adds this tick's readings to h (zeroed by the caller before first use):
 * each rate times the time since the port's last tick. Ports absent for
 * window_ms are forgotten; ports beyond LOSSY_PORTS are ignored.
 */
void lossy_history_update(struct lossy_history *h, const struct lossy_input *in, size_t n,
			  int64_t window_ms, int64_t now_ms);

/*
 * A lossy_link (cause network): a port whose errors over the last
 * b->window_ms, counted on two ticks or more (one burst, as a link
 * retraining, is no lossy link), are at least b->error_share of the packets
 * it moved, while it stayed under b->util of its capacity on every tick of
 * them (a fuller link's drops are a queue's: a hotspot's to name, and
 * RDMA's sequence errors and timeouts come from congestion drops too). A
 * port whose capacity is unknown is judged on its errors alone. The window
 * was the persistence: the verdict opens the event at once, and it closes
 * once the window holds under two erring ticks. Score: the error share over
 * the bound. Writes at most max verdicts into out; returns how many. Pure:
 * no I/O.
 */
size_t detect_lossy(const struct lossy_history *h, const struct lossy_bounds *b, int64_t now_ms,
		    struct event_verdict *out, size_t max);

#endif
