/* SPDX-License-Identifier: MIT */
#include "suites.h"
#include "testutil.h"

#include "collector/bpf/tcp_waits.h"

#define MS 1000000LL
#define NOW (10000 * MS) /* the probes' clock: 10 s after boot */

/* A connection with 100 kB in flight, last acked ack_ms ago, its peer's
 * last read read_ms ago; the peer's window is open. */
static struct fm_tcp_val conn(int64_t ack_ms, int64_t read_ms)
{
	struct fm_tcp_val v = { .probes = 100, .in_flight = 100000, .snd_wnd = 1 << 20 };

	v.progress_ns = v.last_ns = (uint64_t)(NOW - ack_ms * MS);
	v.read_ns = (uint64_t)(NOW - read_ms * MS);
	return v;
}

/* v's read stall, seconds, given the peer's latest loss at loss_ns. */
static double unread_of(const struct fm_tcp_val *v, int64_t loss_ns)
{
	double waited = -1, unread = -1;

	ck_assert_int_eq(tcp_waits(v, NOW, 1, loss_ns, &waited, &unread), 1);
	ck_assert_double_ge(waited, 0);
	return unread;
}

/* A peer whose kernel went on acknowledging for 100 ms and more after its
 * last read stopped reading: its read stall runs from that read. Within the
 * first 100 ms it is not yet told from a reader between two reads. */
START_TEST(test_stopped_reader)
{
	struct fm_tcp_val v = conn(5, 400);

	ck_assert_int_eq(tcp_loss_ns(&v, NOW, 1), 0);
	ck_assert_double_eq_tol(unread_of(&v, 0), 0.4, 1e-9);
	v = conn(5, 90);
	ck_assert_double_eq(unread_of(&v, 0), 0);
}
END_TEST

/*
 * The ACK of a retransmission, 0.2 s after the last before it, leaves the
 * edge where it stood: the application could not read past the hole until
 * then. That is no proof (a clean all-to-all raised a 0.30 s read stall so),
 * while acks that go on for 100 ms after it, without a read, are.
 */
START_TEST(test_resumed_after_loss)
{
	struct fm_tcp_val v = conn(50, 300);

	v.resumed_ns = (uint64_t)(NOW - 50 * MS);
	ck_assert_int_eq(tcp_loss_ns(&v, NOW, 1), NOW - 50 * MS);
	ck_assert_double_eq(unread_of(&v, tcp_loss_ns(&v, NOW, 1)), 0);
	/* the old proof, from the read alone, would have named it */
	ck_assert_double_eq_tol(unread_of(&v, 0), 0.3, 1e-9);

	v = conn(1, 400);
	v.resumed_ns = (uint64_t)(NOW - 120 * MS);
	ck_assert_double_eq_tol(unread_of(&v, tcp_loss_ns(&v, NOW, 1)), 0.4, 1e-9);
}
END_TEST

/*
 * A rank reads a peer's next chunk only once the chunk a loss holds up on
 * another connection is in: while data to it waits for acks, and for 100 ms
 * after, the others' unread data is no proof that it stopped.
 */
START_TEST(test_loss_on_sibling)
{
	struct fm_tcp_val waiting = conn(250, 250), unread = conn(2, 400);

	ck_assert_int_eq(tcp_loss_ns(&waiting, NOW, 1), NOW);
	ck_assert_double_eq(unread_of(&unread, tcp_loss_ns(&waiting, NOW, 1)), 0);
	ck_assert_double_eq(unread_of(&unread, NOW - 60 * MS), 0);
	ck_assert_double_eq_tol(unread_of(&unread, NOW - 150 * MS), 0.4, 1e-9);
}
END_TEST

/* What is no loss: a wait under FM_ACK_WAIT_NS, data queued behind a closed
 * window with nothing in flight, a connection that went away unseen. */
START_TEST(test_not_losses)
{
	struct fm_tcp_val v = conn(FM_ACK_WAIT_NS / MS - 1, 500);
	double waited = -1, unread = -1;

	ck_assert_int_eq(tcp_loss_ns(&v, NOW, 1), 0);
	v = conn(3000, 3000);
	v.in_flight = 0;
	v.unsent = 65536;
	v.snd_wnd = 0;
	v.last_ns = (uint64_t)(NOW - 100 * MS); /* the answer to a window probe */
	ck_assert_int_eq(tcp_loss_ns(&v, NOW, 1), 0);
	/* a closed window proves a reader that stopped at once, loss or not */
	ck_assert_double_eq_tol(unread_of(&v, NOW), 3.0, 1e-9);

	v = conn(5000, 5000);
	ck_assert_int_eq(tcp_loss_ns(&v, NOW, 1), 0);
	ck_assert_int_eq(tcp_waits(&v, NOW, 1, 0, &waited, &unread), 0);
	/* without the retransmit probe, quiet is no sign of a connection gone */
	ck_assert_int_eq(tcp_loss_ns(&v, NOW, 0), NOW);
	ck_assert_int_eq(tcp_waits(&v, NOW, 0, 0, &waited, &unread), 1);
	ck_assert_double_eq_tol(waited, 5.0, 1e-9);
}
END_TEST

Suite *tcp_waits_suite(void)
{
	const struct testutil_case cases[] = {
		{ "stopped_reader", test_stopped_reader, 0 },
		{ "resumed_after_loss", test_resumed_after_loss, 0 },
		{ "loss_on_sibling", test_loss_on_sibling, 0 },
		{ "not_losses", test_not_losses, 0 },
	};

	return TESTUTIL_SUITE("tcp_waits", cases);
}
