/* SPDX-License-Identifier: MIT */
#ifndef FABMON_UNREAD_H
#define FABMON_UNREAD_H

#include <stdint.h>

/*
 * How long data has stood unread in this host's TCP receive queues: an
 * application that stopped reading (paused, hung) while its kernel took what
 * its peers sent. Its peers cannot always see that: a chunk that fits whole
 * in the receive buffer leaves the window over half open, so the receiver
 * sends no window update and the senders see an idle connection
 * (tcp_cleanup_rbuf()). Only this host's sockets show it.
 *
 * Read at ticks, a connection's data stands when it had data unread at the
 * tick before and its application has read none of it since: the wait is
 * counted from that tick on (a lower bound, within a tick). A connection
 * whose application read since the tick before says the application is
 * alive: data it leaves standing elsewhere waits on its own choice (a
 * read from another peer first), not on a stop.
 */

/* One ESTABLISHED connection's receive side at a tick, as sock_diag gives it. */
struct unread_sock {
	uint64_t cookie; /* the kernel's socket cookie (idiag_cookie): one connection */
	/* bytes its application has read: received in order (tcp_info's
	 * tcpi_bytes_received) less what is still queued; it moves as the
	 * application reads, whatever arrives */
	uint64_t read;
	uint32_t unread; /* idiag_rqueue: rcv_nxt - copied_seq */
};

struct unread_tracker;

/* A tracker for up to max connections. NULL on allocation failure. */
struct unread_tracker *unread_tracker_new(unsigned max);
void unread_tracker_free(struct unread_tracker *t);

/*
 * Notes s, read at now_ms in tick number tick (one more each tick), and
 * returns how long its data has stood unread, in seconds: 0 unless it had
 * data unread at the tick before (tick - 1) and its application read none
 * since; then from the first tick of that run. *ret_read: 1 if its
 * application read since the tick before (noted then), else 0. A
 * connection beyond max is not tracked (0, 0).
 */
double unread_note(struct unread_tracker *t, const struct unread_sock *s, int64_t now_ms,
		   uint64_t tick, int *ret_read);

/*
 * What an application that left data standing unread for unread_s (0:
 * none) most likely waits on: a receive of its own from a peer gone quiet
 * (a rank in a collective blocked on a stopped one leaves its other peers'
 * data unread). Of the connections with nothing unread, the one that went
 * quiet last no later than the data began to stand: its quiet time, from
 * best, the choice so far (0: none), and one more such connection, quiet
 * (tcpi_last_data_recv) for quiet_s. Returns the new choice; 0 while nothing
 * stands.
 */
double unread_awaited(double best, double quiet_s, double unread_s);

/* Forgets the connections tick did not note: closed. */
void unread_end_tick(struct unread_tracker *t, uint64_t tick);

#endif
