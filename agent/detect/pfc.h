/* SPDX-License-Identifier: MIT */
#ifndef FABMON_DETECT_PFC_H
#define FABMON_DETECT_PFC_H

#include <stddef.h>

#include "agent/detect/events.h"

/*
 * What the PFC storm detector looks at, per port this tick. An Ethernet
 * port (ethtool) gives the share of time it was paused; an RDMA port (sysfs)
 * gives PortXmitWait — ticks with data to send and no credit — beside what it
 * actually sent, since its tick length is the device's own.
 */
struct pfc_input {
	char subject[EVENT_SUBJECT_MAX]; /* "interface=eth0,priority=3", "device=mlx5_0,port=1" */
	double paused_fraction; /* seconds paused per second; < 0 if unknown */
	double xmit_wait_rate; /* PortXmitWait ticks per second; < 0 if unknown */
	double tx_bytes_rate; /* bytes sent per second */
	double link_bytes; /* link rate in bytes per second; 0 if unknown */
};

/*
 * A PFC storm: a port held by pause frames. Over the bound when the port was
 * paused for at least paused_bound of the time, or when it had data waiting
 * every tick (xmit_wait rising) while sending under 1 % of its link rate: a
 * frozen port rather than a busy one. Score: paused_fraction / paused_bound,
 * or 1 + how far under 1 % the port sent. Pure: no I/O, no state.
 */
size_t detect_pfc(const struct pfc_input *in, size_t n, double paused_bound,
		  struct event_verdict *out, size_t max);

#endif
