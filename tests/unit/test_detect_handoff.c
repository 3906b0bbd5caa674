/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <string.h>

#include "agent/detect/handoff.h"
#include "suites.h"

#define WINDOW_MS 10000
#define RATIO 3.0
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

/* One tick with a transfer under way for open_s that has moved bytes so far,
 * none completing; stalled (1), held back by the receiver (2) or neither.
 * Returns the tick's time. */
static int64_t tick_open(struct handoff_history *h, int64_t now, double open_s, double bytes,
			 int stalled)
{
	/* stalled 2: not stalled, but the receive window holds it back */
	const struct handoff_input in = { .peer = "198.18.0.2",
					  .stalled = stalled == 1,
					  .open_s = open_s,
					  .open_bytes = bytes,
					  .window_limited = stalled == 2 };

	now += 100;
	handoff_history_update(h, &in, 1, RATIO, WINDOW_MS, now);
	return now;
}

/* A slow hand-off is named while it is under way: 4 MiB hand-offs took 90 ms
 * (46.6 MB/s); one that has run 150 ms and moved 1.2 MB is behind by 5.8, one
 * that moved 4 MB by 150 ms is not, and one that has run less than the
 * baseline's 90 ms is not judged (slow start); nor one on a stalled peer, nor
 * one the receiver's window holds back. */
START_TEST(test_slow_open)
{
	const struct {
		double open_s, bytes;
		int stalled;
		size_t named;
	} cases[] = {
		{ 0.15, 1.2e6, 0, 1 }, { 0.15, 4e6, 0, 0 },   { 0.05, 0.1e6, 0, 0 },
		{ 0.15, 1.2e6, 1, 0 }, { 0.15, 1.2e6, 2, 0 },
	};
	struct event_verdict out[2];

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct handoff_history *h = history();
		int64_t now = 0;

		for (int i = 0; i < 10; i++)
			now = tick(h, now, 0.09, 0);
		now = tick_open(h, now, cases[c].open_s, cases[c].bytes, cases[c].stalled);
		ck_assert_uint_eq(judge(h, now, 1, out), cases[c].named);
		if (!cases[c].named)
			continue;
		ck_assert_str_eq(out[0].subject, "peer=198.18.0.2");
		ck_assert_double_eq_tol(out[0].score, HANDOFF_BYTES / 0.09 * 0.15 / 1.2e6 / RATIO,
					1e-9);
		ck_assert_ptr_nonnull(strstr(out[0].evidence, "\"open_transfer_seconds\":0.15"));
		ck_assert_int_eq(out[0].weight, VERDICT_OVER);
		/* the next tick without it under way: no verdict */
		now = tick(h, now, 0, 0);
		ck_assert_uint_eq(judge(h, now, 1, out), 0);
	}
}
END_TEST

/* A transfer under way since before a stall on its peer is the stall's, also
 * after the stall's aftermath; one that began after it is judged. */
START_TEST(test_slow_open_after_stall)
{
	struct event_verdict out[2];

	for (int began_after = 0; began_after < 2; began_after++) {
		struct handoff_history *h = history();
		int64_t now = 0;

		for (int i = 0; i < 10; i++)
			now = tick(h, now, 0.09, 0);
		now = tick_open(h, now, 0.5, 1e5, 1);
		for (int i = 0; i < 12; i++) /* past STALL_AFTERMATH_MS */
			now = tick_open(h, now, 0.6 + 0.1 * i, 1e5, 0);
		now = tick_open(h, now, began_after ? 0.5 : 2.0, 1e5, 0);
		ck_assert_uint_eq(judge(h, now, 1, out), (size_t)began_after);
	}
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
		handoff_history_update(h, &in, 1, RATIO, WINDOW_MS, now);
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
	tcase_add_test(tc, test_slow_open);
	tcase_add_test(tc, test_slow_open_after_stall);
	tcase_add_test(tc, test_not_slow);
	tcase_add_test(tc, test_bigger_transfers);
	tcase_add_test(tc, test_stall_not_sample);
	tcase_add_test(tc, test_forgotten);
	suite_add_tcase(s, tc);
	return s;
}
