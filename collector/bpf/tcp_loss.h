/* SPDX-License-Identifier: MIT */
#ifndef FABMON_TCP_LOSS_H
#define FABMON_TCP_LOSS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Whose path a tick's TCP retransmissions speak of. A retransmission from
 * L to P says a segment or its ACK was lost: on P's path (P's port queues
 * L's data) or on L's (L's port queues P's ACKs). Where L is itself a
 * receiver on this host (a rank or pod in another namespace), and senders
 * other than P lost data towards L in the same tick, L's port is the one
 * losing: an overloaded receiver's port drops the ACKs of its own sending
 * too, and the timeouts that follow retransmit towards peers whose paths
 * lost nothing (the lab's all-to-all with one port at 1/8: its neighbours
 * read as losing as the hot receiver, and one was named an incast beside
 * it). Those retransmissions are L's port's, not P's path's. A host that
 * is not a receiver of its own traffic (one address, remote peers) sees no
 * retransmission towards itself, and every one of its counts as its
 * peer's path's.
 */

/* A (sender, receiver) address pair with retransmissions this tick. */
struct tcp_loss_pair {
	uint8_t family; /* FM_FAMILY_* */
	uint8_t saddr[16], daddr[16];
	uint64_t retransmits;
	/* set by tcp_loss_attribute(): other senders lost data towards
	 * saddr too this tick, so these are not daddr's path's */
	int senders_port;
	/* working: senders that lost data towards daddr this tick */
	unsigned senders_in;
};

/*
 * Sets senders_port of each of p[0..n) (one entry per connection, several
 * may name one pair; retransmits > 0). Reorders p. Pure: no I/O; O(n log n).
 */
void tcp_loss_attribute(struct tcp_loss_pair *p, size_t n);

#endif
