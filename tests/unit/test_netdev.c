/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "suites.h"
#include "testutil.h"

#define NETDEV_FIXTURE "tests/fixtures/netdev/sysfs"
#define ENP "interface=\"enp65s0f0\""
#define T0 1700000000000

/*
 * One netdev collector on a registry, as the agent runs it. A rig made with
 * copy set works on a scratch copy of the tree (rig.root), removed on release.
 */
struct netdev_rig {
	struct collector_env env;
	struct registry *reg;
	void *state;
	char root[PATH_MAX];
	int copy;
};

static void rig_init(struct netdev_rig *rig, const char *root, int copy)
{
	char why[COLLECTOR_WHY_MAX] = "";

	memset(rig, 0, sizeof(*rig));
	snprintf(rig->root, sizeof(rig->root), "%s", copy ? testutil_copy_tree(root) : root);
	rig->copy = copy;
	rig->env.sysfs_root = rig->root;
	rig->reg = registry_new(1000, 5000);
	ck_assert_ptr_nonnull(rig->reg);
	ck_assert_msg(netdev_collector.init(&rig->env, &rig->state, why, sizeof(why)) == 0,
		      "init on '%s': %s", root, why);
}

/* Runs rm -r on root/rel, which must exist ("" removes the whole copy). */
static void rig_remove(const struct netdev_rig *rig, const char *rel)
{
	char cmd[PATH_MAX + 64];

	snprintf(cmd, sizeof(cmd), "rm -r '%s/%s'", rig->root, rel);
	ck_assert_int_eq(system(cmd), 0);
}

static void rig_release(struct netdev_rig *rig)
{
	netdev_collector.fini(rig->state);
	registry_free(rig->reg);
	if (rig->copy)
		rig_remove(rig, "");
}

/* Ticks at now_ms and returns the rendered /metrics text (caller frees). */
static char *rig_tick(struct netdev_rig *rig, int64_t now_ms)
{
	ck_assert_int_eq(testutil_tick(rig->reg, &netdev_collector, rig->state, &rig->env, now_ms),
			 0);
	return testutil_render(rig->reg);
}

struct find_series {
	const char *name;
	const char *labels;
	struct series found;
	int hit;
};

static int find_fn(struct series *s, void *arg)
{
	struct find_series *f = arg;

	if (strcmp(s->name, f->name) != 0 || strcmp(s->labels, f->labels) != 0)
		return 0;
	f->found = *s;
	f->hit = 1;
	return 1;
}

/* The registry's view of one series in the current tick (rate included). */
static struct series rig_series(struct netdev_rig *rig, const char *name, const char *labels)
{
	struct find_series f = { .name = name, .labels = labels };

	(void)registry_foreach(rig->reg, find_fn, &f);
	ck_assert_msg(f.hit, "no series %s{%s} in this tick", name, labels);
	return f.found;
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
	ck_assert_int_eq(rmdir(dir), 0);
	snprintf(dir, sizeof(dir), "%s/class", root);
	ck_assert_int_eq(rmdir(dir), 0);
	ck_assert_int_eq(rmdir(root), 0);
}
END_TEST

/* Every series of the fixture tree: counters, info, up, MTU, and speed only where known. */
START_TEST(test_golden_fixture)
{
	struct netdev_rig rig;
	char *text;

	rig_init(&rig, NETDEV_FIXTURE, 0);
	text = rig_tick(&rig, T0);
	testutil_check_golden(text, "netdev_fixture.prom");
	ck_assert_double_eq(testutil_value(text, "fabmon_netdev_speed_bytes{" ENP "}"),
			    100000 * 125000.0);
	ck_assert(!testutil_has(text, "fabmon_netdev_speed_bytes{interface=\"veth1\"}"));
	ck_assert(!testutil_has(text, "fabmon_netdev_speed_bytes{interface=\"lo\"}"));
	/* A link without a speed is not a skipped value. */
	ck_assert_uint_eq(registry_skipped(rig.reg, "netdev"), 0);
	free(text);
	rig_release(&rig);
}
END_TEST

/*
 * Files read off a real host: its eth0 has no statistics/ directory, so the
 * eight counters are skipped values while the attributes still show.
 */
START_TEST(test_golden_shared)
{
	char root[PATH_MAX];
	struct netdev_rig rig;
	char *text;

	snprintf(root, sizeof(root), "%s/sysfs", testutil_shared_fixtures());
	rig_init(&rig, root, 0);
	text = rig_tick(&rig, T0);
	testutil_check_golden(text, "netdev_shared.prom");
	ck_assert_double_eq(testutil_value(text, "fabmon_netdev_up{interface=\"eth0\"}"), 1);
	ck_assert_uint_eq(registry_skipped(rig.reg, "netdev"), 8);
	free(text);
	rig_release(&rig);
}
END_TEST

START_TEST(test_interface_filter)
{
	struct netdev_rig rig;
	regex_t re;
	char *text;

	ck_assert_int_eq(regcomp(&re, "^(enp|veth)", REG_EXTENDED | REG_NOSUB), 0);
	rig_init(&rig, NETDEV_FIXTURE, 0);
	rig.env.interfaces = &re;
	text = rig_tick(&rig, T0);
	ck_assert(testutil_has(text, "fabmon_netdev_receive_bytes_total{" ENP "}"));
	ck_assert(testutil_has(text, "fabmon_netdev_up{interface=\"veth1\"}"));
	ck_assert_msg(strstr(text, "interface=\"lo\"") == NULL, "lo passed the filter:\n%s", text);
	free(text);
	rig_release(&rig);
	regfree(&re);
}
END_TEST

START_TEST(test_counters_move)
{
	struct netdev_rig rig;
	struct series s;
	char *text;

	rig_init(&rig, NETDEV_FIXTURE, 1);
	free(rig_tick(&rig, T0));
	/* 125 MB in 1 s on receive, 10 packets in 1 s on transmit */
	testutil_write(rig.root, "class/net/enp65s0f0/statistics/rx_bytes", "1043273645\n");
	testutil_write(rig.root, "class/net/enp65s0f0/statistics/tx_packets", "934577\n");
	text = rig_tick(&rig, T0 + 1000);
	ck_assert_double_eq(testutil_value(text, "fabmon_netdev_receive_bytes_total{" ENP "}"),
			    1043273645);
	s = rig_series(&rig, "fabmon_netdev_receive_bytes_total", ENP);
	ck_assert(s.has_rate);
	ck_assert_double_eq_tol(s.rate, 125000000, 1e-6);
	s = rig_series(&rig, "fabmon_netdev_transmit_packets_total", ENP);
	ck_assert_double_eq_tol(s.rate, 10, 1e-9);
	s = rig_series(&rig, "fabmon_netdev_transmit_bytes_total", ENP);
	ck_assert_double_eq(s.rate, 0);
	free(text);
	rig_release(&rig);
}
END_TEST

/*
 * A 64-bit counter that goes down was reset (driver reload): the total keeps
 * growing by what was counted since, and the rate is never negative.
 */
START_TEST(test_counter_reset)
{
	struct netdev_rig rig;
	double before, after;
	struct series s;
	char *text;

	rig_init(&rig, NETDEV_FIXTURE, 1);
	testutil_write(rig.root, "class/net/enp65s0f0/statistics/rx_bytes",
		       "18446744073709551000\n");
	free(rig_tick(&rig, T0));
	before = rig_series(&rig, "fabmon_netdev_receive_bytes_total", ENP).value;
	testutil_write(rig.root, "class/net/enp65s0f0/statistics/rx_bytes", "500\n");
	text = rig_tick(&rig, T0 + 1000);
	s = rig_series(&rig, "fabmon_netdev_receive_bytes_total", ENP);
	after = testutil_value(text, "fabmon_netdev_receive_bytes_total{" ENP "}");
	ck_assert_msg(after >= before, "total went back: %g -> %g", before, after);
	ck_assert(s.has_rate);
	ck_assert_msg(s.rate >= 0, "negative rate %g after a reset", s.rate);
	ck_assert_double_eq_tol(s.rate, 500, 1e-9);
	free(text);
	rig_release(&rig);
}
END_TEST

/* A value that is not a number is skipped and counted; the rest of the tick stands. */
START_TEST(test_garbage)
{
	struct netdev_rig rig;
	char *text;

	rig_init(&rig, NETDEV_FIXTURE, 1);
	testutil_write(rig.root, "class/net/enp65s0f0/statistics/tx_errors", "garbage\n");
	testutil_write(rig.root, "class/net/enp65s0f0/statistics/rx_dropped", "-3\n");
	testutil_write(rig.root, "class/net/enp65s0f0/speed", "fast\n");
	testutil_write(rig.root, "class/net/veth1/mtu", "1500 bytes\n");
	text = rig_tick(&rig, T0);
	ck_assert(!testutil_has(text, "fabmon_netdev_transmit_errors_total{" ENP "}"));
	ck_assert(!testutil_has(text, "fabmon_netdev_receive_drops_total{" ENP "}"));
	ck_assert(!testutil_has(text, "fabmon_netdev_speed_bytes{" ENP "}"));
	ck_assert(!testutil_has(text, "fabmon_netdev_mtu_bytes{interface=\"veth1\"}"));
	ck_assert_double_eq(testutil_value(text, "fabmon_netdev_receive_errors_total{" ENP "}"), 3);
	ck_assert_double_eq(testutil_value(text, "fabmon_netdev_mtu_bytes{interface=\"lo\"}"),
			    65536);
	ck_assert_uint_eq(registry_skipped(rig.reg, "netdev"), 4);
	free(text);
	rig_release(&rig);
}
END_TEST

/* An interface removed between ticks (veth torn down) leaves /metrics with it. */
START_TEST(test_interface_vanished)
{
	struct netdev_rig rig;
	char *text;

	rig_init(&rig, NETDEV_FIXTURE, 1);
	text = rig_tick(&rig, T0);
	ck_assert(testutil_has(text, "fabmon_netdev_receive_bytes_total{interface=\"veth1\"}"));
	free(text);
	rig_remove(&rig, "class/net/veth1");
	text = rig_tick(&rig, T0 + 1000);
	ck_assert_msg(strstr(text, "interface=\"veth1\"") == NULL, "veth1 still shown:\n%s", text);
	ck_assert(testutil_has(text, "fabmon_netdev_receive_bytes_total{" ENP "}"));
	ck_assert_uint_eq(registry_skipped(rig.reg, "netdev"), 0);
	free(text);
	rig_release(&rig);
}
END_TEST

/*
 * An interface removed after class/net was listed but before its files were
 * read (operstate gone first) is skipped whole, quietly: it is gone, not broken.
 */
START_TEST(test_interface_gone_mid_tick)
{
	struct netdev_rig rig;
	char *text;

	rig_init(&rig, NETDEV_FIXTURE, 1);
	rig_remove(&rig, "class/net/veth1/operstate");
	text = rig_tick(&rig, T0);
	ck_assert_msg(strstr(text, "interface=\"veth1\"") == NULL, "veth1 shown:\n%s", text);
	ck_assert(testutil_has(text, "fabmon_netdev_up{interface=\"lo\"}"));
	ck_assert_uint_eq(registry_skipped(rig.reg, "netdev"), 0);
	free(text);
	rig_release(&rig);
}
END_TEST

/* class/net itself gone (sysfs unmounted): the whole tick fails, and says why. */
START_TEST(test_class_net_vanished)
{
	struct netdev_rig rig;

	rig_init(&rig, NETDEV_FIXTURE, 1);
	rig_remove(&rig, "class/net");
	ck_assert_int_eq(testutil_tick(rig.reg, &netdev_collector, rig.state, &rig.env, T0),
			 -ENOENT);
	rig_release(&rig);
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
	};

	return TESTUTIL_SUITE("netdev", cases);
}
