/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "agent/detect/lossy.h"
#include "suites.h"
#include "testutil.h"

/* At the defaults: 10 errors per million packets over 2 s, under 80 % full. */
static const struct lossy_bounds bounds = { 10e-6, 0.8, 2000 };

/* A zeroed history on the heap (it is large). */
static struct lossy_history *history(void)
{
	struct lossy_history *h = calloc(1, sizeof(*h));

	ck_assert_ptr_nonnull(h);
	return h;
}

/* Feeds ticks 100 ms apart from *now_ms: the readings of in, with errors
 * only on every every-th tick (1: each). Returns the verdicts' count at
 * the last tick into out. */
static size_t feed(struct lossy_history *h, int64_t *now_ms, struct lossy_input in, unsigned ticks,
		   unsigned every, struct event_verdict *out, size_t max)
{
	double errors = in.errors;

	for (unsigned t = 0; t < ticks; t++) {
		*now_ms += 100;
		in.errors = t % every == every - 1 ? errors : 0;
		lossy_history_update(h, &in, 1, bounds.window_ms, *now_ms);
	}
	return detect_lossy(h, &bounds, *now_ms, out, max);
}

struct lossy_case {
	const char *why;
	struct lossy_input in; /* each tick's, errors on every every-th */
	unsigned every;
	double want_score; /* 0: no verdict */
};

START_TEST(test_verdicts)
{
	static const struct lossy_case cases[] = {
		{ "a bad optic: FCS errors on 1e-4 of a quiet link's packets",
		  { "interface=eth0", 10, 1e5, 0.3 },
		  1,
		  10 },
		{ "errors on every fifth tick: as many over the window",
		  { "interface=eth0", 50, 1e5, 0.3 },
		  5,
		  10 },
		{ "at the bound", { "interface=eth0", 1, 1e5, 0.3 }, 1, 1 },
		{ "a healthy link's odd bit error", { "interface=eth0", 0.5, 1e6, 0.3 }, 1, 0 },
		{ "no errors", { "interface=eth0", 0, 1e6, 0.3 }, 1, 0 },
		{ "loss on a full link is the queue's (a hotspot's)",
		  { "device=mlx5_0,port=1", 500, 1e6, 0.85 },
		  1,
		  0 },
		{ "RDMA sequence errors on a lightly used port",
		  { "device=mlx5_0,port=1", 30, 1e6, 0.1 },
		  1,
		  3 },
		{ "capacity unknown: judged on its errors",
		  { "device=mlx5_0,port=1", 30, 1e6, -1 },
		  1,
		  3 },
		{ "errors and no packets: a link that carries nothing whole",
		  { "interface=eth1", 4, 0, 0 },
		  1,
		  1e5 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct lossy_case *c = &cases[i];
		struct lossy_history *h = history();
		struct event_verdict out[2];
		int64_t now = 0;
		size_t n = feed(h, &now, c->in, 30, c->every, out, 2);

		free(h);
		if (c->want_score == 0) {
			ck_assert_msg(n == 0, "%s: got a verdict, %s", c->why, out[0].evidence);
			continue;
		}
		ck_assert_msg(n == 1, "%s: no verdict", c->why);
		ck_assert_int_eq(out[0].kind, EVENT_LOSSY_LINK);
		ck_assert_int_eq(event_kind_cause(out[0].kind), EVENT_CAUSE_NETWORK);
		ck_assert_int_eq(out[0].weight, VERDICT_AT_ONCE);
		ck_assert_str_eq(out[0].subject, c->in.subject);
		ck_assert_msg(out[0].score > c->want_score * 0.999 &&
				      out[0].score < c->want_score * 1.001,
			      "%s: score %.4f, want %.4f", c->why, out[0].score, c->want_score);
	}
}
END_TEST

/*
 * One burst (a link retraining) is no lossy link, however many errors; a
 * second erring tick within the window makes one. Once the errors stop,
 * the verdicts stop when the window holds fewer than two erring ticks; a
 * tick near capacity within the window holds them off.
 */
START_TEST(test_persistence)
{
	struct lossy_history *h = history();
	struct lossy_input in = { "interface=eth0", 0, 1e5, 0.3 };
	struct event_verdict out[2];
	int64_t now = 0;

	ck_assert_uint_eq(feed(h, &now, in, 10, 1, out, 2), 0);
	in.errors = 5000;
	ck_assert_uint_eq(feed(h, &now, in, 1, 1, out, 2), 0);
	in.errors = 0;
	ck_assert_uint_eq(feed(h, &now, in, 5, 1, out, 2), 0);
	in.errors = 10;
	ck_assert_uint_eq(feed(h, &now, in, 1, 1, out, 2), 1);
	in.errors = 0;
	ck_assert_uint_eq(feed(h, &now, in, 13, 1, out, 2), 1);
	ck_assert_uint_eq(feed(h, &now, in, 1, 1, out, 2), 0);
	in.errors = 10;
	in.util = 0.9;
	ck_assert_uint_eq(feed(h, &now, in, 1, 1, out, 2), 0);
	in.util = 0.3;
	ck_assert_uint_eq(feed(h, &now, in, 5, 1, out, 2), 0);
	free(h);
}
END_TEST

/* Evidence is a JSON object of the window's readings; max bounds the verdicts. */
START_TEST(test_evidence)
{
	struct lossy_history *h = history();
	const struct lossy_input in[] = {
		{ "interface=eth0", 10, 1e5, 0.3 },
		{ "device=mlx5_0,port=1", 30, 1e6, 0.1 },
	};
	struct event_verdict out[2];

	for (int64_t now = 100; now <= 2000; now += 100)
		lossy_history_update(h, in, 2, bounds.window_ms, now);
	ck_assert_uint_eq(detect_lossy(h, &bounds, 2000, out, 2), 2);
	ck_assert_str_eq(out[0].evidence,
			 "{\"errors\":19,\"packets\":190000,\"error_share\":0.0001,"
			 "\"erring_ticks\":19,\"utilisation_max\":0.300}");
	ck_assert_uint_eq(detect_lossy(h, &bounds, 2000, out, 1), 1);
	free(h);
}
END_TEST

Suite *detect_lossy_suite(void)
{
	const struct testutil_case cases[] = {
		{ "verdicts", test_verdicts, 0 },
		{ "persistence", test_persistence, 0 },
		{ "evidence", test_evidence, 0 },
	};

	return TESTUTIL_SUITE("detect_lossy", cases);
}
