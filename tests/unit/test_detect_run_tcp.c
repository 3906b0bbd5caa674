/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "agent/config.h"
#include "agent/detect/detect.h"
#include "agent/registry/registry.h"
#include "collector/metric_names.h"
#include "suites.h"

/* detect_run() over the TCP series as the bpf collector writes them. */

#define RUN_PEERS 4

/*
 * One 1 s tick t of an all-to-all from this host to .2-.5 (fan-out 3): each
 * peer completes a 1 MB transfer a tick at 10 MB/s, but .5 from tick slow_t
 * on, whose transfer stays under way at 0.5 MB/s (a port throttled under a
 * backlog completes none). Returns the incast verdicts' subjects' last
 * octets, as a string.
 */
static const char *all_to_all_tick(struct registry *reg, struct detect *det, int t, int slow_t)
{
	static const struct metric_desc
		d_rate = { M_TCP_DELIVERY_RATE_BYTES_PER_SECOND, "t", METRIC_GAUGE, 0, 0 },
		d_fanout = { M_TCP_SENDER_FANOUT_PEERS, "t", METRIC_GAUGE, 0, 0 },
		d_count = { M_TCP_TRANSFER_DURATION_SECONDS_COUNT, "t", METRIC_COUNTER, 0, 0 },
		d_sum = { M_TCP_TRANSFER_DURATION_SECONDS_SUM, "t", METRIC_COUNTER, 0, 1e-6 },
		d_bytes = { M_TCP_TRANSFER_BYTES_TOTAL, "t", METRIC_COUNTER, 0, 0 },
		d_open_s = { M_TCP_TRANSFER_OPEN_SECONDS, "t", METRIC_GAUGE, 0, 0 },
		d_open_b = { M_TCP_TRANSFER_OPEN_BYTES, "t", METRIC_GAUGE, 0, 0 };
	static char named[RUN_PEERS + 1];
	struct sample_sink *sink;
	struct event_verdict out[16];
	size_t n, k = 0;

	registry_begin_tick(reg, 1800000000000LL + t * 1000LL);
	sink = registry_sink(reg, "t");
	for (int i = 0; i < RUN_PEERS; i++) {
		char addr[16];
		struct label l[] = { { "peer", addr } };
		int slow = i == RUN_PEERS - 1 && t >= slow_t;
		/* transfers completed by this tick: .5's stop at slow_t */
		uint64_t done = (uint64_t)(i == RUN_PEERS - 1 && t > slow_t ? slow_t : t);

		snprintf(addr, sizeof(addr), "198.18.0.%d", i + 2);
		(void)sample_gauge(sink, &d_rate, l, 1, slow ? 0.5e6 : 10e6);
		(void)sample_gauge(sink, &d_fanout, l, 1, 3);
		(void)sample_counter(sink, &d_count, l, 1, done);
		(void)sample_counter(sink, &d_sum, l, 1, done * 100000); /* 0.1 s each */
		(void)sample_counter(sink, &d_bytes, l, 1, done * 1000000);
		(void)sample_gauge(sink, &d_open_s, l, 1, slow ? t - slow_t + 0.5 : 0);
		(void)sample_gauge(sink, &d_open_b, l, 1, slow ? (t - slow_t + 0.5) * 0.5e6 : 0);
	}
	n = detect_run(det, reg, out, sizeof(out) / sizeof(out[0]));
	for (size_t j = 0; j < n; j++)
		if (out[j].kind == EVENT_INCAST && k < RUN_PEERS)
			named[k++] = out[j].subject[strlen(out[j].subject) - 1];
	named[k] = '\0';
	registry_end_tick(reg);
	return named;
}

/*
 * The throttled receiver of an all-to-all completes no transfer while its
 * backlog lasts: its transfer under way, a second old and more, gives its
 * goodput, and with its delivery rate it is named an incast (three ticks
 * and incast_for under the bound). Its completed transfers alone, all from
 * before, would read it as fast as the others.
 */
START_TEST(test_run_incast_transfer_under_way)
{
	struct registry *reg = registry_new(256, 60000);
	struct detect *det = NULL;
	struct config cfg;
	int t, named_t = 0;

	ck_assert_ptr_nonnull(reg);
	config_defaults(&cfg);
	ck_assert_int_eq(detect_new(&cfg, &det), 0);
	for (t = 1; t <= 20 && !named_t; t++) {
		const char *named = all_to_all_tick(reg, det, t, 10);

		ck_assert_msg(t >= 10 || !*named, "tick %d: named %s before the fault", t, named);
		if (*named) {
			ck_assert_str_eq(named, "5");
			named_t = t;
		}
	}
	/* its first goodput sample at 1.5 s open (tick 11), the median of its
	 * newest three under from tick 12, and three ticks of that */
	ck_assert_int_eq(named_t, 14);
	detect_free(det);
	registry_free(reg);
}
END_TEST

Suite *detect_run_tcp_suite(void)
{
	Suite *s = suite_create("detect_run_tcp");
	TCase *tc = tcase_create("incast");

	tcase_add_test(tc, test_run_incast_transfer_under_way);
	suite_add_tcase(s, tc);
	return s;
}
