/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <check.h>
#include <sys/socket.h>

#include "agent/lib/loopback.h"
#include "suites.h"

/* The text forms the detectors read from peer labels. */
START_TEST(test_text)
{
	ck_assert(loopback_text("127.0.0.1"));
	ck_assert(loopback_text("127.255.0.9"));
	ck_assert(loopback_text("::1"));
	ck_assert(loopback_text("::ffff:127.0.0.1"));
	ck_assert(!loopback_text("198.18.0.1"));
	ck_assert(!loopback_text("128.0.0.1"));
	ck_assert(!loopback_text("::ffff:198.18.0.1"));
	ck_assert(!loopback_text("::2"));
	ck_assert(!loopback_text("other"));
	ck_assert(!loopback_text(""));
}
END_TEST

/* The binary forms inet_diag gives (network order); other families none. */
START_TEST(test_addr)
{
	struct in6_addr a6;
	struct in_addr a4;

	ck_assert_int_eq(inet_pton(AF_INET, "127.0.0.53", &a4), 1);
	ck_assert(loopback_addr(AF_INET, &a4));
	ck_assert_int_eq(inet_pton(AF_INET, "198.18.0.127", &a4), 1);
	ck_assert(!loopback_addr(AF_INET, &a4));
	ck_assert_int_eq(inet_pton(AF_INET6, "::1", &a6), 1);
	ck_assert(loopback_addr(AF_INET6, &a6));
	ck_assert(!loopback_addr(AF_UNIX, &a6));
}
END_TEST

Suite *loopback_suite(void)
{
	Suite *s = suite_create("loopback");
	TCase *tc = tcase_create("loopback");

	tcase_add_test(tc, test_text);
	tcase_add_test(tc, test_addr);
	suite_add_tcase(s, tc);
	return s;
}
