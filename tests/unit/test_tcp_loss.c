/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "suites.h"
#include "testutil.h"

#include "bpf/fabmon.h"
#include "collector/bpf/tcp_loss.h"

/* A pair from 198.18.0.s to 198.18.0.d (the lab's ranks) with r retransmits. */
static struct tcp_loss_pair pair(unsigned s, unsigned d, uint64_t r)
{
	struct tcp_loss_pair p;

	memset(&p, 0, sizeof(p));
	p.family = FM_FAMILY_IPV4;
	p.saddr[0] = p.daddr[0] = 198;
	p.saddr[1] = p.daddr[1] = 18;
	p.saddr[3] = (uint8_t)s;
	p.daddr[3] = (uint8_t)d;
	p.retransmits = r;
	return p;
}

/* senders_port of the entry from s to d in p[0..n) (reordered); -1: none. */
static int port_of(const struct tcp_loss_pair *p, size_t n, unsigned s, unsigned d)
{
	for (size_t i = 0; i < n; i++)
		if (p[i].saddr[3] == s && p[i].daddr[3] == d)
			return p[i].senders_port;
	return -1;
}

/*
 * The lab's incast: rank 3's port drops what ranks 1, 2 and 4 send it, and
 * the ACKs of its own sending, whose timeouts retransmit towards them.
 * Those are rank 3's port's; the others' are rank 3's path's.
 */
START_TEST(test_hot_receiver)
{
	struct tcp_loss_pair p[] = { pair(3, 4, 2),  pair(1, 3, 40), pair(3, 1, 1),
				     pair(2, 3, 35), pair(4, 3, 30), pair(3, 2, 3) };
	size_t n = sizeof(p) / sizeof(p[0]);

	tcp_loss_attribute(p, n);
	for (unsigned s = 1; s <= 4; s++) {
		if (s == 3)
			continue;
		ck_assert_int_eq(port_of(p, n, s, 3), 0);
		ck_assert_int_eq(port_of(p, n, 3, s), 1);
	}
}
END_TEST

/* A host with one address and remote peers: nothing is lost towards it
 * that it sees, and every retransmission is its peer's path's. */
START_TEST(test_remote_peers)
{
	struct tcp_loss_pair p[] = { pair(9, 1, 5), pair(9, 3, 50), pair(9, 4, 1) };

	tcp_loss_attribute(p, 3);
	for (size_t i = 0; i < 3; i++)
		ck_assert_int_eq(p[i].senders_port, 0);
}
END_TEST

/* Two ranks that lose only towards each other: neither port is known to
 * be the one losing, so each counts against the other's path. */
START_TEST(test_exchange)
{
	struct tcp_loss_pair p[] = { pair(1, 2, 4), pair(2, 1, 6) };

	tcp_loss_attribute(p, 2);
	ck_assert_int_eq(port_of(p, 2, 1, 2), 0);
	ck_assert_int_eq(port_of(p, 2, 2, 1), 0);
}
END_TEST

/*
 * A ring whose link to rank 3 is slow: its queue drops rank 2's data and
 * the ACKs of rank 3's sending to rank 4. Several connections of one pair
 * are one sender: rank 4's loss from rank 3 alone is rank 3's port's.
 */
START_TEST(test_ring_next_link)
{
	struct tcp_loss_pair p[] = { pair(2, 3, 7), pair(3, 4, 1), pair(2, 3, 2), pair(3, 4, 4) };

	tcp_loss_attribute(p, 4);
	ck_assert_int_eq(port_of(p, 4, 2, 3), 0);
	ck_assert_int_eq(port_of(p, 4, 3, 4), 1);
	for (size_t i = 0; i < 4; i++)
		ck_assert_uint_eq(p[i].senders_in, 1);
}
END_TEST

/* None, as a collector that has seen no loss yet passes them (no array):
 * nothing to sort or read (the sanitizer build checks qsort() is not
 * handed NULL). */
START_TEST(test_empty)
{
	tcp_loss_attribute(NULL, 0);
}
END_TEST

Suite *tcp_loss_suite(void)
{
	const struct testutil_case cases[] = {
		{ "hot_receiver", test_hot_receiver, 0 },
		{ "remote_peers", test_remote_peers, 0 },
		{ "exchange", test_exchange, 0 },
		{ "ring_next_link", test_ring_next_link, 0 },
		{ "empty", test_empty, 0 },
	};

	return TESTUTIL_SUITE("tcp_loss", cases);
}
