/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/lib/timefmt.h"
#include "suites.h"

/* 2026-12-02T02:10:00Z */
#define T0 1796177400000LL
/* what "now" is in the cases */
#define NOW (T0 + 3600000)

/* Every form --since and --until take, in UTC and in a zone with DST. */
START_TEST(test_parse)
{
	static const struct {
		const char *tz, *text;
		int ok;
		long long want_ms;
	} cases[] = {
		{ "UTC", "now", 1, NOW },
		{ "UTC", "now-15m", 1, NOW - 900000 },
		{ "UTC", "now+1h", 1, NOW + 3600000 },
		{ "UTC", "1h", 1, T0 },
		{ "UTC", "90m", 1, NOW - 5400000 },
		{ "UTC", "1796177400", 1, T0 },
		{ "UTC", "1796177400.25", 1, T0 + 250 },
		{ "UTC", "2026-12-02T02:10:00Z", 1, T0 },
		{ "UTC", "2026-12-02T02:10:00.5Z", 1, T0 + 500 },
		{ "UTC", "2026-12-02T03:10:00+01:00", 1, T0 },
		{ "UTC", "2026-12-01T21:10:00-05:00", 1, T0 },
		{ "UTC", "2026-12-02 02:10", 1, T0 },
		{ "UTC", "02:10", 1, T0 },
		/* local time: Paris is UTC+1 in December, UTC+2 in July */
		{ "Europe/Paris", "2026-12-02 03:10", 1, T0 },
		{ "Europe/Paris", "2026-07-02 04:10:00", 1, T0 - 153 * 86400000LL },
		{ "Europe/Paris", "2026-12-02T02:10:00Z", 1, T0 },
		{ "UTC", "", 0, 0 },
		{ "UTC", "yesterday", 0, 0 },
		{ "UTC", "now-", 0, 0 },
		{ "UTC", "now-5x", 0, 0 },
		{ "UTC", "2026-13-02T02:10:00Z", 0, 0 },
		{ "UTC", "2026-12-02T02:10:00+1", 0, 0 },
		{ "UTC", "2026-12-02T02:10:00Z junk", 0, 0 },
		{ "UTC", "1.2.3", 0, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t ms = 0;
		int r;

		setenv("TZ", cases[i].tz, 1);
		tzset();
		r = time_parse(cases[i].text, NOW, &ms);
		ck_assert_msg((r == 0) == cases[i].ok, "'%s' (%s): returned %d", cases[i].text,
			      cases[i].tz, r);
		if (cases[i].ok)
			ck_assert_msg(ms == cases[i].want_ms, "'%s' (%s): %lld, want %lld",
				      cases[i].text, cases[i].tz, (long long)ms, cases[i].want_ms);
	}
}
END_TEST

START_TEST(test_format)
{
	char buf[64];

	setenv("TZ", "Asia/Tokyo", 1);
	tzset();
	time_format(T0 + 123, 0, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2026-12-02 11:10:00.123 JST");
	time_format(T0 + 123, 1, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2026-12-02 02:10:00.123 UTC");
	time_format_rfc3339(T0 + 7, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2026-12-02T02:10:00.007Z");
}
END_TEST

Suite *timefmt_suite(void)
{
	Suite *s = suite_create("timefmt");
	TCase *tc = tcase_create("timefmt");

	tcase_add_test(tc, test_parse);
	tcase_add_test(tc, test_format);
	suite_add_tcase(s, tc);
	return s;
}
