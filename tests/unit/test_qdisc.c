/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "suites.h"
#include "testutil.h"

/*
 * The qdisc collector reads the network namespace it starts in, so each test
 * makes a private one (Check forks every test: the namespace, its veth pair
 * and qdiscs vanish with the test process, pass or fail). Addresses come from
 * the benchmarking range 198.18.0.0/15; nothing leaves the namespace.
 *
 * fmq0: root tbf, handle 1a:, shaping to 1 Mbit/s so that a burst queues.
 * fmq1: root htb 1:, class 1:10, and a tbf 10: under it (a non-root parent).
 * 198.18.0.2 is a permanent neighbour on fmq0 that no one owns, so datagrams
 * to it leave through fmq0's qdisc without waiting for ARP. With IPv6 off
 * (no router solicitations, no MLD) they are the only packets fmq0 sends,
 * and the test can hold the kernel's counts to the exact figures.
 */
#define LAB_SETUP                                                                                  \
	"set -e; exec >/dev/null; ip link set lo up; "                                             \
	"[ ! -d /proc/sys/net/ipv6 ] || sysctl -qw net.ipv6.conf.default.disable_ipv6=1; "         \
	"ip link add fmq0 type veth peer name fmq1; "                                              \
	"ip link set fmq0 up; ip link set fmq1 up; "                                               \
	"ip addr add 198.18.0.1/24 dev fmq0; "                                                     \
	"ip neigh add 198.18.0.2 lladdr 02:00:c6:12:00:02 dev fmq0 nud permanent; "                \
	"tc qdisc add dev fmq0 root handle 1a: tbf rate 1mbit burst 4k latency 400ms; "            \
	"tc qdisc add dev fmq1 root handle 1: htb default 10; "                                    \
	"tc class add dev fmq1 parent 1: classid 1:10 htb rate 10mbit; "                           \
	"tc qdisc add dev fmq1 parent 1:10 handle 10: tbf rate 10mbit burst 16k latency 50ms"

#define LAB_PACKETS 40
#define LAB_PAYLOAD 1000
/* what tbf counts per datagram: the frame, Ethernet (14) + IPv4 (20) + UDP (8) headers */
#define LAB_FRAME (LAB_PAYLOAD + 14 + 20 + 8)
#define T0 1700000000000

#define FMQ0_TBF "{interface=\"fmq0\",kind=\"tbf\",handle=\"1a:\",parent=\"root\"}"

/* Makes the private namespace; returns 0, or -errno after saying why the test skips. */
static int lab_up(const char *test)
{
	int r = testutil_netns_enter(0, test);

	if (r < 0)
		return r;
	ck_assert_msg(system(LAB_SETUP) == 0, "lab setup failed (ip, tc, veth, tbf, htb): %s",
		      LAB_SETUP);
	return 0;
}

/* Sends LAB_PACKETS UDP datagrams to the discard port of 198.18.0.2, via fmq0. */
static void lab_send(void)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(9) };
	char payload[LAB_PAYLOAD];
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(inet_pton(AF_INET, "198.18.0.2", &to.sin_addr), 1);
	memset(payload, 0xab, sizeof(payload));
	for (int i = 0; i < LAB_PACKETS; i++)
		ck_assert_int_eq(
			sendto(fd, payload, sizeof(payload), 0, (struct sockaddr *)&to, sizeof(to)),
			(ssize_t)sizeof(payload));
	close(fd);
}

/* The qdisc collector in the lab namespace; interfaces: an ERE, or NULL for all. */
static void rig_init(struct testutil_rig *rig, const char *interfaces)
{
	testutil_rig_init(rig, &qdisc_collector, "/sys", interfaces, NULL);
	ck_assert_ptr_nonnull(rig->state);
}

/*
 * A burst through a 1 Mbit/s tbf: packets and bytes count, the backlog holds
 * what the bucket has not released yet, and the throttling shows as overlimits.
 */
START_TEST(test_tbf_traffic)
{
	struct testutil_rig rig;
	double sent, queued;
	char *text;

	if (lab_up("qdisc tbf_traffic") < 0)
		return;
	rig_init(&rig, NULL);
	lab_send();
	/* 40 kB at 125 kB/s takes some 300 ms to drain: it is still queued now. */
	text = testutil_rig_tick(&rig, T0);
	sent = testutil_value(text, "fabmon_qdisc_packets_total" FMQ0_TBF);
	queued = testutil_value(text, "fabmon_qdisc_backlog_packets" FMQ0_TBF);
	ck_assert_double_gt(sent, 0);
	ck_assert_double_gt(queued, 0);
	/* every datagram is either through or still queued; tbf drops none under its limit */
	ck_assert_double_eq(sent + queued, LAB_PACKETS);
	ck_assert_double_eq(testutil_value(text, "fabmon_qdisc_bytes_total" FMQ0_TBF),
			    sent * LAB_FRAME);
	ck_assert_double_eq(testutil_value(text, "fabmon_qdisc_backlog_bytes" FMQ0_TBF),
			    queued * LAB_FRAME);
	ck_assert_double_gt(testutil_value(text, "fabmon_qdisc_overlimits_total" FMQ0_TBF), 0);
	ck_assert_double_eq(testutil_value(text, "fabmon_qdisc_drops_total" FMQ0_TBF), 0);
	/* the shaper's rate in bytes per second: 1 Mbit/s, and 10 Mbit/s under htb */
	ck_assert_double_eq(testutil_value(text, "fabmon_qdisc_rate_bytes" FMQ0_TBF), 125000);
	ck_assert_double_eq(testutil_value(text, "fabmon_qdisc_rate_bytes{interface=\"fmq1\","
						 "kind=\"tbf\",handle=\"10:\",parent=\"1:10\"}"),
			    1250000);
	ck_assert(!testutil_has(text, "fabmon_qdisc_rate_bytes{interface=\"fmq1\",kind=\"htb\""));
	ck_assert(testutil_has(text, "fabmon_qdisc_requeues_total" FMQ0_TBF));
	/* handle and parent as tc prints them, hex included */
	ck_assert(testutil_has(text, "fabmon_qdisc_packets_total{interface=\"fmq1\",kind=\"htb\","
				     "handle=\"1:\",parent=\"root\"}"));
	ck_assert(testutil_has(text, "fabmon_qdisc_packets_total{interface=\"fmq1\",kind=\"tbf\","
				     "handle=\"10:\",parent=\"1:10\"}"));
	ck_assert_uint_eq(registry_skipped(rig.reg, "qdisc"), 0);
	free(text);
	testutil_rig_release(&rig);
}
END_TEST

/* Counters keep counting across ticks; the second tick has a rate. */
START_TEST(test_two_ticks)
{
	struct testutil_rig rig;
	double first, second;
	char *text;

	if (lab_up("qdisc two_ticks") < 0)
		return;
	rig_init(&rig, NULL);
	text = testutil_rig_tick(&rig, T0);
	first = testutil_value(text, "fabmon_qdisc_bytes_total" FMQ0_TBF);
	free(text);
	lab_send();
	text = testutil_rig_tick(&rig, T0 + 1000);
	second = testutil_value(text, "fabmon_qdisc_bytes_total" FMQ0_TBF);
	ck_assert_msg(second >= first + LAB_PAYLOAD, "bytes %g -> %g after a burst", first, second);
	free(text);
	testutil_rig_release(&rig);
}
END_TEST

START_TEST(test_interface_filter)
{
	struct testutil_rig rig;
	char *text;

	if (lab_up("qdisc interface_filter") < 0)
		return;
	rig_init(&rig, "^fmq0$");
	text = testutil_rig_tick(&rig, T0);
	ck_assert(testutil_has(text, "fabmon_qdisc_packets_total" FMQ0_TBF));
	ck_assert_msg(strstr(text, "interface=\"fmq1\"") == NULL, "fmq1 passed:\n%s", text);
	ck_assert_msg(strstr(text, "interface=\"lo\"") == NULL, "lo passed:\n%s", text);
	free(text);
	testutil_rig_release(&rig);
}
END_TEST

Suite *qdisc_suite(void)
{
	const struct testutil_case cases[] = {
		{ "tbf_traffic", test_tbf_traffic, 0 },
		{ "two_ticks", test_two_ticks, 0 },
		{ "interface_filter", test_interface_filter, 0 },
	};

	return TESTUTIL_SUITE("qdisc", cases);
}
