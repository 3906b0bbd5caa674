/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/ethtool.h"
#include "suites.h"
#include "testutil.h"

#define T0 1700000000000

/* A known stat, the family it lands in and its labels after interface. */
struct known {
	const char *stat;
	const char *family;
	const char *labels; /* key=value,... */
};

#define PAUSE "fabmon_ethtool_pause_frames_total"
#define LINK_PAUSE "fabmon_ethtool_link_pause_frames_total"

/* mlx5 names as counters.rst spells them, and ice's ".nic" ones. */
static const struct known known[] = {
	{ "rx_prio3_pause", PAUSE, "direction=rx,priority=3" },
	{ "tx_prio0_pause", PAUSE, "direction=tx,priority=0" },
	{ "rx_priority_7_xoff.nic", PAUSE, "direction=rx,priority=7" },
	{ "tx_priority_2_xoff.nic", PAUSE, "direction=tx,priority=2" },
	{ "rx_prio3_pause_duration", "fabmon_ethtool_pause_duration_seconds_total",
	  "direction=rx,priority=3" },
	{ "tx_prio7_pause_duration", "fabmon_ethtool_pause_duration_seconds_total",
	  "direction=tx,priority=7" },
	{ "rx_prio3_pause_transition", "fabmon_ethtool_pause_transitions_total",
	  "direction=rx,priority=3" },
	{ "rx_pause_ctrl_phy", LINK_PAUSE, "direction=rx" },
	{ "tx_pause_ctrl_phy", LINK_PAUSE, "direction=tx" },
	{ "link_xoff_rx.nic", LINK_PAUSE, "direction=rx" },
	{ "link_xoff_tx.nic", LINK_PAUSE, "direction=tx" },
	{ "rx_global_pause_duration", "fabmon_ethtool_link_pause_duration_seconds_total",
	  "direction=rx" },
	{ "tx_global_pause_duration", "fabmon_ethtool_link_pause_duration_seconds_total",
	  "direction=tx" },
	{ "rx_global_pause_transition", "fabmon_ethtool_link_pause_transitions_total",
	  "direction=rx" },
	{ "rx_prio5_bytes", "fabmon_ethtool_priority_bytes_total", "direction=rx,priority=5" },
	{ "tx_prio1_bytes", "fabmon_ethtool_priority_bytes_total", "direction=tx,priority=1" },
	{ "rx_prio6_packets", "fabmon_ethtool_priority_packets_total", "direction=rx,priority=6" },
	{ "tx_prio4_packets", "fabmon_ethtool_priority_packets_total", "direction=tx,priority=4" },
	{ "rx_discards_phy", "fabmon_ethtool_discards_total", "direction=rx" },
	{ "tx_discards_phy", "fabmon_ethtool_discards_total", "direction=tx" },
	{ "rx_prio4_discards", "fabmon_ethtool_priority_discards_total",
	  "direction=rx,priority=4" },
	{ "rx_out_of_buffer", "fabmon_ethtool_out_of_buffer_total", "" },
	{ "tx_pause_storm_warning_events", "fabmon_ethtool_pause_storm_events_total",
	  "severity=warning" },
	{ "tx_pause_storm_error_events", "fabmon_ethtool_pause_storm_events_total",
	  "severity=error" },
	{ "rx_buffer_passed_thres_phy", "fabmon_ethtool_rx_buffer_threshold_events_total", "" },
	{ "rx_crc_errors_phy", "fabmon_ethtool_rx_phy_errors_total", "error=crc" },
	{ "rx_symbol_err_phy", "fabmon_ethtool_rx_phy_errors_total", "error=symbol" },
};

/*
 * Every typed family as the collector exports it (interface, then the
 * class's labels), one reading each: the golden file is the catalogue's
 * record of the families a real NIC's counters make, which this machine's
 * interfaces cannot show (tests/e2e/t_dashboards.sh reads it).
 */
START_TEST(test_typed_golden)
{
	struct registry *reg = registry_new(100, 60000);
	char *text;

	registry_begin_tick(reg, 1700000000000);
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		struct label labels[1 + ETHTOOL_CLASS_LABELS] = { { "interface", "eth0" } };
		struct ethtool_class c;
		size_t n = 1;

		ck_assert_int_eq(ethtool_classify(known[i].stat, &c), 1);
		for (size_t j = 0; j < c.n_labels; j++)
			labels[n++] = c.labels[j];
		ck_assert_int_eq(
			sample_counter(registry_sink(reg, "ethtool"), c.desc, labels, n, 1000 + i),
			0);
	}
	registry_end_tick(reg);
	text = testutil_render(reg);
	testutil_check_golden(text, "ethtool_typed.prom");
	free(text);
	registry_free(reg);
}
END_TEST

/* Formats a class's labels as key=value,... (keys only with values NULL). */
static void class_format(const struct ethtool_class *c, int values, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < c->n_labels && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s%s%s", i ? "," : "",
					 c->labels[i].key, values ? "=" : "",
					 values ? c->labels[i].value : "");
}

/* Classifies stat and checks it lands in k's family with k's labels. */
static void check_known(const char *stat, const struct known *k)
{
	struct ethtool_class c;
	char labels[256];

	ck_assert_msg(ethtool_classify(stat, &c) == 1, "'%s' not classified", stat);
	ck_assert_msg(strcmp(c.desc->name, k->family) == 0, "'%s' -> %s, want %s", stat,
		      c.desc->name, k->family);
	ck_assert_int_eq(c.desc->type, METRIC_COUNTER);
	ck_assert_uint_eq(c.desc->bits, 0);
	class_format(&c, 1, labels, sizeof(labels));
	ck_assert_msg(strcmp(labels, k->labels) == 0, "'%s' labels %s, want %s", stat, labels,
		      k->labels);
}

static const struct known *find_known(const char *stat)
{
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(known[i].stat, stat) == 0)
			return &known[i];
	ck_abort_msg("'%s' is not in known[]", stat);
	return NULL;
}

START_TEST(test_classify_known)
{
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		check_known(known[i].stat, &known[i]);
}
END_TEST

/* mlx5 counts pause duration in microseconds; the families are in seconds. */
START_TEST(test_classify_duration_scale)
{
	struct ethtool_class c;

	ck_assert_int_eq(ethtool_classify("tx_prio2_pause_duration", &c), 1);
	ck_assert_double_eq(c.desc->scale, 1e-6);
	ck_assert_int_eq(ethtool_classify("rx_global_pause_duration", &c), 1);
	ck_assert_double_eq(c.desc->scale, 1e-6);
	ck_assert_int_eq(ethtool_classify("rx_prio2_pause", &c), 1);
	ck_assert(c.desc->scale == 0 || c.desc->scale == 1);
}
END_TEST

START_TEST(test_classify_unknown)
{
	/* PFC has priorities 0-7; rx_global_pause counts what rx_pause_ctrl_phy does. */
	static const char *const unknown[] = {
		"rx_prio8_pause",
		"rx_prio3_pausex",
		"rx_prio33_pause",
		"rx_prio_pause",
		"rx_prioA_pause",
		"xx_prio3_pause",
		"rx_prio3_pause_durations",
		"rx_global_pause",
		"tx_global_pause",
		"rx_packets_phy",
		"rx_out_of_buffers",
		"peer_ifindex",
		"rx_queue_0_xdp_packets",
		"link_xoff_xx.nic",
		"rx_priority_8_xoff.nic",
		"rx_priority_3_xon.nic",
		" rx_prio3_pause",
		"rx_prio3_pause\t",
		"",
		"   ",
		"r",
		"rx",
	};
	struct ethtool_class c, sentinel;

	memset(&sentinel, 0x5a, sizeof(sentinel));
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		c = sentinel;
		ck_assert_msg(ethtool_classify(unknown[i], &c) == 0, "'%s' classified as %s",
			      unknown[i], c.desc->name);
		ck_assert_msg(memcmp(&c, &sentinel, sizeof(c)) == 0, "'%s': *ret written",
			      unknown[i]);
	}
}
END_TEST

/* Some drivers pad names with spaces, up to the 32-byte ETH_GSTRING_LEN slot. */
START_TEST(test_classify_trailing_spaces)
{
	static const struct {
		const char *padded, *stat;
	} cases[] = {
		{ "rx_prio3_pause ", "rx_prio3_pause" },
		{ "rx_prio3_pause                  ", "rx_prio3_pause" }, /* the whole slot */
		{ "tx_priority_2_xoff.nic   ", "tx_priority_2_xoff.nic" },
		{ "rx_out_of_buffer\0ignored", "rx_out_of_buffer" },
		{ "tx_pause_storm_error_events     ", "tx_pause_storm_error_events" },
	};

	ck_assert_uint_eq(strlen(cases[1].padded), 32);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_known(cases[i].padded, find_known(cases[i].stat));
}
END_TEST

/* Within one family every series has the same label keys, in the same order. */
START_TEST(test_classify_label_shapes)
{
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		for (size_t j = 0; j < i; j++) {
			struct ethtool_class a, b;
			char ka[256], kb[256];

			ck_assert_int_eq(ethtool_classify(known[i].stat, &a), 1);
			ck_assert_int_eq(ethtool_classify(known[j].stat, &b), 1);
			if (strcmp(a.desc->name, b.desc->name) != 0)
				continue;
			class_format(&a, 0, ka, sizeof(ka));
			class_format(&b, 0, kb, sizeof(kb));
			ck_assert_msg(strcmp(ka, kb) == 0, "%s: '%s' has %s, '%s' has %s",
				      a.desc->name, known[i].stat, ka, known[j].stat, kb);
		}
	}
}
END_TEST

/* lo has no ethtool stats: with only lo wanted the collector is down, and says why. */
START_TEST(test_init_only_lo)
{
	regex_t only_lo;
	struct collector_env env = { .sysfs_root = "/sys", .interfaces = &only_lo };
	char why[COLLECTOR_WHY_MAX];
	void *state = NULL;

	ck_assert_int_eq(regcomp(&only_lo, "^lo$", REG_EXTENDED | REG_NOSUB), 0);
	ck_assert_int_eq(ethtool_collector.init(&env, &state, why, sizeof(why)), -EOPNOTSUPP);
	ck_assert_str_eq(why, "ethtool: operation not supported on lo");
	ck_assert_ptr_null(state);
	regfree(&only_lo);
}
END_TEST

/* A fixture tree names interfaces the kernel does not have (ENODEV): quiet, but down. */
START_TEST(test_init_fixture_tree)
{
	char root[] = "/tmp/fabmon-ethtool-XXXXXX", want[PATH_MAX + 64];
	struct collector_env env = { .sysfs_root = root };
	char why[COLLECTOR_WHY_MAX];
	void *state = NULL;

	ck_assert_ptr_nonnull(mkdtemp(root));
	testutil_write(root, "class/net/fmnone0/ifindex", "999\n");
	ck_assert_int_eq(ethtool_collector.init(&env, &state, why, sizeof(why)), -EOPNOTSUPP);
	snprintf(want, sizeof(want), "ethtool: no interface in '%s/class/net' has stats", root);
	ck_assert_str_eq(why, want);
	testutil_remove_tree(root);
}
END_TEST

START_TEST(test_init_no_class_net)
{
	struct collector_env env = { .sysfs_root = "/nonexistent/fabmon" };
	char why[COLLECTOR_WHY_MAX];
	void *state = NULL;

	ck_assert_int_eq(ethtool_collector.init(&env, &state, why, sizeof(why)), -ENOENT);
	ck_assert_str_eq(why,
			 "ethtool: unable to list '/nonexistent/fabmon/class/net': No such file or "
			 "directory");
}
END_TEST

/*
 * Gives this test process a network namespace of its own holding a veth pair
 * (fmveth0, fmveth1; veth has ethtool stats, lo has none), and a sysfs at /sys
 * that shows it. Returns 0, or says why it cannot and returns -1.
 */
static int veth_netns(const char *test)
{
	if (testutil_netns_enter(1, test) < 0)
		return -1;
	if (system("ip link add fmveth0 type veth peer name fmveth1") != 0) {
		testutil_skip(test, "unable to make a veth pair (ip(8), veth driver)");
		return -1;
	}
	return 0;
}

/* True if text holds an untyped stat of interface ifname. */
static int has_stat_on(const char *text, const char *ifname)
{
	char prefix[64];

	snprintf(prefix, sizeof(prefix), "fabmon_ethtool_stat_total{interface=\"%s\",", ifname);
	return strstr(text, prefix) != NULL;
}

/* An untyped stat appears when ethtool_include names it; init notes lo. */
START_TEST(test_veth_include)
{
	struct testutil_rig rig;
	char *text;

	if (veth_netns("ethtool veth_include") < 0)
		return;
	testutil_rig_init(&rig, &ethtool_collector, "/sys", NULL, "^peer_ifindex$");
	ck_assert_str_eq(rig.why, "ethtool: operation not supported on lo");
	text = testutil_rig_tick(&rig, T0);
	testutil_check_golden(text, "ethtool_veth.prom");
	ck_assert_double_eq(
		testutil_value(
			text,
			"fabmon_ethtool_stat_total{interface=\"fmveth0\",stat=\"peer_ifindex\"}"),
		if_nametoindex("fmveth1"));
	ck_assert_uint_eq(registry_skipped(rig.reg, "ethtool"), 0);
	free(text);
	testutil_rig_release(&rig);
}
END_TEST

/* veth has only stats fabmon does not know: without the regex none shows. */
START_TEST(test_veth_default)
{
	struct testutil_rig rig;
	char *text;

	if (veth_netns("ethtool veth_default") < 0)
		return;
	testutil_rig_init(&rig, &ethtool_collector, "/sys", NULL, NULL);
	text = testutil_rig_tick(&rig, T0);
	ck_assert_msg(strstr(text, "fabmon_ethtool_") == NULL, "unexpected series:\n%s", text);
	free(text);
	testutil_rig_release(&rig);
}
END_TEST

START_TEST(test_veth_interface_filter)
{
	struct testutil_rig rig;
	char *text;

	if (veth_netns("ethtool veth_interface_filter") < 0)
		return;
	testutil_rig_init(&rig, &ethtool_collector, "/sys", "^fmveth0$", "^peer_ifindex$");
	text = testutil_rig_tick(&rig, T0);
	ck_assert(has_stat_on(text, "fmveth0"));
	ck_assert(!has_stat_on(text, "fmveth1"));
	/* lo is filtered out, so there is nothing to note */
	ck_assert_str_eq(rig.why, "");
	free(text);
	testutil_rig_release(&rig);
}
END_TEST

/* Interfaces that appear and vanish between ticks show up and drop out. */
START_TEST(test_veth_come_and_go)
{
	struct testutil_rig rig;
	char *text;

	if (veth_netns("ethtool veth_come_and_go") < 0)
		return;
	testutil_rig_init(&rig, &ethtool_collector, "/sys", NULL, "^peer_ifindex$");
	text = testutil_rig_tick(&rig, T0);
	ck_assert(has_stat_on(text, "fmveth0"));
	free(text);
	ck_assert_int_eq(system("ip link del fmveth0 && "
				"ip link add fmveth2 type veth peer name fmveth3"),
			 0);
	text = testutil_rig_tick(&rig, T0 + 1000);
	ck_assert(!has_stat_on(text, "fmveth0"));
	ck_assert(!has_stat_on(text, "fmveth1"));
	ck_assert_double_eq(
		testutil_value(
			text,
			"fabmon_ethtool_stat_total{interface=\"fmveth2\",stat=\"peer_ifindex\"}"),
		if_nametoindex("fmveth3"));
	ck_assert_uint_eq(registry_skipped(rig.reg, "ethtool"), 0);
	free(text);
	testutil_rig_release(&rig);
}
END_TEST

/* A driver whose stat count changes (more queues) has its names read again. */
START_TEST(test_veth_count_change)
{
	struct testutil_rig rig;
	char *text;

	if (veth_netns("ethtool veth_count_change") < 0)
		return;
	testutil_rig_init(&rig, &ethtool_collector, "/sys", NULL, "^rx_queue_[0-9]+_xdp_packets$");
	text = testutil_rig_tick(&rig, T0);
	ck_assert(strstr(text, "interface=\"fmveth0\",stat=\"rx_queue_0_xdp_packets\"") != NULL);
	ck_assert(strstr(text, "stat=\"rx_queue_1_xdp_packets\"") == NULL);
	free(text);
	ck_assert_int_eq(system("ip link del fmveth0 && ip link add fmveth0 numrxqueues 2 "
				"type veth peer name fmveth1"),
			 0);
	text = testutil_rig_tick(&rig, T0 + 1000);
	ck_assert(strstr(text, "interface=\"fmveth0\",stat=\"rx_queue_1_xdp_packets\"") != NULL);
	free(text);
	testutil_rig_release(&rig);
}
END_TEST

/* An interface listed but gone by the ioctl (ENODEV) is skipped without a fuss. */
START_TEST(test_veth_gone_quietly)
{
	char root[] = "/tmp/fabmon-ethtool-XXXXXX";
	struct testutil_rig rig;
	char *text;

	if (veth_netns("ethtool veth_gone_quietly") < 0)
		return;
	testutil_rig_init(&rig, &ethtool_collector, "/sys", NULL, "^peer_ifindex$");
	ck_assert_ptr_nonnull(mkdtemp(root));
	testutil_write(root, "class/net/fmghost0/ifindex", "999\n");
	testutil_write(root, "class/net/fmveth0/ifindex", "3\n");
	rig.env.sysfs_root = root;
	text = testutil_rig_tick(&rig, T0);
	ck_assert(has_stat_on(text, "fmveth0"));
	ck_assert(!has_stat_on(text, "fmghost0"));
	ck_assert_uint_eq(registry_skipped(rig.reg, "ethtool"), 0);
	free(text);
	testutil_rig_release(&rig);
	testutil_remove_tree(root);
}
END_TEST

Suite *ethtool_suite(void)
{
	const struct testutil_case cases[] = {
		{ "classify_known", test_classify_known, 0 },
		{ "typed golden", test_typed_golden, 0 },
		{ "classify_duration_scale", test_classify_duration_scale, 0 },
		{ "classify_unknown", test_classify_unknown, 0 },
		{ "classify_trailing_spaces", test_classify_trailing_spaces, 0 },
		{ "classify_label_shapes", test_classify_label_shapes, 0 },
		{ "init_only_lo", test_init_only_lo, 0 },
		{ "init_fixture_tree", test_init_fixture_tree, 0 },
		{ "init_no_class_net", test_init_no_class_net, 0 },
		{ "veth_include", test_veth_include, 0 },
		{ "veth_default", test_veth_default, 0 },
		{ "veth_interface_filter", test_veth_interface_filter, 0 },
		{ "veth_come_and_go", test_veth_come_and_go, 0 },
		{ "veth_count_change", test_veth_count_change, 0 },
		{ "veth_gone_quietly", test_veth_gone_quietly, 0 },
	};

	return TESTUTIL_SUITE("ethtool", cases);
}
