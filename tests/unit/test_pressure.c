/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <errno.h>
#include <stdint.h>

#include "collector/pressure.h"
#include "suites.h"
#include "testutil.h"

/* As Documentation/accounting/psi.rst shows the files, both lines. */
START_TEST(test_both_lines)
{
	uint64_t some = 0, full = 0;

	ck_assert_int_eq(pressure_parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
					"full avg10=0.00 avg60=0.00 avg300=0.00 total=0",
					&some, &full),
			 PRESSURE_SOME | PRESSURE_FULL);
	ck_assert_int_eq(
		pressure_parse("some avg10=90.40 avg60=71.57 avg300=48.37 total=5209436757\n"
			       "full avg10=1.00 avg60=0.50 avg300=0.10 total=18446744073709551615",
			       &some, &full),
		PRESSURE_SOME | PRESSURE_FULL);
	ck_assert_uint_eq(some, 5209436757ULL);
	ck_assert_uint_eq(full, UINT64_MAX);
}
END_TEST

/* cpu before Linux 5.13 has no "full" line; a line added later is passed over */
START_TEST(test_some_only_and_unknown_line)
{
	uint64_t some = 0, full = 7;

	ck_assert_int_eq(
		pressure_parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=42", &some, &full),
		PRESSURE_SOME);
	ck_assert_uint_eq(some, 42);
	ck_assert_uint_eq(full, 7);
	ck_assert_int_eq(pressure_parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=1\n"
					"peak avg10=0.00 total=9\n",
					&some, &full),
			 PRESSURE_SOME);
	ck_assert_uint_eq(some, 1);
}
END_TEST

START_TEST(test_malformed)
{
	static const char *const bad[] = {
		"",
		"nothing here",
		"some avg10=0.00 avg60=0.00 avg300=0.00",
		"some avg10=0.00 avg60=0.00 avg300=0.00 total=",
		"some avg10=0.00 avg60=0.00 avg300=0.00 total=-1",
		"some avg10=0.00 avg60=0.00 avg300=0.00 total=12x",
		"some avg10=0.00 avg60=0.00 avg300=0.00 total=99999999999999999999",
		"some avg10=0.00\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=3",
	};
	uint64_t some, full;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(pressure_parse(bad[i], &some, &full) == -EINVAL, "accepted: '%s'",
			      bad[i]);
}
END_TEST

Suite *pressure_suite(void)
{
	const struct testutil_case cases[] = {
		{ "both_lines", test_both_lines, 0 },
		{ "some_only_and_unknown_line", test_some_only_and_unknown_line, 0 },
		{ "malformed", test_malformed, 0 },
	};

	return TESTUTIL_SUITE("pressure", cases);
}
