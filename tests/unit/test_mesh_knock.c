/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "suites.h"
#include "testutil.h"

#include "collector/mesh/mesh_knock.h"

#define LOOPBACK 0x7f000001u
#define SECOND_NS 1000000000LL

/* A TCP socket on 127.0.0.1, port 0, listening with backlog (or, with -1,
 * only bound: a port nothing listens on, whose knocks get a reset). Its
 * port into *port. */
static int tcp_on_loopback(int backlog, unsigned *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	if (backlog >= 0)
		ck_assert_int_eq(listen(fd, backlog), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* Polls ks's knocks for up to a second and reaps them; returns how many
 * ended into end. */
static size_t poll_reap(struct mesh_knocks *ks, struct mesh_knock_end *end)
{
	struct pollfd pfd[MESH_KNOCKS_MAX];
	size_t n = ks->n;

	mesh_knocks_poll(ks, pfd);
	ck_assert_int_ge(poll(pfd, n, 1000), 1);
	return mesh_knocks_reap(ks, pfd, n, 0, SECOND_NS, end);
}

/* A kernel answers: with a reset where nothing listens, with a SYN-ACK
 * where something does; either way, the knock ends answered. */
START_TEST(test_kernel_answers)
{
	struct mesh_knocks ks = { 0 };
	struct mesh_knock_end end[MESH_KNOCKS_MAX];
	unsigned closed, open;
	int c = tcp_on_loopback(-1, &closed), l = tcp_on_loopback(4, &open);

	ck_assert_int_eq(mesh_knock_start(&ks, LOOPBACK, closed, 0), 0);
	ck_assert_uint_eq(poll_reap(&ks, end), 1);
	ck_assert_int_eq(end[0].answered, 1);
	ck_assert_uint_eq(end[0].addr, LOOPBACK);
	ck_assert_int_eq(mesh_knock_start(&ks, LOOPBACK, open, 0), 0);
	ck_assert_uint_eq(poll_reap(&ks, end), 1);
	ck_assert_int_eq(end[0].answered, 1);
	ck_assert_uint_eq(ks.n, 0);
	close(c);
	close(l);
}
END_TEST

/* A knock with no answer in its time ends unanswered, with when it was
 * sent; and no more than MESH_KNOCKS_MAX are in flight. */
START_TEST(test_timeout_and_bound)
{
	struct mesh_knocks ks = { 0 };
	struct mesh_knock_end end[MESH_KNOCKS_MAX];
	unsigned closed;
	int c = tcp_on_loopback(-1, &closed);

	for (int i = 0; i < MESH_KNOCKS_MAX; i++)
		ck_assert_int_eq(mesh_knock_start(&ks, LOOPBACK, closed, 5), 0);
	ck_assert_int_eq(mesh_knock_start(&ks, LOOPBACK, closed, 5), -EBUSY);
	/* not polled: none seen done; a second on, every one timed out */
	ck_assert_uint_eq(mesh_knocks_reap(&ks, NULL, 0, 5 + SECOND_NS - 1, SECOND_NS, end), 0);
	ck_assert_uint_eq(mesh_knocks_reap(&ks, NULL, 0, 5 + SECOND_NS, SECOND_NS, end),
			  MESH_KNOCKS_MAX);
	ck_assert_int_eq(end[0].answered, 0);
	ck_assert_int_eq(end[0].sent_ns, 5);
	ck_assert_uint_eq(ks.n, 0);
	close(c);
}
END_TEST

Suite *mesh_knock_suite(void)
{
	const struct testutil_case cases[] = {
		{ "kernel_answers", test_kernel_answers, 0 },
		{ "timeout_and_bound", test_timeout_and_bound, 0 },
	};

	return TESTUTIL_SUITE("mesh_knock", cases);
}
