/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/registry/registry.h"
#include "suites.h"
#include "testutil.h"

static const struct metric_desc c64 = { .name = "t_bytes_total",
					.help = "h",
					.type = METRIC_COUNTER };
static const struct metric_desc c32 = {
	.name = "t_wait_total", .help = "h", .type = METRIC_COUNTER, .bits = 32
};
static const struct metric_desc words = {
	.name = "t_data_bytes_total", .help = "h", .type = METRIC_COUNTER, .scale = 4
};
static const struct metric_desc g = { .name = "t_level", .help = "h", .type = METRIC_GAUGE };

/* The labels feed() gives every reading. */
#define ETH0 "interface=\"eth0\""

static void feed(struct registry *reg, const struct metric_desc *d, int64_t ms, uint64_t raw)
{
	struct label l = { "interface", "eth0" };

	registry_begin_tick(reg, ms);
	ck_assert_int_eq(sample_counter(registry_sink(reg, "t"), d, &l, 1, raw), 0);
	registry_end_tick(reg);
}

START_TEST(test_rate)
{
	struct registry *reg = registry_new(100, 60000);
	struct series s;

	feed(reg, &c64, 1000, 100);
	s = testutil_series(reg, "t_bytes_total", ETH0);
	ck_assert_int_eq(s.has_rate, 0);
	ck_assert_double_eq(s.value, 100);
	feed(reg, &c64, 3000, 700);
	s = testutil_series(reg, "t_bytes_total", ETH0);
	ck_assert_int_eq(s.has_rate, 1);
	ck_assert_double_eq_tol(s.rate, 300, 1e-9);
	ck_assert_double_eq(s.value, 700);
	registry_free(reg);
}
END_TEST

START_TEST(test_wrap32)
{
	struct registry *reg = registry_new(100, 60000);
	struct series s;

	feed(reg, &c32, 1000, 4294967000u);
	feed(reg, &c32, 2000, 100);
	s = testutil_series(reg, "t_wait_total", ETH0);
	/* 2^32 - 4294967000 + 100 = 396 */
	ck_assert_double_eq_tol(s.rate, 396, 1e-9);
	ck_assert_double_eq(s.value, 4294967000.0 + 396);
	registry_free(reg);
}
END_TEST

START_TEST(test_reset)
{
	struct registry *reg = registry_new(100, 60000);
	struct series s;

	feed(reg, &c64, 1000, 1000000);
	feed(reg, &c64, 2000, 50);
	s = testutil_series(reg, "t_bytes_total", ETH0);
	ck_assert(s.rate >= 0);
	ck_assert_double_eq_tol(s.rate, 50, 1e-9);
	ck_assert_double_eq(s.value, 1000050);
	/* a 32-bit counter that falls far (not a plausible wrap) is a reset too */
	feed(reg, &c32, 1000, 1000000000u);
	feed(reg, &c32, 2000, 10);
	ck_assert_double_eq_tol(testutil_series(reg, "t_wait_total", ETH0).rate, 10, 1e-9);
	registry_free(reg);
}
END_TEST

START_TEST(test_scale)
{
	struct registry *reg = registry_new(100, 60000);

	feed(reg, &words, 1000, 10);
	feed(reg, &words, 2000, 20);
	ck_assert_double_eq(testutil_series(reg, "t_data_bytes_total", ETH0).value, 80);
	ck_assert_double_eq_tol(testutil_series(reg, "t_data_bytes_total", ETH0).rate, 40, 1e-9);
	registry_free(reg);
}
END_TEST

START_TEST(test_bound)
{
	struct registry *reg = registry_new(16, 60000);
	struct sample_sink *out;
	char name[16];
	int r = 0;

	registry_begin_tick(reg, 1000);
	out = registry_sink(reg, "t");
	for (int i = 0; i < 20; i++) {
		struct label l = { "interface", name };

		snprintf(name, sizeof(name), "if%d", i);
		r = sample_gauge(out, &g, &l, 1, i);
		if (i < 16)
			ck_assert_int_eq(r, 0);
	}
	ck_assert_int_eq(r, -ENOSPC);
	ck_assert_uint_eq(registry_count(reg), 16);
	ck_assert_uint_eq(registry_dropped(reg), 4);
	registry_free(reg);
}
END_TEST

START_TEST(test_expiry)
{
	struct registry *reg = registry_new(100, 5000);
	struct label a = { "interface", "a" }, b = { "interface", "b" };
	char *text;

	registry_begin_tick(reg, 1000);
	(void)sample_gauge(registry_sink(reg, "t"), &g, &a, 1, 1);
	(void)sample_gauge(registry_sink(reg, "t"), &g, &b, 1, 2);
	registry_end_tick(reg);
	ck_assert_uint_eq(registry_count(reg), 2);
	registry_begin_tick(reg, 2000);
	(void)sample_gauge(registry_sink(reg, "t"), &g, &a, 1, 1);
	registry_end_tick(reg);
	/* b vanished: not rendered at once, forgotten after the expiry */
	text = testutil_render(reg);
	ck_assert(!strstr(text, "interface=\"b\""));
	free(text);
	ck_assert_uint_eq(registry_count(reg), 2);
	registry_begin_tick(reg, 7000);
	(void)sample_gauge(registry_sink(reg, "t"), &g, &a, 1, 1);
	registry_end_tick(reg);
	ck_assert_uint_eq(registry_count(reg), 1);
	registry_free(reg);
}
END_TEST

START_TEST(test_type_clash)
{
	struct registry *reg = registry_new(100, 5000);
	struct metric_desc other = g;

	other.name = "t_bytes_total";
	registry_begin_tick(reg, 1000);
	ck_assert_int_eq(sample_counter(registry_sink(reg, "t"), &c64, NULL, 0, 1), 0);
	ck_assert_int_eq(
		sample_gauge(registry_sink(reg, "t"), &other, &(struct label){ "x", "y" }, 1, 1),
		-EINVAL);
	sample_skip(registry_sink(reg, "t"));
	ck_assert_uint_eq(registry_skipped(reg, "t"), 1);
	registry_free(reg);
}
END_TEST

/* A histogram sampled whole: bounds and readings for feed_hist(). */
static const char *const hist_le[] = { "0.5", "2", "16", "+Inf" };
static const struct histogram_bounds hist_b = { 3, hist_le };
static const struct metric_desc hist = {
	.name = "t_h_seconds", .help = "H", .type = METRIC_HISTOGRAM, .scale = 1e-3
};

static void feed_hist(struct registry *reg, const char *peer, uint64_t k)
{
	const uint64_t buckets[] = { k, 3 * k, 4 * k, 4 * k };
	struct label l = { "peer", peer };

	ck_assert_int_eq(sample_histogram(registry_sink(reg, "t"), &hist, &l, 1, &hist_b, buckets,
					  2500 * k, 4 * k),
			 0);
}

/* One entry shows as the series a histogram's buckets, _count and _sum
 * sampled one at a time would: the same text, the same counters. */
START_TEST(test_histogram)
{
	struct registry *reg = registry_new(100, 60000);
	struct series s;
	char *text;

	registry_begin_tick(reg, 1000);
	feed_hist(reg, "q", 1);
	feed_hist(reg, "p", 1);
	registry_end_tick(reg);
	ck_assert_uint_eq(registry_count(reg), 12);
	registry_begin_tick(reg, 2000);
	feed_hist(reg, "q", 2);
	feed_hist(reg, "p", 3);
	registry_end_tick(reg);
	text = testutil_render(reg);
	ck_assert_str_eq(text, "# HELP t_h_seconds H\n"
			       "# TYPE t_h_seconds histogram\n"
			       "t_h_seconds_bucket{peer=\"p\",le=\"0.5\"} 3\n"
			       "t_h_seconds_bucket{peer=\"p\",le=\"2\"} 9\n"
			       "t_h_seconds_bucket{peer=\"p\",le=\"16\"} 12\n"
			       "t_h_seconds_bucket{peer=\"p\",le=\"+Inf\"} 12\n"
			       "t_h_seconds_bucket{peer=\"q\",le=\"0.5\"} 2\n"
			       "t_h_seconds_bucket{peer=\"q\",le=\"2\"} 6\n"
			       "t_h_seconds_bucket{peer=\"q\",le=\"16\"} 8\n"
			       "t_h_seconds_bucket{peer=\"q\",le=\"+Inf\"} 8\n"
			       "t_h_seconds_count{peer=\"p\"} 12\n"
			       "t_h_seconds_count{peer=\"q\"} 8\n"
			       "t_h_seconds_sum{peer=\"p\"} 7.5\n"
			       "t_h_seconds_sum{peer=\"q\"} 5\n");
	free(text);
	s = testutil_series(reg, "t_h_seconds_sum", "peer=\"p\"");
	ck_assert(s.has_rate);
	ck_assert_double_eq_tol(s.rate, 5.0, 1e-9); /* (7500 - 2500) ms a second */
	s = testutil_series(reg, "t_h_seconds_bucket", "peer=\"q\",le=\"2\"");
	ck_assert_double_eq_tol(s.rate, 3.0, 1e-9);
	registry_free(reg);
}
END_TEST

static int set_store_id(struct series *s, void *arg)
{
	(void)arg;
	if (!s->store_id)
		s->store_id = (int64_t)strlen(s->labels) + (s->name[strlen(s->name) - 1] == 'm');
	return 0;
}

static int check_store_id(struct series *s, void *arg)
{
	(void)arg;
	ck_assert_int_eq(s->store_id,
			 (int64_t)strlen(s->labels) + (s->name[strlen(s->name) - 1] == 'm'));
	return 0;
}

/* The store's ids of a histogram's series stay with them, each its own,
 * until the store forgets them all. */
START_TEST(test_histogram_store_ids)
{
	struct registry *reg = registry_new(100, 60000);
	struct series s;

	registry_begin_tick(reg, 1000);
	feed_hist(reg, "p", 1);
	ck_assert_int_eq(registry_foreach(reg, set_store_id, NULL), 0);
	ck_assert_int_eq(registry_foreach(reg, check_store_id, NULL), 0);
	registry_forget_store_ids(reg);
	s = testutil_series(reg, "t_h_seconds_count", "peer=\"p\"");
	ck_assert_int_eq(s.store_id, 0);
	registry_free(reg);
}
END_TEST

/* A histogram is its n + 3 series against the bound, all or none; the
 * same name and labels as a plain series' are refused. */
START_TEST(test_histogram_bound)
{
	struct registry *reg = registry_new(6, 60000);
	const uint64_t buckets[] = { 0, 0, 0, 0 };
	const struct metric_desc plain = { .name = "t_h_seconds_bucket",
					   .help = "H",
					   .type = METRIC_HISTOGRAM };
	struct label l = { "peer", "p" };

	registry_begin_tick(reg, 1000);
	ck_assert_int_eq(sample_counter(registry_sink(reg, "t"), &plain, &l, 1, 1), 0);
	ck_assert_int_eq(
		sample_histogram(registry_sink(reg, "t"), &hist, &l, 1, &hist_b, buckets, 0, 0),
		-EINVAL);
	l.value = "q";
	ck_assert_int_eq(
		sample_histogram(registry_sink(reg, "t"), &hist, &l, 1, &hist_b, buckets, 0, 0),
		-ENOSPC);
	ck_assert_uint_eq(registry_count(reg), 1);
	ck_assert_uint_eq(registry_dropped(reg), 6);
	registry_free(reg);
}
END_TEST

Suite *registry_suite(void)
{
	const struct testutil_case cases[] = {
		{ "rate", test_rate, 0 },
		{ "wrap32", test_wrap32, 0 },
		{ "reset", test_reset, 0 },
		{ "scale", test_scale, 0 },
		{ "bound", test_bound, 0 },
		{ "expiry", test_expiry, 0 },
		{ "type_clash", test_type_clash, 0 },
		{ "histogram", test_histogram, 0 },
		{ "histogram_store_ids", test_histogram_store_ids, 0 },
		{ "histogram_bound", test_histogram_bound, 0 },
	};

	return TESTUTIL_SUITE("registry", cases);
}
