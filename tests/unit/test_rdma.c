/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <errno.h>
#include <ftw.h>
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

static const char *shared_sysfs(void)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/sysfs", testutil_shared_fixtures());
	return path;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Removes a tree a test built under /tmp. */
static void rm_tree(const char *dir)
{
	ck_assert_int_eq(nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

/* A collector over one sysfs root, with a registry to tick it into. */
struct rig {
	struct collector_env env;
	struct registry *reg;
	void *state;
};

static void rig_init(struct rig *rig, const char *root)
{
	char why[COLLECTOR_WHY_MAX] = "";

	rig->env = (struct collector_env){ .sysfs_root = root };
	rig->reg = registry_new(4096, 60000);
	ck_assert_ptr_nonnull(rig->reg);
	ck_assert_int_eq(rdma_collector.init(&rig->env, &rig->state, why, sizeof(why)), 0);
	ck_assert_str_eq(why, "");
}

static void rig_tick(struct rig *rig, int64_t now_ms)
{
	ck_assert_int_eq(testutil_tick(rig->reg, &rdma_collector, rig->state, &rig->env, now_ms),
			 0);
}

static void rig_release(struct rig *rig)
{
	rdma_collector.fini(rig->state);
	registry_free(rig->reg);
}

struct find {
	const char *name;
	const char *labels;
	struct series found;
	int ok;
};

static int find_cb(struct series *s, void *arg)
{
	struct find *f = arg;

	if (strcmp(s->name, f->name) != 0 || strcmp(s->labels, f->labels) != 0)
		return 0;
	f->found = *s;
	f->ok = 1;
	return 1;
}

/* The series name{labels} of the current tick; fails the test if it is absent. */
static struct series rig_series(struct rig *rig, const char *name, const char *labels)
{
	struct find f = { .name = name, .labels = labels };

	(void)registry_foreach(rig->reg, find_cb, &f);
	ck_assert_msg(f.ok, "no series %s{%s}", name, labels);
	return f.found;
}

/* Copies src to a temp tree the test may change; dst gets its path. */
static void copy_tree(const char *src, char dst[PATH_MAX])
{
	snprintf(dst, PATH_MAX, "%s", testutil_copy_tree(src));
}

START_TEST(test_shared_golden)
{
	struct rig rig;
	char *text;

	rig_init(&rig, shared_sysfs());
	rig_tick(&rig, T0);
	text = testutil_render(rig.reg);
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
	rig_release(&rig);
}
END_TEST

START_TEST(test_roce_golden)
{
	struct rig rig;
	char *text;

	rig_init(&rig, "tests/fixtures/rdma/roce");
	rig_tick(&rig, T0);
	text = testutil_render(rig.reg);
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
	rig_release(&rig);
}
END_TEST

START_TEST(test_rates)
{
	char root[PATH_MAX];
	struct series s;
	struct rig rig;

	copy_tree(shared_sysfs(), root);
	rig_init(&rig, root);
	rig_tick(&rig, T0);
	/* 250000 words more in a second: 1 MB/s */
	testutil_write(root, MLX5 "counters/port_xmit_data", "2880761758848\n");
	testutil_write(root, MLX5 "counters/port_rcv_packets", "541890124\n");
	testutil_write(root, MLX5 "hw_counters/out_of_sequence", "11\n");
	testutil_write(root, "class/infiniband/mlx4_0/ports/2/counters/port_xmit_wait", "3946\n");
	rig_tick(&rig, T1);

	s = rig_series(&rig, "fabmon_rdma_port_transmit_bytes_total",
		       "device=\"mlx5_0\",port=\"1\"");
	ck_assert(s.has_rate);
	ck_assert_double_eq(s.rate, 1e6);
	ck_assert_double_eq(s.value, 11523046035392.0 + 1e6);
	s = rig_series(&rig, "fabmon_rdma_port_receive_packets_total",
		       "device=\"mlx5_0\",port=\"1\"");
	ck_assert_double_eq(s.rate, 300);
	s = rig_series(&rig, "fabmon_rdma_out_of_sequence_packets_total",
		       "device=\"mlx5_0\",port=\"1\"");
	ck_assert_double_eq(s.rate, 10);
	s = rig_series(&rig, "fabmon_rdma_port_transmit_wait_total",
		       "device=\"mlx4_0\",port=\"2\"");
	ck_assert_double_eq(s.rate, 100);
	s = rig_series(&rig, "fabmon_rdma_port_receive_bytes_total",
		       "device=\"mlx5_0\",port=\"1\"");
	ck_assert(s.has_rate);
	ck_assert_double_eq(s.rate, 0);
	rig_release(&rig);
	rm_tree(root);
}
END_TEST

START_TEST(test_xmit_wait_wraps_at_32_bits)
{
	char root[PATH_MAX];
	struct series s;
	struct rig rig;

	copy_tree(shared_sysfs(), root);
	testutil_write(root, MLX5 "counters/port_xmit_wait", "4294967000\n");
	rig_init(&rig, root);
	rig_tick(&rig, T0);
	testutil_write(root, MLX5 "counters/port_xmit_wait", "100\n");
	rig_tick(&rig, T1);

	/* 296 ticks up to 2^32, then 100 more */
	s = rig_series(&rig, "fabmon_rdma_port_transmit_wait_total",
		       "device=\"mlx5_0\",port=\"1\"");
	ck_assert_double_eq(s.rate, 396);
	ck_assert_double_eq(s.value, 4294967000.0 + 396);
	rig_release(&rig);
	rm_tree(root);
}
END_TEST

START_TEST(test_bad_values_skipped)
{
	char root[PATH_MAX], path[PATH_MAX];
	struct rig rig;
	char *text;

	copy_tree(shared_sysfs(), root);
	testutil_write(root, MLX5 "counters/symbol_error", "N/A (no PMA)\n");
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
	rm_tree(path);
	testutil_write(root, MLX4_2 "counters", "0\n");
	rig_init(&rig, root);
	rig_tick(&rig, T0);
	text = testutil_render(rig.reg);

	/* one skip for each of the eight bad things above */
	ck_assert_uint_eq(registry_skipped(rig.reg, "rdma"), 8);
	ck_assert(!testutil_has(text, "fabmon_rdma_port_symbol_errors_total" MLX5_SERIES));
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
	rig_release(&rig);
	rm_tree(root);
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
	rm_tree(root);
}
END_TEST

Suite *rdma_suite(void)
{
	Suite *s = suite_create("rdma");
	struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{ "shared_fixtures_golden", test_shared_golden },
		{ "roce_fixture_golden", test_roce_golden },
		{ "counter_rates", test_rates },
		{ "xmit_wait_wraps_at_32_bits", test_xmit_wait_wraps_at_32_bits },
		{ "bad_values_skipped", test_bad_values_skipped },
		{ "no_devices", test_no_devices },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		TCase *tc = tcase_create(cases[i].name);

		tcase_add_test(tc, cases[i].test);
		suite_add_tcase(s, tc);
	}
	return s;
}
