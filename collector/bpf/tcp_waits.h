/* SPDX-License-Identifier: MIT */
#ifndef FABMON_TCP_WAITS_H
#define FABMON_TCP_WAITS_H

#include <stdint.h>

#include "bpf/fabmon.h"

/*
 * What one connection's fm_tcp entry (bpf/tcp.bpf.c) says about waiting, at
 * now_ns on the probes' clock (CLOCK_MONOTONIC). retransmits_seen: the
 * tcp_retransmit_skb probe is up, without which a live connection's
 * retransmission timeouts leave no trace in the entry. Pure: no I/O.
 */

/* Acks this long after the peer last read prove it alive and not reading
 * (tcp_waits()). An application reading a stream does so more often: a
 * reading rank's acks without a read spanned a few ms in the lab, and a
 * link that went down then left its read stall within 10 ms of its ack
 * stall. A paused rank's window takes 100-400 ms to fill there. */
#define TCP_READ_PROOF_NS (100 * 1000000LL)
/*
 * A connection with data outstanding is never quiet for long while it
 * lives: it retransmits at each RTO, the RTO doubling from the first (RFC
 * 6298 5.5), or the peer ACKs its window probes; each of those refreshes
 * last_ns. Between two retransmissions the quiet time is at most the wait
 * before the first plus an RTO, so well under 9/10 of the wait once the
 * wait passes a few RTOs; an entry quiet for at least 9/10 of its wait and
 * TCP_ORPHAN_QUIET_NS is a connection that went away unseen (no close
 * reached tcp_state), and its wait is not a stall. A clean bench run once
 * had two such entries stalled for exactly bpf_flow_idle, 120 s, until the
 * collector aged them out.
 */
#define TCP_ORPHAN_QUIET_NS (2000 * 1000000LL)

/*
 * When v last waited for acks with data in flight for FM_ACK_WAIT_NS or
 * more (a loss, or a path down): now_ns while it waits, else when such a
 * wait last ended; 0 if never, or if v went away unseen.
 */
int64_t tcp_loss_ns(const struct fm_tcp_val *v, int64_t now_ns, int retransmits_seen);

/*
 * The waits of v, which has data outstanding (in flight, or queued behind a
 * closed window): *waited, seconds without ack progress; *unread, seconds
 * since the peer's application last read, once its kernel has proved alive
 * and not reading (it went on acknowledging for TCP_READ_PROOF_NS after
 * both that read and loss_ns, or closed its window), else 0. loss_ns: the
 * latest tcp_loss_ns() over the connections to the same peer. Returns 1,
 * or 0 with nothing set for a connection that went away unseen.
 */
int tcp_waits(const struct fm_tcp_val *v, int64_t now_ns, int retransmits_seen, int64_t loss_ns,
	      double *waited, double *unread);

#endif
