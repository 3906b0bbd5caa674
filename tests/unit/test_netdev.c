/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netpacket/packet.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/sysfs.h"
#include "suites.h"
#include "testutil.h"

#define NETDEV_FIXTURE "tests/fixtures/netdev/sysfs"
#define ENP "interface=\"enp65s0f0\""
#define T0 1700000000000

/* Removes root/rel, which must exist: one file or a whole directory. */
static void tree_remove(const char *root, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	testutil_remove_tree(path);
}

START_TEST(test_init_no_class_net)
{
	struct collector_env env = { .sysfs_root = "/nonexistent/fabmon" };
	char why[COLLECTOR_WHY_MAX] = "";
	void *state = NULL;

	ck_assert_int_eq(netdev_collector.init(&env, &state, why, sizeof(why)), -ENOENT);
	ck_assert_str_eq(why, "no network interfaces under /nonexistent/fabmon/class/net");
}
END_TEST

START_TEST(test_init_empty_class_net)
{
	char root[] = "/tmp/fabmon-netdev-XXXXXX", dir[PATH_MAX];
	struct collector_env env = { .sysfs_root = root };
	char why[COLLECTOR_WHY_MAX] = "";
	void *state = NULL;

	ck_assert_ptr_nonnull(mkdtemp(root));
	snprintf(dir, sizeof(dir), "%s/class", root);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/class/net", root);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	ck_assert_int_eq(netdev_collector.init(&env, &state, why, sizeof(why)), -ENOENT);
	ck_assert_msg(strstr(why, "no network interfaces under ") == why, "why: %s", why);
	testutil_remove_tree(root);
}
END_TEST

/* Every series of the fixture tree: counters, info, up, MTU, and speed only where known. */
START_TEST(test_golden_fixture)
{
	struct testutil_rig rig;
	char *text;

	testutil_rig_init(&rig, &netdev_collector, NETDEV_FIXTURE, NULL, NULL);
	text = testutil_rig_tick(&rig, T0);
	testutil_check_golden(text, "netdev_fixture.prom");
	ck_assert_double_eq(testutil_value(text, "fabmon_netdev_speed_bytes{" ENP "}"),
			    100000 * 125000.0);
	ck_assert(!testutil_has(text, "fabmon_netdev_speed_bytes{interface=\"veth1\"}"));
	ck_assert(!testutil_has(text, "fabmon_netdev_speed_bytes{interface=\"lo\"}"));
	/* A link without a speed is not a skipped value. */
	ck_assert_uint_eq(registry_skipped(rig.reg, "netdev"), 0);
	free(text);
	testutil_rig_release(&rig);
}
END_TEST

/*
 * Files read off a real host: its eth0 has no statistics/ directory. Values
 * that are absent are not there to skip: no counters, no skipped values, and
 * the attributes still show.
 */
START_TEST(test_golden_shared)
{
	struct testutil_rig rig;
	char *text;

	testutil_rig_init(&rig, &netdev_collector, testutil_shared_sysfs(), NULL, NULL);
	text = testutil_rig_tick(&rig, T0);
	testutil_check_golden(text, "netdev_shared.prom");
	ck_assert_double_eq(testutil_value(text, "fabmon_netdev_up{interface=\"eth0\"}"), 1);
	ck_assert(!testutil_has(text, "fabmon_netdev_receive_bytes_total{interface=\"eth0\"}"));
	ck_assert_uint_eq(registry_skipped(rig.reg, "netdev"), 0);
	free(text);
	testutil_rig_release(&rig);
}
END_TEST

START_TEST(test_interface_filter)
{
	struct testutil_rig rig;
	char *text;

	testutil_rig_init(&rig, &netdev_collector, NETDEV_FIXTURE, "^(enp|veth)", NULL);
	text = testutil_rig_tick(&rig, T0);
	ck_assert(testutil_has(text, "fabmon_netdev_receive_bytes_total{" ENP "}"));
	ck_assert(testutil_has(text, "fabmon_netdev_up{interface=\"veth1\"}"));
	ck_assert_msg(strstr(text, "interface=\"lo\"") == NULL, "lo passed the filter:\n%s", text);
	free(text);
	testutil_rig_release(&rig);
}
END_TEST

START_TEST(test_counters_move)
{
	const char *root = testutil_copy_tree(NETDEV_FIXTURE);
	struct testutil_rig rig;
	struct series s;
	char *text;

	testutil_rig_init(&rig, &netdev_collector, root, NULL, NULL);
	free(testutil_rig_tick(&rig, T0));
	/* 125 MB in 1 s on receive, 10 packets in 1 s on transmit */
	testutil_write(root, "class/net/enp65s0f0/statistics/rx_bytes", "1043273645\n");
	testutil_write(root, "class/net/enp65s0f0/statistics/tx_packets", "934577\n");
	text = testutil_rig_tick(&rig, T0 + 1000);
	ck_assert_double_eq(testutil_value(text, "fabmon_netdev_receive_bytes_total{" ENP "}"),
			    1043273645);
	s = testutil_series(rig.reg, "fabmon_netdev_receive_bytes_total", ENP);
	ck_assert(s.has_rate);
	ck_assert_double_eq_tol(s.rate, 125000000, 1e-6);
	s = testutil_series(rig.reg, "fabmon_netdev_transmit_packets_total", ENP);
	ck_assert_double_eq_tol(s.rate, 10, 1e-9);
	s = testutil_series(rig.reg, "fabmon_netdev_transmit_bytes_total", ENP);
	ck_assert_double_eq(s.rate, 0);
	free(text);
	testutil_rig_release(&rig);
	testutil_remove_tree(root);
}
END_TEST

/*
 * A 64-bit counter that goes down was reset (driver reload): the total keeps
 * growing by what was counted since, and the rate is never negative.
 */
START_TEST(test_counter_reset)
{
	const char *root = testutil_copy_tree(NETDEV_FIXTURE);
	struct testutil_rig rig;
	double before, after;
	struct series s;
	char *text;

	testutil_rig_init(&rig, &netdev_collector, root, NULL, NULL);
	testutil_write(root, "class/net/enp65s0f0/statistics/rx_bytes", "18446744073709551000\n");
	free(testutil_rig_tick(&rig, T0));
	before = testutil_series(rig.reg, "fabmon_netdev_receive_bytes_total", ENP).value;
	testutil_write(root, "class/net/enp65s0f0/statistics/rx_bytes", "500\n");
	text = testutil_rig_tick(&rig, T0 + 1000);
	s = testutil_series(rig.reg, "fabmon_netdev_receive_bytes_total", ENP);
	after = testutil_value(text, "fabmon_netdev_receive_bytes_total{" ENP "}");
	ck_assert_msg(after >= before, "total went back: %g -> %g", before, after);
	ck_assert(s.has_rate);
	ck_assert_msg(s.rate >= 0, "negative rate %g after a reset", s.rate);
	ck_assert_double_eq_tol(s.rate, 500, 1e-9);
	free(text);
	testutil_rig_release(&rig);
	testutil_remove_tree(root);
}
END_TEST

/* A value that is not a number is skipped and counted; the rest of the tick stands. */
START_TEST(test_garbage)
{
	const char *root = testutil_copy_tree(NETDEV_FIXTURE);
	struct testutil_rig rig;
	char *text;

	testutil_rig_init(&rig, &netdev_collector, root, NULL, NULL);
	testutil_write(root, "class/net/enp65s0f0/statistics/tx_errors", "garbage\n");
	testutil_write(root, "class/net/enp65s0f0/statistics/rx_dropped", "-3\n");
	testutil_write(root, "class/net/enp65s0f0/speed", "fast\n");
	testutil_write(root, "class/net/veth1/mtu", "1500 bytes\n");
	text = testutil_rig_tick(&rig, T0);
	ck_assert(!testutil_has(text, "fabmon_netdev_transmit_errors_total{" ENP "}"));
	ck_assert(!testutil_has(text, "fabmon_netdev_receive_drops_total{" ENP "}"));
	ck_assert(!testutil_has(text, "fabmon_netdev_speed_bytes{" ENP "}"));
	ck_assert(!testutil_has(text, "fabmon_netdev_mtu_bytes{interface=\"veth1\"}"));
	ck_assert_double_eq(testutil_value(text, "fabmon_netdev_receive_errors_total{" ENP "}"), 3);
	ck_assert_double_eq(testutil_value(text, "fabmon_netdev_mtu_bytes{interface=\"lo\"}"),
			    65536);
	ck_assert_uint_eq(registry_skipped(rig.reg, "netdev"), 4);
	free(text);
	testutil_rig_release(&rig);
	testutil_remove_tree(root);
}
END_TEST

/* An interface removed between ticks (veth torn down) leaves /metrics with it. */
START_TEST(test_interface_vanished)
{
	const char *root = testutil_copy_tree(NETDEV_FIXTURE);
	struct testutil_rig rig;
	char *text;

	testutil_rig_init(&rig, &netdev_collector, root, NULL, NULL);
	text = testutil_rig_tick(&rig, T0);
	ck_assert(testutil_has(text, "fabmon_netdev_receive_bytes_total{interface=\"veth1\"}"));
	free(text);
	tree_remove(root, "class/net/veth1");
	text = testutil_rig_tick(&rig, T0 + 1000);
	ck_assert_msg(strstr(text, "interface=\"veth1\"") == NULL, "veth1 still shown:\n%s", text);
	ck_assert(testutil_has(text, "fabmon_netdev_receive_bytes_total{" ENP "}"));
	ck_assert_uint_eq(registry_skipped(rig.reg, "netdev"), 0);
	free(text);
	testutil_rig_release(&rig);
	testutil_remove_tree(root);
}
END_TEST

/*
 * An interface removed after class/net was listed but before its files were
 * read (operstate gone first) is skipped whole, quietly: it is gone, not broken.
 */
START_TEST(test_interface_gone_mid_tick)
{
	const char *root = testutil_copy_tree(NETDEV_FIXTURE);
	struct testutil_rig rig;
	char *text;

	testutil_rig_init(&rig, &netdev_collector, root, NULL, NULL);
	tree_remove(root, "class/net/veth1/operstate");
	text = testutil_rig_tick(&rig, T0);
	ck_assert_msg(strstr(text, "interface=\"veth1\"") == NULL, "veth1 shown:\n%s", text);
	ck_assert(testutil_has(text, "fabmon_netdev_up{interface=\"lo\"}"));
	ck_assert_uint_eq(registry_skipped(rig.reg, "netdev"), 0);
	free(text);
	testutil_rig_release(&rig);
	testutil_remove_tree(root);
}
END_TEST

/*
 * The bonding driver's class/net/bonding_masters is a file beside the
 * interfaces, not one (node_exporter skips it too); a link to an interface
 * directory, the way a live sysfs shows every interface, is one. Alone, the
 * file leaves no interface to read.
 */
START_TEST(test_bonding_masters)
{
	const char *root = testutil_copy_tree(NETDEV_FIXTURE);
	struct collector_env env = { .sysfs_root = root };
	char why[COLLECTOR_WHY_MAX] = "", path[PATH_MAX], target[PATH_MAX];
	struct testutil_rig rig;
	void *state = NULL;
	char *text;

	testutil_write(root, "class/net/bonding_masters", "bond0\n");
	snprintf(path, sizeof(path), "%s/class/net/veth1", root);
	snprintf(target, sizeof(target), "%s/devices/virtual/net/veth1", root);
	testutil_write(root, "devices/virtual/net/.keep", "");
	ck_assert_int_eq(rename(path, target), 0);
	ck_assert_int_eq(symlink("../../devices/virtual/net/veth1", path), 0);
	testutil_rig_init(&rig, &netdev_collector, root, NULL, NULL);
	text = testutil_rig_tick(&rig, T0);
	ck_assert_msg(strstr(text, "bonding_masters") == NULL, "a file taken for an interface:\n%s",
		      text);
	ck_assert(testutil_has(text, "fabmon_netdev_receive_bytes_total{interface=\"veth1\"}"));
	ck_assert_uint_eq(registry_skipped(rig.reg, "netdev"), 0);
	free(text);
	testutil_rig_release(&rig);

	tree_remove(root, "class/net/enp65s0f0");
	tree_remove(root, "class/net/lo");
	tree_remove(root, "class/net/veth1");
	ck_assert_int_eq(netdev_collector.init(&env, &state, why, sizeof(why)), -ENOENT);
	testutil_remove_tree(root);
}
END_TEST

/* class/net itself gone (sysfs unmounted): the whole tick fails, and says why. */
START_TEST(test_class_net_vanished)
{
	const char *root = testutil_copy_tree(NETDEV_FIXTURE);
	struct testutil_rig rig;

	testutil_rig_init(&rig, &netdev_collector, root, NULL, NULL);
	tree_remove(root, "class/net");
	ck_assert_int_eq(testutil_tick(rig.reg, &netdev_collector, rig.state, &rig.env, T0),
			 -ENOENT);
	testutil_rig_release(&rig);
	testutil_remove_tree(root);
}
END_TEST

/* Sends n broadcast Ethernet frames of 100 bytes out of ifname. */
static void send_frames(const char *ifname, int n)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_halen = ETH_ALEN };
	unsigned char frame[100] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2,
		0,    0,    0,	  0,	1,    0x88, 0xb5 /* IEEE 802 local experimental */
	};
	int fd = socket(AF_PACKET, SOCK_RAW, 0);

	ck_assert_int_ge(fd, 0);
	sll.sll_ifindex = (int)if_nametoindex(ifname);
	ck_assert_int_gt(sll.sll_ifindex, 0);
	memset(sll.sll_addr, 0xff, ETH_ALEN);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(
			sendto(fd, frame, sizeof(frame), 0, (struct sockaddr *)&sll, sizeof(sll)),
			(ssize_t)sizeof(frame));
	close(fd);
	usleep(100000); /* veth delivers to the peer asynchronously */
}

/*
 * On a live sysfs the collector reads rtnetlink; what it reports must equal
 * what the files of the same interfaces say (the oracle), in a namespace of
 * the test's own where nothing else moves the counters.
 */
START_TEST(test_netlink_matches_sysfs)
{
	static const char *const files[] = {
		"rx_bytes",  "tx_bytes",  "rx_packets", "tx_packets",
		"rx_errors", "tx_errors", "rx_dropped", "tx_dropped",
	};
	static const char *const names[] = {
		"fabmon_netdev_receive_bytes_total",   "fabmon_netdev_transmit_bytes_total",
		"fabmon_netdev_receive_packets_total", "fabmon_netdev_transmit_packets_total",
		"fabmon_netdev_receive_errors_total",  "fabmon_netdev_transmit_errors_total",
		"fabmon_netdev_receive_drops_total",   "fabmon_netdev_transmit_drops_total",
	};
	const char *ifs[] = { "fmnd0", "fmnd1", "lo" };
	struct testutil_rig rig;
	char path[128], addr[64], state[32], want_info[256];
	uint64_t v;
	char *text;

	if (testutil_netns_enter(1, "netlink_matches_sysfs") < 0)
		return;
	/* no IPv6: nothing but our frames may move the counters */
	ck_assert_int_eq(
		system("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 "
		       "net.ipv6.conf.default.disable_ipv6=1 && "
		       "ip link add fmnd0 mtu 9000 type veth peer name fmnd1 && "
		       "ip link set fmnd0 up && ip link set fmnd1 up && ip link set lo up"),
		0);
	send_frames("fmnd0", 3); /* tx on fmnd0, rx on fmnd1: rx and tx differ */
	testutil_rig_init(&rig, &netdev_collector, "/sys", NULL, NULL);
	ck_assert_msg(rig.state != NULL, "live sysfs but not read through rtnetlink: %s", rig.why);
	text = testutil_rig_tick(&rig, 1000);
	for (size_t k = 0; k < sizeof(ifs) / sizeof(ifs[0]); k++) {
		char labels[64];

		snprintf(labels, sizeof(labels), "interface=\"%s\"", ifs[k]);
		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			snprintf(path, sizeof(path), "class/net/%s/statistics/%s", ifs[k],
				 files[i]);
			ck_assert_int_eq(sysfs_read_u64("/sys", path, &v), 0);
			ck_assert_msg(testutil_series(rig.reg, names[i], labels).value == (double)v,
				      "%s{%s}: netlink %.0f, sysfs %llu", names[i], labels,
				      testutil_series(rig.reg, names[i], labels).value,
				      (unsigned long long)v);
		}
		snprintf(path, sizeof(path), "class/net/%s/mtu", ifs[k]);
		ck_assert_int_eq(sysfs_read_u64("/sys", path, &v), 0);
		ck_assert(testutil_series(rig.reg, "fabmon_netdev_mtu_bytes", labels).value ==
			  (double)v);
		snprintf(path, sizeof(path), "class/net/%s/address", ifs[k]);
		ck_assert_int_ge(sysfs_read("/sys", path, addr, sizeof(addr)), 0);
		snprintf(path, sizeof(path), "class/net/%s/operstate", ifs[k]);
		ck_assert_int_ge(sysfs_read("/sys", path, state, sizeof(state)), 0);
		snprintf(want_info, sizeof(want_info),
			 "fabmon_netdev_info{interface=\"%s\",operstate=\"%s\",address=\"%s\"} 1",
			 ifs[k], state, addr);
		ck_assert_msg(strstr(text, want_info), "no '%s' in:\n%s", want_info, text);
	}
	ck_assert_double_eq(
		testutil_series(rig.reg, "fabmon_netdev_mtu_bytes", "interface=\"fmnd0\"").value,
		9000);
	ck_assert_uint_eq(registry_skipped(rig.reg, "netdev"), 0);
	free(text);
	testutil_rig_release(&rig);
}
END_TEST

Suite *netdev_suite(void)
{
	const struct testutil_case cases[] = {
		{ "init_no_class_net", test_init_no_class_net, 0 },
		{ "init_empty_class_net", test_init_empty_class_net, 0 },
		{ "golden_fixture", test_golden_fixture, 0 },
		{ "golden_shared", test_golden_shared, 0 },
		{ "interface_filter", test_interface_filter, 0 },
		{ "counters_move", test_counters_move, 0 },
		{ "counter_reset", test_counter_reset, 0 },
		{ "garbage", test_garbage, 0 },
		{ "interface_vanished", test_interface_vanished, 0 },
		{ "interface_gone_mid_tick", test_interface_gone_mid_tick, 0 },
		{ "class_net_vanished", test_class_net_vanished, 0 },
		{ "bonding_masters", test_bonding_masters, 0 },
		{ "netlink_matches_sysfs", test_netlink_matches_sysfs, 0 },
	};

	return TESTUTIL_SUITE("netdev", cases);
}
