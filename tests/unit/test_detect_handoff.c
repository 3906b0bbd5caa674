/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <string.h>

#include "agent/detect/handoff.h"
#include "suites.h"

#define WINDOW_MS 10000
#define RATIO 3.0
static const struct handoff_bounds bounds = { .ratio = RATIO, .extra_s = 0.05 };
#define HANDOFF_BYTES 4194304.0 /* each transfer's */

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
	const struct handoff_input in = { .peer = "198.18.0.2",
					  .transfers = seconds > 0 ? 10 : 0,
					  .seconds = seconds * 10,
					  .stalled = stalled,
					  .goodput = seconds > 0 ? HANDOFF_BYTES / seconds : 0 };

	now += 100;
	handoff_history_update(h, &in, 1, &bounds, WINDOW_MS, now);
	return now;
}

/* n such ticks */
static int64_t ticks(struct handoff_history *h, int64_t now, int n, double seconds, int stalled)
{
	for (int i = 0; i < n; i++)
		now = tick(h, now, seconds, stalled);
	return now;
}

static size_t judge(const struct handoff_history *h, int64_t now, size_t paths,
		    struct event_verdict *out)
{
	return detect_handoff(h, &bounds, paths, WINDOW_MS, now, out, 2);
}

/* Hand-offs of 90 ms, then 340 ms: the second slow one makes the median of
 * the newest three slow, and the verdict holds while they stay slow (slow
 * samples never join the baseline). */
START_TEST(test_slow)
{
	struct handoff_history *h = history();
	struct event_verdict out[2];
	int64_t now = 0;

	now = ticks(h, now, 10, 0.09, 0);
	ck_assert_uint_eq(judge(h, now, 1, out), 0);
	now = tick(h, now, 0.34, 0);
	ck_assert_uint_eq(judge(h, now, 1, out), 0);
	now = tick(h, now, 0.34, 0);
	ck_assert_uint_eq(judge(h, now, 1, out), 1);
	ck_assert(out[0].kind == EVENT_SLOW_HANDOFF);
	ck_assert_str_eq(out[0].subject, "peer=198.18.0.2");
	ck_assert_double_eq_tol(out[0].score, 0.34 / 0.09 / RATIO, 1e-9);
	/* the goodput it is judged on too: 4 MiB in 0.34 s, in 0.09 s before */
	ck_assert_ptr_nonnull(strstr(out[0].evidence, "\"goodput_bytes_per_second\":12336188"));
	ck_assert_ptr_nonnull(
		strstr(out[0].evidence, "\"baseline_goodput_bytes_per_second\":46603378"));
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

	now = ticks(h, now, 5, 0.1, 0);
	now = tick(h, now, 1.0, 0);
	now = tick(h, now, 1.0, 0);
	ck_assert_uint_eq(h->peers[0].baseline.count, HANDOFF_BASELINE_MIN - 1);
	ck_assert_uint_eq(judge(h, now, 1, out), 0);
	h = history();
	now = ticks(h, now, 10, 0.1, 0);
	now = tick(h, now, 0.2, 0);
	now = tick(h, now, 0.2, 0);
	ck_assert_uint_eq(judge(h, now, 1, out), 0);
	now = tick(h, now, 0.5, 0);
	now = tick(h, now, 0.5, 0);
	ck_assert_uint_eq(judge(h, now, 1, out), 1);
	ck_assert_uint_eq(judge(h, now, 3, out), 0);
}
END_TEST

/* Bigger transfers take longer at the same goodput (a clean lab run's
 * all-gather, about 1 MiB to a peer in 24 ms, then 4 MiB hand-offs in 88
 * ms): not slow, and they become the baseline. The same size at a quarter
 * of the goodput then is. */
START_TEST(test_bigger_transfers)
{
	struct handoff_history *h = history();
	struct event_verdict out[2];
	int64_t now = 0;
	struct handoff_input in = { .peer = "198.18.0.2", .transfers = 10 };

	for (int i = 0; i < 30; i++) {
		double seconds = i < 10 ? 0.024 : i < 25 ? 0.088 : 0.352;

		in.seconds = seconds * in.transfers;
		in.goodput = (i < 10 ? 1048576.0 : HANDOFF_BYTES) / seconds;
		now += 100;
		handoff_history_update(h, &in, 1, &bounds, WINDOW_MS, now);
		ck_assert_uint_eq(judge(h, now, 1, out), i >= 26);
	}
	ck_assert_str_eq(out[0].subject, "peer=198.18.0.2");
}
END_TEST

/* The transfer a stall held up completes long after it began: it is the
 * stall's, reported as one, not a slow hand-off. */
START_TEST(test_stall_not_sample)
{
	struct handoff_history *h = history();
	struct event_verdict out[2];
	int64_t now = 0;

	now = ticks(h, now, 10, 0.1, 0);
	now = ticks(h, now, 20, 0, 1);
	now = tick(h, now, 2.1, 0);
	now = tick(h, now, 2.0, 0);
	ck_assert_uint_eq(h->peers[0].seconds.count, 10);
	ck_assert_uint_eq(judge(h, now, 1, out), 0);
}
END_TEST

/* Transfers of 5 ms made 5 and then 15 times longer: 20 ms longer is a busy
 * host's scheduling as well as the path's, under the bound; 70 ms is not. */
START_TEST(test_small_slowdown)
{
	struct handoff_history *h = history();
	struct event_verdict out[2];
	int64_t now = 0;

	now = ticks(h, now, 10, 0.005, 0);
	now = ticks(h, now, 3, 0.025, 0);
	ck_assert_uint_eq(judge(h, now, 1, out), 0);
	now = ticks(h, now, 3, 0.075, 0);
	ck_assert_uint_eq(judge(h, now, 1, out), 1);
}
END_TEST

/* A peer idle past the window is forgotten, its baseline with it. */
START_TEST(test_forgotten)
{
	struct handoff_history *h = history();
	int64_t now = 0;

	now = ticks(h, now, 10, 0.1, 0);
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
	tcase_add_test(tc, test_bigger_transfers);
	tcase_add_test(tc, test_stall_not_sample);
	tcase_add_test(tc, test_small_slowdown);
	tcase_add_test(tc, test_forgotten);
	suite_add_tcase(s, tc);
	return s;
}
