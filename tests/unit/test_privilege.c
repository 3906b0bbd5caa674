/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "agent/config.h"
#include "agent/daemon/privilege.h"
#include "suites.h"
#include "testutil.h"

/* The user key takes a name or a uid, nothing a shell or a path would read. */
START_TEST(test_user_key)
{
	static const char *const good[] = { "", "fabmon", "nobody", "65534", "svc.mon_1-a" };
	static const char *const bad[] = { "-x", "../etc", "a b", "a:b", "x;y", "$USER" };
	struct config cfg;
	char err[512];

	config_defaults(&cfg);
	ck_assert_str_eq(cfg.user, "");
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ck_assert_msg(config_set(&cfg, "user", good[i], err, sizeof(err)) == 0, "%s", err);
		ck_assert_str_eq(cfg.user, good[i]);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(config_set(&cfg, "user", bad[i], err, sizeof(err)), -EINVAL);
		ck_assert_msg(strstr(err, "'user'") != NULL, "%s", err);
	}
}
END_TEST

/* A name and a uid resolve to the same account; an unknown one is -ENOENT. */
START_TEST(test_lookup)
{
	struct privilege_user u = { .uid = 7, .gid = 7 };

	ck_assert_int_eq(privilege_lookup("root", &u), 0);
	ck_assert_uint_eq(u.uid, 0);
	ck_assert_uint_eq(u.gid, 0);
	ck_assert_str_eq(u.name, "root");
	ck_assert_int_eq(privilege_lookup("0", &u), 0);
	ck_assert_uint_eq(u.uid, 0);
	u.uid = 7;
	ck_assert_int_eq(privilege_lookup("fabmon-no-such-user", &u), -ENOENT);
	ck_assert_int_eq(privilege_lookup("4294967294", &u), -ENOENT);
	ck_assert_uint_eq(u.uid, 7); /* written only on success */
}
END_TEST

Suite *privilege_suite(void)
{
	const struct testutil_case cases[] = {
		{ "user_key", test_user_key, 0 },
		{ "lookup", test_lookup, 0 },
	};

	return TESTUTIL_SUITE("privilege", cases);
}
