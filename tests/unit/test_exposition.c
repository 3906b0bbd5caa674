/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agent/http/exposition.h"
#include "suites.h"
#include "testutil.h"

START_TEST(test_format)
{
	const struct metric_desc c = { .name = "fabmon_x_total",
				       .help = "A \\ B\nC",
				       .type = METRIC_COUNTER };
	const struct metric_desc g = { .name = "fabmon_a", .help = "gauge", .type = METRIC_GAUGE };
	struct registry *reg = registry_new(100, 60000);
	struct label l[] = { { "interface", "e\"th\\0\n" }, { "kind", "k" } };
	struct sample_sink *out;
	char *text;

	registry_begin_tick(reg, 1000);
	out = registry_sink(reg, "t");
	(void)sample_counter(out, &c, l, 2, 12345678901234ULL);
	(void)sample_counter(out, &c, l + 1, 1, 7);
	(void)sample_gauge(out, &g, NULL, 0, 0.25);
	text = testutil_render(reg);
	ck_assert_str_eq(text,
			 "# HELP fabmon_a gauge\n"
			 "# TYPE fabmon_a gauge\n"
			 "fabmon_a 0.25\n"
			 "# HELP fabmon_x_total A \\\\ B\\nC\n"
			 "# TYPE fabmon_x_total counter\n"
			 "fabmon_x_total{interface=\"e\\\"th\\\\0\\n\",kind=\"k\"} 12345678901234\n"
			 "fabmon_x_total{kind=\"k\"} 7\n");
	free(text);
	registry_free(reg);
}
END_TEST

/* A link series of an interface with an LLDP neighbour carries it as a
 * neighbor label; other families and other interfaces do not. */
START_TEST(test_neighbor_label)
{
	const struct metric_desc tx = { .name = "fabmon_netdev_transmit_bytes_total",
					.help = "T",
					.type = METRIC_COUNTER };
	const struct metric_desc flow = { .name = "fabmon_flow_bytes_total",
					  .help = "F",
					  .type = METRIC_COUNTER };
	const struct metric_desc info = { .name = "fabmon_lldp_neighbor_info",
					  .help = "N",
					  .type = METRIC_GAUGE };
	struct label nb[] = { { "interface", "eth0" },
			      { "chassis_id", "aa:bb" },
			      { "port_id", "Ethernet12" },
			      { "system_name", "leaf-07" },
			      { "port_description", "" } };
	struct label eth0 = { "interface", "eth0" }, eth1 = { "interface", "eth1" };
	struct registry *reg = registry_new(100, 60000);
	struct sample_sink *out;
	char *text;

	registry_begin_tick(reg, 1000);
	out = registry_sink(reg, "t");
	(void)sample_gauge(out, &info, nb, 5, 1);
	(void)sample_counter(out, &tx, &eth0, 1, 10);
	(void)sample_counter(out, &tx, &eth1, 1, 20);
	(void)sample_counter(out, &flow, &eth0, 1, 30);
	text = testutil_render(reg);
	ck_assert_ptr_nonnull(strstr(
		text,
		"fabmon_netdev_transmit_bytes_total{interface=\"eth0\",neighbor=\"leaf-07/Ethernet12\"} 10\n"));
	ck_assert_ptr_nonnull(
		strstr(text, "fabmon_netdev_transmit_bytes_total{interface=\"eth1\"} 20\n"));
	ck_assert_ptr_nonnull(strstr(text, "fabmon_flow_bytes_total{interface=\"eth0\"} 30\n"));
	free(text);
	registry_free(reg);
}
END_TEST

/* A histogram's series show under one family, buckets in the order of "le"
 * as numbers (a string sort would put 16 before 2), +Inf last. */
START_TEST(test_histogram)
{
	const struct metric_desc b = { .name = "fabmon_h_seconds_bucket",
				       .help = "H",
				       .type = METRIC_HISTOGRAM };
	const struct metric_desc s = {
		.name = "fabmon_h_seconds_sum", .help = "H", .type = METRIC_HISTOGRAM, .scale = 1e-3
	};
	const struct metric_desc c = { .name = "fabmon_h_seconds_count",
				       .help = "H",
				       .type = METRIC_HISTOGRAM };
	const char *les[] = { "+Inf", "16", "2", "0.5" };
	const uint64_t counts[] = { 4, 4, 3, 1 };
	struct registry *reg = registry_new(100, 60000);
	struct label l[2] = { { "peer", "p" } };
	struct sample_sink *out;
	char *text;

	registry_begin_tick(reg, 1000);
	out = registry_sink(reg, "t");
	for (unsigned i = 0; i < 4; i++) {
		l[1] = (struct label){ "le", les[i] };
		ck_assert_int_eq(sample_counter(out, &b, l, 2, counts[i]), 0);
	}
	ck_assert_int_eq(sample_counter(out, &s, l, 1, 2500), 0);
	ck_assert_int_eq(sample_counter(out, &c, l, 1, 4), 0);
	text = testutil_render(reg);
	ck_assert_str_eq(text, "# HELP fabmon_h_seconds H\n"
			       "# TYPE fabmon_h_seconds histogram\n"
			       "fabmon_h_seconds_bucket{peer=\"p\",le=\"0.5\"} 1\n"
			       "fabmon_h_seconds_bucket{peer=\"p\",le=\"2\"} 3\n"
			       "fabmon_h_seconds_bucket{peer=\"p\",le=\"16\"} 4\n"
			       "fabmon_h_seconds_bucket{peer=\"p\",le=\"+Inf\"} 4\n"
			       "fabmon_h_seconds_count{peer=\"p\"} 4\n"
			       "fabmon_h_seconds_sum{peer=\"p\"} 2.5\n");
	free(text);
	registry_free(reg);
}
END_TEST

START_TEST(test_values)
{
	struct strbuf sb;

	strbuf_init(&sb);
	exposition_format_value(&sb, NAN);
	strbuf_addch(&sb, ' ');
	exposition_format_value(&sb, INFINITY);
	strbuf_addch(&sb, ' ');
	exposition_format_value(&sb, 1e20);
	strbuf_addch(&sb, ' ');
	exposition_format_value(&sb, -3);
	ck_assert_str_eq(sb.buf, "NaN +Inf 1e+20 -3");
	strbuf_release(&sb);
}
END_TEST

Suite *exposition_suite(void)
{
	const struct testutil_case cases[] = {
		{ "format", test_format, 0 },
		{ "histogram", test_histogram, 0 },
		{ "neighbor label", test_neighbor_label, 0 },
		{ "values", test_values, 0 },
	};

	return TESTUTIL_SUITE("exposition", cases);
}
