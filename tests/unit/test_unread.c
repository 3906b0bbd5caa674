/* SPDX-License-Identifier: MIT */
#include <check.h>

#include "collector/unread.h"
#include "suites.h"
#include "testutil.h"

/* A reader that stops: its data stands from the first tick that saw it
 * unread, counted once the next tick finds none of it read. */
START_TEST(test_stands_from_the_tick_before)
{
	struct unread_tracker *t = unread_tracker_new(16);
	struct unread_sock s = { .cookie = 7, .read = 1000, .unread = 500 };
	int read = -1;

	ck_assert_ptr_nonnull(t);
	ck_assert_double_eq(unread_note(t, &s, 1000, 1, &read), 0);
	ck_assert_int_eq(read, 0);
	unread_end_tick(t, 1);
	s.unread = 900; /* more came; none read */
	ck_assert_double_eq_tol(unread_note(t, &s, 2000, 2, &read), 1.0, 1e-9);
	ck_assert_int_eq(read, 0);
	unread_end_tick(t, 2);
	ck_assert_double_eq_tol(unread_note(t, &s, 3500, 3, &read), 2.5, 1e-9);
	unread_end_tick(t, 3);
	unread_tracker_free(t);
}
END_TEST

/* A reader that reads, however little, and a reader that caught up, stand
 * no more; a tick missed (the connection closed and came back, say)
 * starts over. */
START_TEST(test_a_read_ends_it)
{
	struct unread_tracker *t = unread_tracker_new(16);
	struct unread_sock s = { .cookie = 7, .read = 1000, .unread = 500 };
	int read;

	unread_note(t, &s, 1000, 1, &read);
	ck_assert_double_gt(unread_note(t, &s, 2000, 2, &read), 0);
	s.read += 1;
	ck_assert_double_eq(unread_note(t, &s, 3000, 3, &read), 0);
	ck_assert_int_eq(read, 1);
	ck_assert_double_gt(unread_note(t, &s, 4000, 4, &read), 0);
	ck_assert_int_eq(read, 0);
	/* tick 5 did not see it: forgotten */
	unread_end_tick(t, 5);
	ck_assert_double_eq(unread_note(t, &s, 6000, 6, &read), 0);
	/* noted at 6, not at 7: not known to stand through 7, nor to be read */
	s.read += 10;
	ck_assert_double_eq(unread_note(t, &s, 8000, 8, &read), 0);
	ck_assert_int_eq(read, 0);
	/* read up: nothing stands, and it was read */
	s.read += 500;
	s.unread = 0;
	ck_assert_double_eq(unread_note(t, &s, 9000, 9, &read), 0);
	ck_assert_int_eq(read, 1);
	ck_assert_double_eq(unread_note(t, &s, 10000, 10, &read), 0);
	ck_assert_int_eq(read, 0);
	unread_tracker_free(t);
}
END_TEST

/* Connections are apart; past the bound one is not tracked, not wrong. */
START_TEST(test_connections_apart_and_bounded)
{
	struct unread_tracker *t = unread_tracker_new(1);
	struct unread_sock a = { .cookie = 1, .read = 10, .unread = 5 },
			   b = { .cookie = 2, .read = 10, .unread = 5 };
	int read;

	unread_note(t, &a, 1000, 1, &read);
	ck_assert_double_eq(unread_note(t, &b, 1000, 1, &read), 0);
	ck_assert_double_eq_tol(unread_note(t, &a, 2000, 2, &read), 1.0, 1e-9);
	b.read++;
	ck_assert_double_eq(unread_note(t, &b, 2000, 2, &read), 0);
	ck_assert_int_eq(read, 0);
	unread_end_tick(t, 2);
	unread_tracker_free(t);
	unread_tracker_free(NULL);
}
END_TEST

/* The awaited connection: of those quiet since before the data stood, the
 * one that went quiet last; none went quiet later than it, and none while
 * nothing stands. */
START_TEST(test_awaited_went_quiet_last_before)
{
	const double quiet[] = { 0.2, 3600, 2.4, 2.1, 1.9 };
	double best = 0;

	for (size_t i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++)
		best = unread_awaited(best, quiet[i], 2.0);
	ck_assert_double_eq(best, 2.1);
	ck_assert_double_eq(unread_awaited(0, 5.0, 0), 0);
	ck_assert_double_eq(unread_awaited(0, 1.0, 2.0), 0);
	ck_assert_double_eq(unread_awaited(0, 2.0, 2.0), 2.0);
}
END_TEST

Suite *unread_suite(void)
{
	const struct testutil_case cases[] = {
		{ "stands_from_the_tick_before", test_stands_from_the_tick_before, 0 },
		{ "a_read_ends_it", test_a_read_ends_it, 0 },
		{ "connections_apart_and_bounded", test_connections_apart_and_bounded, 0 },
		{ "awaited_went_quiet_last_before", test_awaited_went_quiet_last_before, 0 },
	};

	return TESTUTIL_SUITE("unread", cases);
}
