/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "agent/detect/hotspot.h"
#include "suites.h"
#include "testutil.h"

/* 10 Gb/s and a 100 Mbit/s tbf, in bytes per second */
#define LINK 1.25e9
#define SHAPED 1.25e7

struct hotspot_case {
	const char *why;
	struct hotspot_input in;
	double want_score; /* 0: no verdict */
};

/* Runs one row at the default bound (80 %) and checks the verdict, if any. */
static void hotspot_check(const struct hotspot_case *c)
{
	struct event_verdict out[2];
	size_t n = detect_hotspot(&c->in, 1, 0.8, out, 2);

	if (c->want_score == 0) {
		ck_assert_msg(n == 0 || out[0].weight == VERDICT_HOLD,
			      "%s: got a verdict, score %.3f, %s", c->why, out[0].score,
			      out[0].evidence);
		return;
	}
	ck_assert_msg(n == 1 && out[0].weight == VERDICT_OVER, "%s: no verdict", c->why);
	ck_assert(out[0].kind == EVENT_HOTSPOT);
	ck_assert_str_eq(out[0].subject, c->in.subject);
	ck_assert_msg(out[0].score > c->want_score - 1e-9 && out[0].score < c->want_score + 1e-9,
		      "%s: score %.6f, want %.6f", c->why, out[0].score, c->want_score);
}

/* Load and congestion together make a hotspot; either alone, or a link of
 * unknown capacity, does not. */
START_TEST(test_verdicts)
{
	const struct hotspot_case cases[] = {
		{ "near capacity, no congestion",
		  { .subject = "interface=eth0", .tx_bytes_rate = 0.95 * LINK, .link_bytes = LINK },
		  0 },
		{ "congestion, no load",
		  { .subject = "interface=eth0",
		    .tx_bytes_rate = 0.1 * LINK,
		    .link_bytes = LINK,
		    .qdisc_drops_rate = 100,
		    .overlimits_rate = 1000,
		    .backlog_bytes = 1e6 },
		  0 },
		{ "near capacity and dropping",
		  { .subject = "interface=eth0",
		    .tx_bytes_rate = 0.96 * LINK,
		    .link_bytes = LINK,
		    .qdisc_drops_rate = 5 },
		  0.96 / 0.8 },
		{ "rx near capacity, pause received",
		  { .subject = "interface=eth1",
		    .rx_bytes_rate = 0.9 * LINK,
		    .link_bytes = LINK,
		    .rx_pause_rate = 20 },
		  0.9 / 0.8 },
		{ "unknown capacity",
		  { .subject = "interface=eth0",
		    .tx_bytes_rate = 5e9,
		    .qdisc_drops_rate = 100,
		    .overlimits_rate = 100 },
		  0 },
		{ "at the shaper's rate, held back",
		  { .subject = "interface=up1",
		    .tx_bytes_rate = SHAPED,
		    .link_bytes = LINK,
		    .shaped_bytes = SHAPED,
		    .overlimits_rate = 400 },
		  1.0 / 0.8 },
		{ "shaper known, link speed not",
		  { .subject = "interface=up1",
		    .tx_bytes_rate = 0.9 * SHAPED,
		    .shaped_bytes = SHAPED,
		    .overlimits_rate = 400 },
		  0.9 / 0.8 },
		/* a shaper holds back what leaves, not what arrives */
		{ "rx over the shaper's rate, far under the link's",
		  { .subject = "interface=up1",
		    .rx_bytes_rate = 10 * SHAPED,
		    .link_bytes = LINK,
		    .shaped_bytes = SHAPED,
		    .if_drops_rate = 3 },
		  0 },
		{ "just under the bound",
		  { .subject = "interface=eth0",
		    .tx_bytes_rate = 0.79 * LINK,
		    .link_bytes = LINK,
		    .qdisc_drops_rate = 5 },
		  0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		hotspot_check(&cases[i]);
}
END_TEST

/* Each congestion signal alone is enough on a full link; a short standing
 * queue (under a millisecond of the link) and a shrinking one are not. */
START_TEST(test_each_signal)
{
#define FULL .subject = "interface=up1", .tx_bytes_rate = SHAPED, .shaped_bytes = SHAPED
	const struct hotspot_case cases[] = {
		{ "qdisc drops", { FULL, .qdisc_drops_rate = 1 }, 1.25 },
		{ "overlimits", { FULL, .overlimits_rate = 1 }, 1.25 },
		{ "interface drops", { FULL, .if_drops_rate = 1 }, 1.25 },
		{ "pause received", { FULL, .rx_pause_rate = 1 }, 1.25 },
		{ "ECN CE", { FULL, .ecn_ce_rate = 1 }, 1.25 },
		{ "backlog growing",
		  { FULL, .backlog_bytes = 3000, .backlog_growth = 30000 },
		  1.25 },
		/* 1 ms of 12.5 MB/s is 12500 bytes */
		{ "standing backlog", { FULL, .backlog_bytes = 12500 }, 1.25 },
		{ "short standing backlog", { FULL, .backlog_bytes = 12000 }, 0 },
		{ "backlog draining",
		  { FULL, .backlog_bytes = 3000, .backlog_growth = -30000 },
		  0 },
	};
#undef FULL

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		hotspot_check(&cases[i]);
}
END_TEST

/* The evidence is one JSON object with the load and the signals present,
 * still whole when every reading is huge; out is bounded by max. */
START_TEST(test_evidence)
{
	struct hotspot_input in[2] = {
		{ .subject = "interface=up1",
		  .tx_bytes_rate = 12345678,
		  .rx_bytes_rate = 42,
		  .shaped_bytes = SHAPED,
		  .overlimits_rate = 250,
		  .backlog_bytes = 60000 },
		{ .subject = "interface=eth9",
		  .tx_bytes_rate = 1e15,
		  .rx_bytes_rate = 1e15,
		  .link_bytes = 1e15,
		  .backlog_bytes = 1e15,
		  .backlog_growth = 1e15,
		  .qdisc_drops_rate = 1e15,
		  .overlimits_rate = 1e15,
		  .if_drops_rate = 1e15,
		  .rx_pause_rate = 1e15,
		  .ecn_ce_rate = 1e15 },
	};
	struct event_verdict out[2];
	size_t len;

	ck_assert_uint_eq(detect_hotspot(in, 2, 0.8, out, 2), 2);
	ck_assert_str_eq(out[0].evidence,
			 "{\"utilisation\":0.988,\"tx_bytes_per_second\":12345678,"
			 "\"rx_bytes_per_second\":42,\"tx_capacity_bytes_per_second\":12500000,"
			 "\"backlog_bytes\":60000,\"overlimits_per_second\":250}");
	len = strlen(out[1].evidence);
	ck_assert_uint_lt(len, sizeof(out[1].evidence));
	ck_assert_int_eq(out[1].evidence[0], '{');
	ck_assert_int_eq(out[1].evidence[len - 1], '}');
	ck_assert_ptr_null(strstr(out[1].evidence, ",}"));
	ck_assert_uint_eq(detect_hotspot(in, 2, 0.8, out, 1), 1);
	/* a stricter bound: the same link is no longer over, but it holds an
	 * open hotspot (over half the bound, congested); at half that, not */
	ck_assert_uint_eq(detect_hotspot(in, 1, 1.0, out, 2), 1);
	ck_assert_int_eq(out[0].weight, VERDICT_HOLD);
	ck_assert_uint_eq(detect_hotspot(in, 1, 2.0, out, 2), 0);
}
END_TEST

Suite *detect_hotspot_suite(void)
{
	const struct testutil_case cases[] = {
		{ "verdicts", test_verdicts, 0 },
		{ "each_signal", test_each_signal, 0 },
		{ "evidence", test_evidence, 0 },
	};

	return TESTUTIL_SUITE("detect_hotspot", cases);
}
