/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <string.h>

#include "../../agent/detect_roce.h"
#include "suites.h"

#define PEERS 6

/*
 * Per case: each peer's data packets/s and CE-marked packets/s towards it,
 * and the peers named (a bit each). The bound is incast_percent's default,
 * 25 %: named if four times the others' median CE share, at least 1 %.
 */
START_TEST(test_table)
{
	static const struct {
		const char *what;
		double packets[PEERS], ce[PEERS];
		unsigned named;
	} cases[] = {
		{ "one receiver marked, the others not",
		  { 1000, 1000, 1000, 1000, 0, 0 },
		  { 0, 0, 100, 0, 0, 0 },
		  1u << 2 },
		{ "the whole fabric marked alike: congestion, not an incast",
		  { 1000, 1000, 1000, 1000, 0, 0 },
		  { 100, 90, 110, 100, 0, 0 },
		  0 },
		{ "two of six receivers marked",
		  { 1000, 1000, 1000, 1000, 1000, 1000 },
		  { 0, 50, 0, 0, 80, 1 },
		  1u << 1 | 1u << 4 },
		{ "a sliver of marks (0.5 %) is normal",
		  { 1000, 1000, 1000, 1000, 0, 0 },
		  { 5, 0, 0, 0, 0, 0 },
		  0 },
		{ "under 100 packets/s is not judged",
		  { 1000, 1000, 50, 1000, 0, 0 },
		  { 0, 0, 25, 0, 0, 0 },
		  0 },
		{ "a hot receiver needs two others to compare with",
		  { 1000, 1000, 0, 0, 0, 0 },
		  { 200, 0, 0, 0, 0, 0 },
		  0 },
		{ "three times the others is under the bound",
		  { 1000, 1000, 1000, 1000, 0, 0 },
		  { 30, 10, 10, 10, 0, 0 },
		  0 },
	};
	static const char *const addr[PEERS] = { "198.18.0.1", "198.18.0.2", "198.18.0.3",
						 "198.18.0.4", "198.18.0.5", "198.18.0.6" };

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct roce_input in[PEERS];
		struct event_verdict out[PEERS];
		unsigned named = 0;
		size_t n;

		for (size_t i = 0; i < PEERS; i++)
			in[i] = (struct roce_input){ addr[i], cases[c].packets[i], cases[c].ce[i] };
		n = detect_roce(in, PEERS, 0.25, out, PEERS);
		for (size_t k = 0; k < n; k++) {
			ck_assert_msg(out[k].kind == EVENT_INCAST, "%s", cases[c].what);
			ck_assert_msg(out[k].score >= 1, "%s: score %g", cases[c].what,
				      out[k].score);
			for (size_t i = 0; i < PEERS; i++)
				if (strcmp(out[k].subject + strlen("peer="), addr[i]) == 0)
					named |= 1u << i;
		}
		ck_assert_msg(named == cases[c].named, "%s: named %#x, want %#x", cases[c].what,
			      named, cases[c].named);
	}
}
END_TEST

Suite *detect_roce_suite(void)
{
	Suite *s = suite_create("detect_roce");
	TCase *tc = tcase_create("detect_roce");

	tcase_add_test(tc, test_table);
	suite_add_tcase(s, tc);
	return s;
}
