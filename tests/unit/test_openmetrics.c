/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <math.h>
#include <string.h>

#include "agent/cli/openmetrics.h"
#include "suites.h"

/* A counter's family drops _total; one without it cannot be a counter. */
START_TEST(test_type)
{
	struct strbuf sb;

	strbuf_init(&sb);
	openmetrics_type(&sb, "fabmon_ticks_total", 1);
	openmetrics_type(&sb, "fabmon_x_seconds_bucket", 1);
	openmetrics_type(&sb, "fabmon_ticks_total", 0);
	ck_assert_str_eq(sb.buf, "# TYPE fabmon_ticks counter\n"
				 "# TYPE fabmon_x_seconds_bucket unknown\n"
				 "# TYPE fabmon_ticks_total gauge\n");
	strbuf_release(&sb);
}
END_TEST

/* Extra labels first, a stored one of the same name wins, no empty braces. */
START_TEST(test_sample)
{
	struct strbuf sb;

	strbuf_init(&sb);
	openmetrics_sample(&sb, "m", "instance=\"n1:9478\",host=\"a\\\",b\"",
			   "host=\"h\",peer=\"p\"", 1796177400123LL, 2.5);
	openmetrics_sample(&sb, "m", "", "", 1796177400000LL, NAN);
	openmetrics_sample(&sb, "m", "job=\"f\"", "", 1796177400007LL, -INFINITY);
	ck_assert_str_eq(sb.buf,
			 "m{instance=\"n1:9478\",host=\"h\",peer=\"p\"} 2.5 1796177400.123\n"
			 "m NaN 1796177400.000\n"
			 "m{job=\"f\"} -Inf 1796177400.007\n");
	strbuf_reset(&sb);
	openmetrics_eof(&sb);
	ck_assert_str_eq(sb.buf, "# EOF\n");
	strbuf_release(&sb);
}
END_TEST

Suite *openmetrics_suite(void)
{
	Suite *s = suite_create("openmetrics");
	TCase *tc = tcase_create("openmetrics");

	tcase_add_test(tc, test_type);
	tcase_add_test(tc, test_sample);
	suite_add_tcase(s, tc);
	return s;
}
