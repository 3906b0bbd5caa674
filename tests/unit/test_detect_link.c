/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <string.h>

#include "agent/detect/link.h"
#include "suites.h"

#define WINDOW_MS 10000

/* One tick at now_ms of eth0 (up, moving bytes) and eth1 (state up1, bytes1);
 * returns the verdicts. */
static size_t tick(struct link_history *h, int64_t now_ms, int up1, double bytes1,
		   struct event_verdict *out)
{
	const struct link_input in[2] = { { "interface=eth0", 1, 1e6 },
					  { "interface=eth1", up1, bytes1 } };

	link_history_update(h, in, 2, WINDOW_MS, now_ms);
	return detect_link(h, now_ms, out, 4);
}

/* A port that carried traffic and goes down is named at once, and for as
 * long as it stays down (past the window too); up again, it is not. */
START_TEST(test_down_in_use)
{
	static struct link_history h;
	struct event_verdict out[4];
	int64_t now = 0;

	memset(&h, 0, sizeof(h));
	for (int t = 0; t < 5; t++)
		ck_assert_uint_eq(tick(&h, now += 200, 1, 5e5, out), 0);
	for (int t = 0; t < 80; t++) {
		ck_assert_uint_eq(tick(&h, now += 200, 0, 0, out), 1);
		ck_assert_int_eq(out[0].kind, EVENT_STALL);
		ck_assert_int_eq(out[0].weight, VERDICT_AT_ONCE);
		ck_assert_str_eq(out[0].subject, "interface=eth1");
	}
	ck_assert_ptr_nonnull(strstr(out[0].evidence, "\"down_seconds\":15.800"));
	ck_assert_uint_eq(tick(&h, now += 200, 1, 0, out), 0);
}
END_TEST

/* Down from the start, or idle for the window before it went: an unused
 * port, not a fault. */
START_TEST(test_unused_port)
{
	static struct link_history h;
	struct event_verdict out[4];
	int64_t now = 0;

	memset(&h, 0, sizeof(h));
	for (int t = 0; t < 5; t++)
		ck_assert_uint_eq(tick(&h, now += 200, 0, 0, out), 0);
	ck_assert_uint_eq(tick(&h, now += 200, 1, 5e5, out), 0);
	for (int t = 0; t < WINDOW_MS / 200 + 1; t++)
		ck_assert_uint_eq(tick(&h, now += 200, 1, 0, out), 0);
	ck_assert_uint_eq(tick(&h, now += 200, 0, 0, out), 0);
}
END_TEST

/* Cut off: every port that carried traffic down, and as long again after
 * it is back. eth1 down while eth0 still carries is not; both down is; an
 * idle one left up does not count. */
START_TEST(test_cut_off)
{
	static struct link_history h;
	const struct link_input both_down[2] = { { "interface=eth0", 0, 0 },
						 { "interface=eth1", 0, 0 } };
	const struct link_input idle_up[2] = { { "interface=eth0", 0, 0 },
					       { "interface=eth1", 1, 0 } };
	struct event_verdict out[4];
	int64_t now = 0;

	memset(&h, 0, sizeof(h));
	for (int t = 0; t < 5; t++)
		(void)tick(&h, now += 200, 1, 5e5, out);
	ck_assert(!link_cut_off(&h, now));
	(void)tick(&h, now += 200, 0, 0, out);
	ck_assert(!link_cut_off(&h, now));
	for (int t = 0; t < 5; t++) {
		link_history_update(&h, both_down, 2, WINDOW_MS, now += 200);
		ck_assert(link_cut_off(&h, now));
	}
	/* back after 1 s: 1 s more of the cut's aftermath */
	for (int t = 0; t < 6; t++) {
		(void)tick(&h, now += 200, 1, 5e5, out);
		ck_assert(link_cut_off(&h, now));
	}
	(void)tick(&h, now += 200, 1, 5e5, out);
	ck_assert(!link_cut_off(&h, now));
	/* eth1 idle since before the window, and up: eth0 was the only link used */
	memset(&h, 0, sizeof(h));
	for (int t = 0; t < 5; t++)
		(void)tick(&h, now += 200, 1, 0, out);
	link_history_update(&h, idle_up, 2, WINDOW_MS, now += 200);
	ck_assert(link_cut_off(&h, now));
}
END_TEST

Suite *detect_link_suite(void)
{
	Suite *s = suite_create("detect_link");
	TCase *tc = tcase_create("verdicts");

	tcase_add_test(tc, test_down_in_use);
	tcase_add_test(tc, test_unused_port);
	tcase_add_test(tc, test_cut_off);
	suite_add_tcase(s, tc);
	return s;
}
