/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <string.h>

#include "../../agent/detect_handoff.h"
#include "suites.h"

#define WINDOW_MS 10000
#define RATIO 3.0

static struct handoff_history *history(void)
{
	static struct handoff_history h;

	memset(&h, 0, sizeof(h));
	return &h;
}

/* One tick 100 ms after now: one transfer of the given seconds to the peer
 * (0: none), stalled or not. Returns the tick's time. */
static int64_t tick(struct handoff_history *h, int64_t now, double seconds, int stalled)
{
	/* per second over a 100 ms tick: one transfer is 10/s */
	const struct handoff_input in = { "198.18.0.2", seconds > 0 ? 10 : 0, seconds * 10,
					  stalled };

	now += 100;
	handoff_history_update(h, &in, 1, RATIO, WINDOW_MS, now);
	return now;
}

static size_t judge(const struct handoff_history *h, int64_t now, size_t paths,
		    struct event_verdict *out)
{
	return detect_handoff(h, RATIO, paths, WINDOW_MS, now, out, 2);
}

/* Hand-offs of 90 ms, then 340 ms: the second slow one makes the median of
 * the newest three slow, and the verdict holds while they stay slow (slow
 * samples never join the baseline). */
START_TEST(test_slow)
{
	struct handoff_history *h = history();
	struct event_verdict out[2];
	int64_t now = 0;

	for (int i = 0; i < 10; i++)
		now = tick(h, now, 0.09, 0);
	ck_assert_uint_eq(judge(h, now, 1, out), 0);
	now = tick(h, now, 0.34, 0);
	ck_assert_uint_eq(judge(h, now, 1, out), 0);
	now = tick(h, now, 0.34, 0);
	ck_assert_uint_eq(judge(h, now, 1, out), 1);
	ck_assert(out[0].kind == EVENT_SLOW_HANDOFF);
	ck_assert_str_eq(out[0].subject, "peer=198.18.0.2");
	ck_assert_double_eq_tol(out[0].score, 0.34 / 0.09 / RATIO, 1e-9);
	for (int i = 0; i < 30; i++) {
		now = tick(h, now, i % 4 ? 0 : 0.34, 0); /* a slow transfer every 4 ticks */
		ck_assert_uint_eq(judge(h, now, 1, out), 1);
	}
	now = tick(h, now, 0.09, 0);
	now = tick(h, now, 0.09, 0);
	ck_assert_uint_eq(judge(h, now, 1, out), 0);
}
END_TEST

/* Twice as slow is under the default ratio of 3; too few samples make no
 * baseline; with three or more paths compared, slowness is detect_path's. */
START_TEST(test_not_slow)
{
	struct handoff_history *h = history();
	struct event_verdict out[2];
	int64_t now = 0;

	for (int i = 0; i < 5; i++)
		now = tick(h, now, 0.1, 0);
	now = tick(h, now, 1.0, 0);
	now = tick(h, now, 1.0, 0);
	ck_assert_uint_eq(h->peers[0].baseline.count, HANDOFF_BASELINE_MIN - 1);
	ck_assert_uint_eq(judge(h, now, 1, out), 0);
	h = history();
	for (int i = 0; i < 10; i++)
		now = tick(h, now, 0.1, 0);
	now = tick(h, now, 0.2, 0);
	now = tick(h, now, 0.2, 0);
	ck_assert_uint_eq(judge(h, now, 1, out), 0);
	now = tick(h, now, 0.5, 0);
	now = tick(h, now, 0.5, 0);
	ck_assert_uint_eq(judge(h, now, 1, out), 1);
	ck_assert_uint_eq(judge(h, now, 3, out), 0);
}
END_TEST

/* The transfer a stall held up completes long after it began: it is the
 * stall's, reported as one, not a slow hand-off. */
START_TEST(test_stall_not_sample)
{
	struct handoff_history *h = history();
	struct event_verdict out[2];
	int64_t now = 0;

	for (int i = 0; i < 10; i++)
		now = tick(h, now, 0.1, 0);
	for (int i = 0; i < 20; i++)
		now = tick(h, now, 0, 1);
	now = tick(h, now, 2.1, 0);
	now = tick(h, now, 2.0, 0);
	ck_assert_uint_eq(h->peers[0].seconds.count, 10);
	ck_assert_uint_eq(judge(h, now, 1, out), 0);
}
END_TEST

/* A peer idle past the window is forgotten, its baseline with it. */
START_TEST(test_forgotten)
{
	struct handoff_history *h = history();
	int64_t now = 0;

	for (int i = 0; i < 10; i++)
		now = tick(h, now, 0.1, 0);
	ck_assert_uint_eq(h->n, 1);
	now = tick(h, now + WINDOW_MS, 0, 0);
	ck_assert_uint_eq(h->n, 0);
}
END_TEST

Suite *detect_handoff_suite(void)
{
	Suite *s = suite_create("detect_handoff");
	TCase *tc = tcase_create("verdicts");

	tcase_add_test(tc, test_slow);
	tcase_add_test(tc, test_not_slow);
	tcase_add_test(tc, test_stall_not_sample);
	tcase_add_test(tc, test_forgotten);
	suite_add_tcase(s, tc);
	return s;
}
