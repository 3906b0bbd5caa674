/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <string.h>

#include "agent/config.h"
#include "agent/detect/detect.h"
#include "agent/detect/roce.h"
#include "agent/registry/registry.h"
#include "suites.h"
#include "testutil.h"

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

/*
 * One 1 s tick of RoCEv2 counters as the tc probe writes them, both ways, for
 * the peers in the string (each its last octet: "1234" is 198.18.0.1 to .4);
 * packets towards the peer in hot are CE-marked, one in five. Returns the
 * names detect_run() gave incasts, as that kind of string.
 */
static const char *roce_tick(struct registry *reg, struct detect *det, int t, const char *peers,
			     char hot)
{
	static const struct metric_desc packets = { "fabmon_roce_packets_total", "t",
						    METRIC_COUNTER, 0, 0 },
					ce = { "fabmon_roce_ecn_ce_packets_total", "t",
					       METRIC_COUNTER, 0, 0 };
	static char named[16];
	struct event_verdict out[16];
	size_t n, k = 0;

	registry_begin_tick(reg, 1800000000000LL + t * 1000LL);
	for (const char *p = peers; *p; p++) {
		char addr[16];
		struct label l[] = { { "interface", "eth0" },
				     { "direction", "tx" },
				     { "peer", addr },
				     { "source", "bpf" },
				     { "class", "write" } };

		snprintf(addr, sizeof(addr), "198.18.0.%c", *p);
		for (int d = 0; d < 2; d++) {
			l[1].value = d ? "tx" : "rx";
			(void)sample_counter(registry_sink(reg, "t"), &packets, l, 5, t * 1000ULL);
			(void)sample_counter(registry_sink(reg, "t"), &ce, l, 4,
					     *p == hot ? t * 200ULL : 0);
		}
	}
	n = detect_run(det, reg, out, sizeof(out) / sizeof(out[0]));
	for (size_t i = 0; i < n; i++)
		if (out[i].kind == EVENT_INCAST && k + 1 < sizeof(named))
			named[k++] = out[i].subject[strlen(out[i].subject) - 1];
	named[k] = '\0';
	registry_end_tick(reg);
	return named;
}

/*
 * detect_run() keeps its RoCE peers from tick to tick (to find each in a
 * compare or two): one that goes is dropped, one that comes is added, and
 * the hot receiver is named, whichever rows moved.
 */
START_TEST(test_run_peers_change)
{
	struct registry *reg = registry_new(256, 60000);
	struct detect *det = NULL;
	struct config cfg;

	ck_assert_ptr_nonnull(reg);
	config_defaults(&cfg);
	ck_assert_int_eq(detect_new(&cfg, &det), 0);
	ck_assert_str_eq(roce_tick(reg, det, 1, "1234", '4'), ""); /* no rates yet */
	ck_assert_str_eq(roce_tick(reg, det, 2, "1234", '4'), "4");
	/* 1 goes, 5 comes and is the hot one: the rows after 1 move down */
	ck_assert_str_eq(roce_tick(reg, det, 3, "2345", '5'), "");
	ck_assert_str_eq(roce_tick(reg, det, 4, "2345", '5'), "5");
	ck_assert_str_eq(roce_tick(reg, det, 5, "5432", '2'), "2");
	/* too few others left to compare with */
	ck_assert_str_eq(roce_tick(reg, det, 6, "25", '2'), "");
	detect_free(det);
	registry_free(reg);
}
END_TEST

/*
 * Two detector sets in one process keep apart: each names its own hot
 * receiver from its own registry, ticks interleaved, as the daemon's and a
 * replay's would (no state shared through statics).
 */
START_TEST(test_run_two_objects)
{
	struct registry *reg[2] = { registry_new(256, 60000), registry_new(256, 60000) };
	struct detect *det[2] = { NULL, NULL };
	static const char *const peers[2] = { "1234", "5678" };
	static const char hot[2] = { '4', '6' };
	struct config cfg;

	config_defaults(&cfg);
	for (int i = 0; i < 2; i++) {
		ck_assert_ptr_nonnull(reg[i]);
		ck_assert_int_eq(detect_new(&cfg, &det[i]), 0);
	}
	for (int t = 1; t <= 4; t++)
		for (int i = 0; i < 2; i++) {
			char want[2] = { t > 1 ? hot[i] : '\0', '\0' };

			ck_assert_str_eq(roce_tick(reg[i], det[i], t, peers[i], hot[i]), want);
		}
	for (int i = 0; i < 2; i++) {
		detect_free(det[i]);
		registry_free(reg[i]);
	}
}
END_TEST

/* A loopback peer (a local scrape of the agent) is no fabric's: detect_run()
 * judges a stalled one not at all, and the same stall to a fabric peer. */
START_TEST(test_run_loopback_ignored)
{
	static const struct metric_desc stall = { "fabmon_tcp_ack_stall_seconds", "t", METRIC_GAUGE,
						  0, 0 },
					flight = { "fabmon_tcp_in_flight_bytes", "t", METRIC_GAUGE,
						   0, 0 };
	static const char *const peers[] = { "127.0.0.1", "::1", "::ffff:127.0.0.9", "198.18.0.2" };
	struct registry *reg = registry_new(64, 60000);
	struct event_verdict out[8];
	struct detect *det = NULL;
	struct config cfg;
	size_t n;

	config_defaults(&cfg);
	ck_assert_int_eq(detect_new(&cfg, &det), 0);
	registry_begin_tick(reg, 1800000000000LL);
	for (size_t i = 0; i < sizeof(peers) / sizeof(peers[0]); i++) {
		struct label l[] = { { "peer", peers[i] } };

		(void)sample_gauge(registry_sink(reg, "t"), &stall, l, 1, 5.0);
		(void)sample_gauge(registry_sink(reg, "t"), &flight, l, 1, 65536);
	}
	n = detect_run(det, reg, out, sizeof(out) / sizeof(out[0]));
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(out[0].kind, EVENT_STALL);
	ck_assert_str_eq(out[0].subject, "peer=198.18.0.2");
	registry_end_tick(reg);
	detect_free(det);
	registry_free(reg);
}
END_TEST

Suite *detect_roce_suite(void)
{
	const struct testutil_case cases[] = {
		{ "table", test_table, 0 },
		{ "run_peers_change", test_run_peers_change, 0 },
		{ "run_two_objects", test_run_two_objects, 0 },
		{ "run_loopback_ignored", test_run_loopback_ignored, 0 },
	};

	return TESTUTIL_SUITE("detect_roce", cases);
}
