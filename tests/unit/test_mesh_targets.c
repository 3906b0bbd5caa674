/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "suites.h"
#include "testutil.h"

#include "collector/mesh/mesh_targets.h"

static char path[64];

static void write_file(const char *text)
{
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/fabmon-mesh-targets-%d.json", (int)getpid());
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

/* Prometheus' file_sd form: the hosts, sorted and once each, ports ignored. */
START_TEST(test_file_sd_and_static)
{
	struct mesh_targets t = { 0 };
	char err[256] = "";

	write_file("[{\"targets\": [\"198.18.1.3:9478\", \"198.18.1.2:9478\"],\n"
		   "  \"labels\": {\"rack\": \"a\"}},\n"
		   " {\"targets\": [\"198.18.1.2:9478\"]}]\n");
	ck_assert_int_eq(mesh_targets_load(path, "198.18.0.9", &t, err, sizeof(err)), 0);
	ck_assert_uint_eq(t.n, 3);
	ck_assert_uint_eq(t.addrs[0], 0xc6120009);
	ck_assert_uint_eq(t.addrs[1], 0xc6120102);
	ck_assert_uint_eq(t.addrs[2], 0xc6120103);
	ck_assert(mesh_targets_has(&t, 0xc6120103));
	ck_assert(!mesh_targets_has(&t, 0xc6120104));
	mesh_targets_release(&t);
	(void)unlink(path);
}
END_TEST

/* A malformed file is reported with its name and line, and the list the
 * caller holds is left as it was. */
START_TEST(test_malformed_keeps_old_list)
{
	struct mesh_targets t = { 0 };
	char err[256] = "";

	write_file("[{\"targets\": [\"198.18.1.3:9478\"]}]\n");
	ck_assert_int_eq(mesh_targets_load(path, "", &t, err, sizeof(err)), 0);
	write_file(
		"[\n {\"targets\": [\"198.18.1.4:9478\"]},\n {\"targets\": [\"198.18.1.5:9478\",]}\n]\n");
	ck_assert_int_eq(mesh_targets_load(path, "", &t, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, path) && strstr(err, ":3:"), "err: %s", err);
	ck_assert_uint_eq(t.n, 1);
	ck_assert_uint_eq(t.addrs[0], 0xc6120103);

	write_file("[{\"targets\": [\"[::1:9478\"]}]\n");
	ck_assert_int_eq(mesh_targets_load(path, "", &t, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, ":1: target '[::1:9478': expected"), "err: %s", err);
	ck_assert_uint_eq(t.n, 1);

	write_file("{\"targets\": []}");
	ck_assert_int_eq(mesh_targets_load(path, "", &t, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "expected a JSON array"), "err: %s", err);
	ck_assert_int_eq(mesh_targets_load("/nonexistent/targets.json", "", &t, err, sizeof(err)),
			 -ENOENT);
	ck_assert_msg(strstr(err, "unable to open '/nonexistent/targets.json'"), "err: %s", err);
	ck_assert_int_eq(mesh_targets_load("", "198.18.1.300", &t, err, sizeof(err)), -EINVAL);
	ck_assert_uint_eq(t.n, 1);
	mesh_targets_release(&t);
	(void)unlink(path);
}
END_TEST

/* text as the targets file, loaded into t (no static list). */
static int load(struct mesh_targets *t, const char *text, char *err, size_t len)
{
	write_file(text);
	return mesh_targets_load(path, "", t, err, len);
}

/* Targets that cannot be probed are left out and said, the rest used: an
 * IPv6 one, and a name with no IPv4 address; unless no name resolves at
 * all (the name service is down: the old list stays). */
START_TEST(test_unprobeable_left_out)
{
	struct mesh_targets t = { 0 };
	char err[256] = "";

	ck_assert_int_eq(load(&t,
			      "[{\"targets\": [\"198.18.1.3:9478\",\n"
			      "  \"[2001:db8::1]:9478\", \"2001:db8::2\",\n"
			      "  \"nonexistent.invalid:9478\"]}]\n",
			      err, sizeof(err)),
			 0);
	ck_assert(t.n == 1 && t.addrs[0] == 0xc6120103 && t.unresolved == 1);
	ck_assert_msg(strstr(err, ":2: target '[2001:db8::1]:9478' skipped: IPv6") &&
			      strstr(err, "(3 skipped in all)"),
		      "err: %s", err);

	ck_assert_int_eq(
		load(&t, "[{\"targets\": [\"nonexistent.invalid:9478\"]}]\n", err, sizeof(err)),
		-ENOENT);
	ck_assert_msg(strstr(err, "no IPv4 address (no target resolved)"), "err: %s", err);
	ck_assert_uint_eq(t.n, 1);
	mesh_targets_release(&t);
	(void)unlink(path);
}
END_TEST

Suite *mesh_targets_suite(void)
{
	const struct testutil_case cases[] = {
		{ "file_sd_and_static", test_file_sd_and_static, 0 },
		{ "malformed_keeps_old_list", test_malformed_keeps_old_list, 0 },
		/* resolves a name: seconds where the name service does not answer */
		{ "unprobeable_left_out", test_unprobeable_left_out, 30 },
	};

	return TESTUTIL_SUITE("mesh_targets", cases);
}
