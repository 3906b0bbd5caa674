/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "suites.h"
#include "testutil.h"

/* Tick times: a 1 s interval makes a rate equal to the step between readings. */
#define T0 1000000
#define T1 (T0 + 1000)

#define MLX5 "class/infiniband/mlx5_0/ports/1/"
#define MLX5_SERIES "{device=\"mlx5_0\",port=\"1\"}"
#define MLX4_2 "class/infiniband/mlx4_0/ports/2/"
#define MLX4_2_SERIES "{device=\"mlx4_0\",port=\"2\"}"

/* The rdma collector over root; it notes nothing on these trees. */
static void rig_init(struct testutil_rig *rig, const char *root)
{
	testutil_rig_init(rig, &rdma_collector, root, NULL, NULL);
	ck_assert_str_eq(rig->why, "");
}

/* A file of a fixture copy and what it reads at T0 (NULL: as copied) and at T1. */
struct step {
	const char *path, *t0, *t1;
};

/*
 * Copies tree and ticks the rdma collector over the copy at T0 and at T1, the
 * steps' files written before each. Returns the copy (testutil_copy_tree()'s
 * buffer); rig holds the registry.
 */
static const char *two_ticks(struct testutil_rig *rig, const char *tree, const struct step *steps,
			     size_t n)
{
	const char *root = testutil_copy_tree(tree);

	for (size_t i = 0; i < n; i++)
		if (steps[i].t0)
			testutil_write(root, steps[i].path, steps[i].t0);
	rig_init(rig, root);
	free(testutil_rig_tick(rig, T0));
	for (size_t i = 0; i < n; i++)
		testutil_write(root, steps[i].path, steps[i].t1);
	free(testutil_rig_tick(rig, T1));
	return root;
}

#define STEPS(a) (a), (sizeof(a) / sizeof((a)[0]))

START_TEST(test_shared_golden)
{
	struct testutil_rig rig;
	char *text;

	rig_init(&rig, testutil_shared_sysfs());
	text = testutil_rig_tick(&rig, T0);
	testutil_check_golden(text, "rdma_shared.prom");

	/* port_xmit_data counts 4-byte words: 2880761508848 words */
	ck_assert_double_eq(
		testutil_value(text, "fabmon_rdma_port_transmit_bytes_total" MLX5_SERIES),
		11523046035392.0);
	ck_assert_double_eq(
		testutil_value(
			text, "fabmon_rdma_port_receive_bytes_total{device=\"mlx4_0\",port=\"2\"}"),
		2460436784.0 * 4);
	ck_assert_double_eq(
		testutil_value(
			text, "fabmon_rdma_port_transmit_wait_total{device=\"mlx4_0\",port=\"1\"}"),
		3599);
	ck_assert_double_eq(testutil_value(text, "fabmon_rdma_port_state" MLX5_SERIES), 4);
	ck_assert_double_eq(testutil_value(text, "fabmon_rdma_port_rate_bytes" MLX5_SERIES),
			    3125000000.0);
	ck_assert_double_eq(
		testutil_value(text, "fabmon_rdma_port_rate_bytes{device=\"hfi1_0\",port=\"1\"}"),
		12500000000.0);
	ck_assert_double_eq(
		testutil_value(text, "fabmon_rdma_local_ack_timeouts_total" MLX5_SERIES), 131);
	ck_assert_double_eq(testutil_value(text,
					   "fabmon_rdma_hw_stat_total{device=\"mlx5_0\",port=\"1\","
					   "counter=\"rx_read_requests\"}"),
			    175528982);
	ck_assert(testutil_has(
		text, "fabmon_rdma_port_info{device=\"mlx4_0\",port=\"2\","
		      "state=\"ACTIVE\",phys_state=\"LinkUp\",link_layer=\"InfiniBand\"}"));
	/* hfi1_0 has no hca_type file: the label is there, empty */
	ck_assert(testutil_has(text, "fabmon_rdma_device_info{device=\"hfi1_0\",hca_type=\"\","
				     "fw_ver=\"1.27.0\",board_id=\"HPE 100Gb 1-port OP101 QSFP28 "
				     "x16 PCIe Gen3 with Intel Omni-Path Adapter\"}"));
	/* mlx4_0 has no extended unicast counters: absent, not zero, not skipped */
	ck_assert(!testutil_has(text, "fabmon_rdma_port_transmit_unicast_packets_total{"
				      "device=\"mlx4_0\",port=\"1\"}"));
	ck_assert_ptr_null(strstr(text, "lifespan"));
	ck_assert_uint_eq(registry_skipped(rig.reg, "rdma"), 0);
	free(text);
	testutil_rig_release(&rig);
}
END_TEST

START_TEST(test_roce_golden)
{
	struct testutil_rig rig;
	char *text;

	rig_init(&rig, "tests/fixtures/rdma/roce");
	text = testutil_rig_tick(&rig, T0);
	testutil_check_golden(text, "rdma_roce.prom");

	ck_assert_double_eq(
		testutil_value(text, "fabmon_rdma_cnp_sent_total{device=\"mlx5_1\",port=\"1\"}"),
		1200);
	ck_assert_double_eq(
		testutil_value(
			text, "fabmon_rdma_ecn_marked_packets_total{device=\"mlx5_1\",port=\"1\"}"),
		5400);
	/* device-level hw_counters carry no port label */
	ck_assert_double_eq(
		testutil_value(text,
			       "fabmon_rdma_out_of_sequence_packets_total{device=\"mlx5_1\"}"),
		7);
	ck_assert_double_eq(testutil_value(text, "fabmon_rdma_hw_stat_total{device=\"mlx5_1\","
						 "counter=\"tx_vport_rdma_unicast_packets\"}"),
			    123);
	ck_assert_double_eq(
		testutil_value(text, "fabmon_rdma_port_rate_bytes{device=\"mlx5_1\",port=\"2\"}"),
		312500000.0);
	ck_assert_double_eq(
		testutil_value(text, "fabmon_rdma_port_state{device=\"mlx5_1\",port=\"2\"}"), 1);
	ck_assert(testutil_has(text,
			       "fabmon_rdma_device_info{device=\"mlx5_1\",hca_type=\"MT4125\","
			       "fw_ver=\"22.31.1014\",board_id=\"\"}"));
	ck_assert_ptr_null(strstr(text, "future_counter"));
	ck_assert_ptr_null(strstr(text, "lifespan"));
	ck_assert_uint_eq(registry_skipped(rig.reg, "rdma"), 0);
	free(text);
	testutil_rig_release(&rig);
}
END_TEST

START_TEST(test_rates)
{
	const struct step steps[] = {
		/* 250000 words more in a second: 1 MB/s */
		{ MLX5 "counters/port_xmit_data", NULL, "2880761758848\n" },
		{ MLX5 "counters/port_rcv_packets", NULL, "541890124\n" },
		{ MLX5 "hw_counters/out_of_sequence", NULL, "11\n" },
		{ MLX4_2 "counters/port_xmit_wait", NULL, "3946\n" },
	};
	struct testutil_rig rig;
	const char *root = two_ticks(&rig, testutil_shared_sysfs(), STEPS(steps));
	struct series s;

	s = testutil_series(rig.reg, "fabmon_rdma_port_transmit_bytes_total",
			    "device=\"mlx5_0\",port=\"1\"");
	ck_assert(s.has_rate);
	ck_assert_double_eq(s.rate, 1e6);
	ck_assert_double_eq(s.value, 11523046035392.0 + 1e6);
	s = testutil_series(rig.reg, "fabmon_rdma_port_receive_packets_total",
			    "device=\"mlx5_0\",port=\"1\"");
	ck_assert_double_eq(s.rate, 300);
	s = testutil_series(rig.reg, "fabmon_rdma_out_of_sequence_packets_total",
			    "device=\"mlx5_0\",port=\"1\"");
	ck_assert_double_eq(s.rate, 10);
	s = testutil_series(rig.reg, "fabmon_rdma_port_transmit_wait_total",
			    "device=\"mlx4_0\",port=\"2\"");
	ck_assert_double_eq(s.rate, 100);
	s = testutil_series(rig.reg, "fabmon_rdma_port_receive_bytes_total",
			    "device=\"mlx5_0\",port=\"1\"");
	ck_assert(s.has_rate);
	ck_assert_double_eq(s.rate, 0);
	testutil_rig_release(&rig);
	testutil_remove_tree(root);
}
END_TEST

/*
 * PortCounters stop at all ones, they do not wrap: a 32-bit port_xmit_wait
 * that falls was cleared (perfquery -R, a driver reload) and has counted what
 * it reads since. Taken for a wrap, it made a spike of 2^32 - last.
 */
START_TEST(test_pma_fall_is_reset)
{
	const struct step steps[] = {
		{ MLX5 "counters/port_xmit_wait", "4294967000\n", "100\n" },
		{ MLX5 "counters/symbol_error", "65000\n", "7\n" },
	};
	struct testutil_rig rig;
	const char *root = two_ticks(&rig, testutil_shared_sysfs(), STEPS(steps));
	struct series s;

	s = testutil_series(rig.reg, "fabmon_rdma_port_transmit_wait_total",
			    "device=\"mlx5_0\",port=\"1\"");
	ck_assert_double_eq(s.rate, 100);
	ck_assert_double_eq(s.value, 4294967000.0 + 100);
	s = testutil_series(rig.reg, "fabmon_rdma_port_symbol_errors_total",
			    "device=\"mlx5_0\",port=\"1\"");
	ck_assert_double_eq(s.rate, 7);
	testutil_rig_release(&rig);
	testutil_remove_tree(root);
}
END_TEST

/*
 * A PMA counter at the all-ones of its PortCounters width has stopped: its
 * series is left out (no rate, not a rate of 0), fabmon_rdma_pma_saturated
 * says so, and init notes it for `fabmon doctor`. Once cleared it counts on
 * from the total it had, its rate over the time since its last reading.
 */
START_TEST(test_pma_saturated)
{
	const char *root = testutil_copy_tree(testutil_shared_sysfs());
	struct testutil_rig rig;
	struct series s;
	char *text;

	testutil_write(root, MLX5 "counters/port_xmit_wait", "4294967000\n");
	rig_init(&rig, root);
	text = testutil_rig_tick(&rig, T0);
	ck_assert_double_eq(testutil_value(text, "fabmon_rdma_pma_saturated{device=\"mlx5_0\","
						 "port=\"1\",counter=\"port_xmit_wait\"}"),
			    0);
	free(text);
	testutil_write(root, MLX5 "counters/port_xmit_wait", "4294967295\n");
	text = testutil_rig_tick(&rig, T1);
	ck_assert(!testutil_has(text, "fabmon_rdma_port_transmit_wait_total" MLX5_SERIES));
	ck_assert(!testutil_series_find(rig.reg, "fabmon_rdma_port_transmit_wait_total",
					"device=\"mlx5_0\",port=\"1\"", &s));
	ck_assert_double_eq(testutil_value(text, "fabmon_rdma_pma_saturated{device=\"mlx5_0\","
						 "port=\"1\",counter=\"port_xmit_wait\"}"),
			    1);
	/* the 64-bit extended data counter is past 2^32: not saturated */
	ck_assert_double_eq(testutil_value(text, "fabmon_rdma_pma_saturated{device=\"mlx5_0\","
						 "port=\"1\",counter=\"port_xmit_data\"}"),
			    0);
	ck_assert_uint_eq(registry_skipped(rig.reg, "rdma"), 0);
	free(text);
	testutil_write(root, MLX5 "counters/port_xmit_wait", "50\n");
	text = testutil_rig_tick(&rig, T1 + 1000);
	s = testutil_series(rig.reg, "fabmon_rdma_port_transmit_wait_total",
			    "device=\"mlx5_0\",port=\"1\"");
	ck_assert_double_eq(s.value, 4294967000.0 + 50);
	ck_assert_double_eq(s.rate, 25);
	ck_assert_double_eq(testutil_value(text, "fabmon_rdma_pma_saturated{device=\"mlx5_0\","
						 "port=\"1\",counter=\"port_xmit_wait\"}"),
			    0);
	free(text);
	testutil_rig_release(&rig);
	testutil_remove_tree(root);
}
END_TEST

/* A host whose HCA has only 32-bit PortCounters, some stopped at their maximum. */
START_TEST(test_pma_saturated_fixture)
{
	struct testutil_rig rig;
	char *text;

	testutil_rig_init(&rig, &rdma_collector, "tests/fixtures/rdma/pma", NULL, NULL);
	ck_assert_str_eq(rig.why,
			 "rdma: mlx4_1 port 1: no PMA, its counters/ values are not "
			 "provided; rdma: mlx4_2 port 1: saturated, no rate until cleared: "
			 "link_downed, local_link_integrity_errors, port_xmit_data, "
			 "port_xmit_packets, port_xmit_wait, symbol_error");
	text = testutil_rig_tick(&rig, T0);
	testutil_check_golden(text, "rdma_pma.prom");
	ck_assert(!testutil_has(text, "fabmon_rdma_port_transmit_bytes_total{device=\"mlx4_2\""));
	ck_assert_double_eq(testutil_value(text,
					   "fabmon_rdma_port_receive_bytes_total{device=\"mlx4_2\","
					   "port=\"1\"}"),
			    2460436784.0 * 4);
	/* 4-bit local_link_integrity_errors at 15 */
	ck_assert_double_eq(testutil_value(text,
					   "fabmon_rdma_pma_saturated{device=\"mlx4_2\","
					   "port=\"1\",counter=\"local_link_integrity_errors\"}"),
			    1);
	ck_assert_uint_eq(registry_skipped(rig.reg, "rdma"), 0);
	free(text);
	testutil_rig_release(&rig);
}
END_TEST

/*
 * mlx5's hw_counters as its driver reads them: Q counters are 32-bit and
 * wrap, congestion counters are 64-bit (a fall is a reset).
 */
START_TEST(test_hw_counter_widths)
{
#define ROCE1 "class/infiniband/mlx5_1/ports/1/hw_counters/"
	const struct step steps[] = {
		{ ROCE1 "out_of_sequence", "4294967000\n", "100\n" },
		{ ROCE1 "rx_read_requests", "4294967290\n", "4\n" },
		{ ROCE1 "np_cnp_sent", NULL, "30\n" },
	};
#undef ROCE1
	struct testutil_rig rig;
	const char *root = two_ticks(&rig, "tests/fixtures/rdma/roce", STEPS(steps));
	struct series s;

	s = testutil_series(rig.reg, "fabmon_rdma_out_of_sequence_packets_total",
			    "device=\"mlx5_1\",port=\"1\"");
	ck_assert_double_eq(s.rate, 396);
	s = testutil_series(rig.reg, "fabmon_rdma_hw_stat_total",
			    "device=\"mlx5_1\",port=\"1\",counter=\"rx_read_requests\"");
	ck_assert_double_eq(s.rate, 10);
	s = testutil_series(rig.reg, "fabmon_rdma_cnp_sent_total", "device=\"mlx5_1\",port=\"1\"");
	ck_assert_double_eq(s.rate, 30);
	testutil_rig_release(&rig);
	testutil_remove_tree(root);
}
END_TEST

START_TEST(test_bad_values_skipped)
{
	const char *root = testutil_copy_tree(testutil_shared_sysfs());
	struct testutil_rig rig;
	char path[PATH_MAX];
	char *text;

	testutil_write(root, MLX5 "counters/port_rcv_errors", "garbage\n");
	testutil_write(root, MLX5 "hw_counters/out_of_buffer", "");
	testutil_write(root, MLX5 "rate", "unknown\n");
	testutil_write(root, MLX5 "state", "ACTIVE\n");
	testutil_write(root, MLX5 "phys_state", "");
	/* unreadable even for root: a directory where a counter file should be... */
	ck_assert_int_lt(
		snprintf(path, sizeof(path), "%s/%s", root, MLX5 "hw_counters/duplicate_request"),
		sizeof(path));
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	/* ...and a file where a counter directory should be */
	ck_assert_int_lt(snprintf(path, sizeof(path), "%s/%s", root, MLX4_2 "counters"),
			 sizeof(path));
	testutil_remove_tree(path);
	testutil_write(root, MLX4_2 "counters", "0\n");
	rig_init(&rig, root);
	text = testutil_rig_tick(&rig, T0);

	/* one skip for each of the seven bad things above */
	ck_assert_uint_eq(registry_skipped(rig.reg, "rdma"), 7);
	ck_assert(!testutil_has(text, "fabmon_rdma_port_receive_errors_total" MLX5_SERIES));
	ck_assert(!testutil_has(text, "fabmon_rdma_out_of_buffer_drops_total" MLX5_SERIES));
	ck_assert(!testutil_has(text, "fabmon_rdma_duplicate_requests_total" MLX5_SERIES));
	ck_assert(!testutil_has(text, "fabmon_rdma_port_rate_bytes" MLX5_SERIES));
	ck_assert(!testutil_has(text, "fabmon_rdma_port_state" MLX5_SERIES));
	ck_assert(!testutil_has(text, "fabmon_rdma_port_symbol_errors_total" MLX4_2_SERIES));
	/* the rest of each port, and the other devices, are still there */
	ck_assert_double_eq(
		testutil_value(text, "fabmon_rdma_port_transmit_bytes_total" MLX5_SERIES),
		11523046035392.0);
	ck_assert_double_eq(
		testutil_value(text, "fabmon_rdma_local_ack_timeouts_total" MLX5_SERIES), 131);
	ck_assert(testutil_has(text,
			       "fabmon_rdma_port_info{device=\"mlx5_0\",port=\"1\","
			       "state=\"ACTIVE\",phys_state=\"\",link_layer=\"InfiniBand\"}"));
	ck_assert_double_eq(testutil_value(text, "fabmon_rdma_port_state" MLX4_2_SERIES), 4);
	ck_assert_double_eq(
		testutil_value(
			text, "fabmon_rdma_port_symbol_errors_total{device=\"mlx4_0\",port=\"1\"}"),
		0);
	free(text);
	testutil_rig_release(&rig);
	testutil_remove_tree(root);
}
END_TEST

/*
 * A port whose PMA does not answer (a ConnectX-3 VF here) shows its counters
 * as "N/A (no PMA)", or, on newer kernels, fails their read with EINVAL. The
 * values are not provided, not garbage: nothing is skipped, init notes the
 * port once for `fabmon doctor`, and its other series stay.
 */
START_TEST(test_no_pma)
{
	const char *root = testutil_copy_tree("tests/fixtures/rdma/pma");
	struct testutil_rig rig;
	char path[PATH_MAX];
	char *text;

	/* a counter whose read fails as the kernel fails it: EINVAL */
	ck_assert_int_lt(snprintf(path, sizeof(path),
				  "%s/class/infiniband/mlx4_1/ports/1/"
				  "counters/port_rcv_errors",
				  root),
			 sizeof(path));
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(symlink("/sys/class/net/lo/speed", path), 0);
	testutil_rig_init(&rig, &rdma_collector, root, NULL, NULL);
	ck_assert_msg(strstr(rig.why, "rdma: mlx4_1 port 1: no PMA, its counters/ values are not "
				      "provided; rdma: mlx4_2") == rig.why,
		      "why: %s", rig.why);
	text = testutil_rig_tick(&rig, T0);
	ck_assert_ptr_null(strstr(text, "fabmon_rdma_port_symbol_errors_total{device=\"mlx4_1\""));
	ck_assert_ptr_null(strstr(text, "device=\"mlx4_1\",port=\"1\",counter="));
	ck_assert_double_eq(
		testutil_value(text, "fabmon_rdma_port_state{device=\"mlx4_1\",port=\"1\"}"), 4);
	ck_assert_uint_eq(registry_skipped(rig.reg, "rdma"), 0);
	free(text);
	testutil_rig_release(&rig);
	testutil_remove_tree(root);
}
END_TEST

static void check_no_devices(const char *root)
{
	struct collector_env env = { .sysfs_root = root };
	char why[COLLECTOR_WHY_MAX] = "", want[PATH_MAX + 64];
	void *state = NULL;

	snprintf(want, sizeof(want), "no RDMA devices under %s/class/infiniband", root);
	ck_assert_int_eq(rdma_collector.init(&env, &state, why, sizeof(why)), -ENOENT);
	ck_assert_str_eq(why, want);
}

START_TEST(test_no_devices)
{
	char root[] = "/tmp/fabmon-rdma-XXXXXX", path[PATH_MAX];

	ck_assert_ptr_nonnull(mkdtemp(root));
	check_no_devices(root);
	snprintf(path, sizeof(path), "%s/class", root);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/class/infiniband", root);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	check_no_devices(root);
	testutil_remove_tree(root);
}
END_TEST

Suite *rdma_suite(void)
{
	const struct testutil_case cases[] = {
		{ "shared_fixtures_golden", test_shared_golden, 0 },
		{ "roce_fixture_golden", test_roce_golden, 0 },
		{ "counter_rates", test_rates, 0 },
		{ "pma_fall_is_reset", test_pma_fall_is_reset, 0 },
		{ "pma_saturated", test_pma_saturated, 0 },
		{ "pma_saturated_fixture", test_pma_saturated_fixture, 0 },
		{ "hw_counter_widths", test_hw_counter_widths, 0 },
		{ "bad_values_skipped", test_bad_values_skipped, 0 },
		{ "no_pma", test_no_pma, 0 },
		{ "no_devices", test_no_devices, 0 },
	};

	return TESTUTIL_SUITE("rdma", cases);
}
