/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "collector/sysfs.h"
#include "suites.h"
#include "testutil.h"

START_TEST(test_parse)
{
	uint64_t v;

	ck_assert_int_eq(sysfs_parse_u64("18446744073709551615\n", &v), 0);
	ck_assert(v == UINT64_MAX);
	ck_assert_int_eq(sysfs_parse_u64("0x10", &v), 0);
	ck_assert(v == 16);
	ck_assert_int_eq(sysfs_parse_u64("N/A (no PMA)", &v), -EINVAL);
	ck_assert_int_eq(sysfs_parse_u64("-1", &v), -EINVAL);
	ck_assert_int_eq(sysfs_parse_u64("12abc", &v), -EINVAL);
	ck_assert_int_eq(sysfs_parse_u64("", &v), -EINVAL);
	ck_assert_int_eq(sysfs_parse_u64("99999999999999999999999", &v), -ERANGE);
}
END_TEST

START_TEST(test_read_shared)
{
	const char *root = testutil_shared_sysfs();
	char buf[64];
	uint64_t v;

	ck_assert_int_eq(
		sysfs_read_u64(root, "class/infiniband/mlx5_0/ports/1/counters/port_xmit_data", &v),
		0);
	ck_assert(v == 2880761508848ULL);
	ck_assert_int_gt(sysfs_read(root, "class/infiniband/mlx5_0/ports/1/rate", buf, sizeof(buf)),
			 0);
	ck_assert_str_eq(buf, "25 Gb/sec (1X EDR)");
	ck_assert_int_eq(sysfs_read(root, "class/net/nonexistent/mtu", buf, sizeof(buf)), -ENOENT);
}
END_TEST

static int count_cb(const char *name, void *arg)
{
	(void)name;
	(*(int *)arg)++;
	return 0;
}

START_TEST(test_list)
{
	const char *root = testutil_shared_sysfs();
	int n = 0;

	ck_assert_int_eq(sysfs_list(root, "class/infiniband", count_cb, &n), 0);
	ck_assert_int_eq(n, 3);
	ck_assert_int_eq(sysfs_list(root, "class/nothing", count_cb, &n), -ENOENT);
}
END_TEST

/* Appends name to the space-separated list arg. */
static int join_cb(const char *name, void *arg)
{
	char *names = arg;

	strcat(names, names[0] ? " " : "");
	strcat(names, name);
	return 0;
}

/* Only directories and links to them; a file or a dangling link is no device. */
START_TEST(test_list_dirs)
{
	const char *root = testutil_copy_tree(testutil_shared_sysfs());
	char names[256] = "", path[PATH_MAX];

	testutil_write(root, "class/net/bonding_masters", "bond0\n");
	testutil_write(root, "devices/virtual/net/bond0/mtu", "1500\n");
	snprintf(path, sizeof(path), "%s/class/net/bond0", root);
	ck_assert_int_eq(symlink("../../devices/virtual/net/bond0", path), 0);
	snprintf(path, sizeof(path), "%s/class/net/gone0", root);
	ck_assert_int_eq(symlink("../../devices/virtual/net/gone0", path), 0);
	ck_assert_int_eq(sysfs_list_dirs(root, "class/net", join_cb, names), 0);
	ck_assert_str_eq(names, "bond0 eth0");
	names[0] = '\0';
	ck_assert_int_eq(sysfs_list(root, "class/net", join_cb, names), 0);
	ck_assert_str_eq(names, "bond0 bonding_masters eth0 gone0");
	ck_assert_int_eq(sysfs_list_dirs(root, "class/nothing", join_cb, names), -ENOENT);
	testutil_remove_tree(root);
}
END_TEST

Suite *sysfs_suite(void)
{
	const struct testutil_case cases[] = {
		{ "parse", test_parse, 0 },
		{ "read_shared", test_read_shared, 0 },
		{ "list", test_list, 0 },
		{ "list_dirs", test_list_dirs, 0 },
	};

	return TESTUTIL_SUITE("sysfs", cases);
}
