/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <regex.h>
#include <string.h>

#include "suites.h"
#include "testutil.h"

#include "../../agent/config.h"
#include "../../agent/regex_bounded.h"

/* The estimate of what glibc writes out, on the forms it counts. */
START_TEST(test_atoms_counted)
{
	const struct {
		const char *re;
		unsigned long atoms;
	} cases[] = {
		{ "", 0 },
		{ "eth0", 4 },
		{ "eth[0-9]+|ib.*", 11 }, /* e t h [] [] + | i b . * */
		{ "(ab){3}", 10 }, /* 3 copies of (ab), and the interval */
		{ "(ab){2,5}", 16 },
		{ "a{3,}", 5 },
		{ "a{2}{3}", 10 },
		{ "[]a]{3}", 4 },
		{ "[^]a]x", 2 },
		{ "[[:alpha:]_]{4}", 5 },
		{ "\\{{3}", 4 },
		{ "a{", 2 }, /* no interval: a literal '{' */
		{ "a{ 9}", 5 }, /* nor with a space: a, {, space, 9, } */
		{ "(ab", 2 }, /* unclosed: regcomp refuses it */
		{ "(a{98}){98}", 9801 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(regex_atoms(cases[i].re) == cases[i].atoms, "%s: %lu, not %lu",
			      cases[i].re, regex_atoms(cases[i].re), cases[i].atoms);
}
END_TEST

/* Nested counts multiply: the fuzzed configs' kinds are refused before
 * regcomp() (which took 3.4 GB on the first; empty groups overflowed its
 * stack), whatever the nesting or counts. */
START_TEST(test_nested_refused)
{
	const char *big[] = {
		"((a{255}){255}){255}",
		"((){255}){255}",
		"(a{100}){101}",
		"((((a{10}){10}){10}){10}){2}",
		"a{99999999999999999999}",
		"(x{32767}|y){32767}",
		"((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((a)))"
		"))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))",
	};
	regex_t rx;

	for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
		ck_assert_msg(regex_atoms(big[i]) > REGEX_MAX_ATOMS, "%s", big[i]);
		ck_assert_int_eq(regex_compile_bounded(&rx, big[i], 1), -E2BIG);
	}
}
END_TEST

/* Anchored: the whole name or nothing. */
START_TEST(test_compile_anchored)
{
	regex_t rx;

	ck_assert_int_eq(regex_compile_bounded(&rx, "eth[0-9]|mlx5_[0-9]{1,2}", 1), 0);
	ck_assert_int_eq(regexec(&rx, "eth0", 0, NULL, 0), 0);
	ck_assert_int_eq(regexec(&rx, "mlx5_12", 0, NULL, 0), 0);
	ck_assert_int_ne(regexec(&rx, "eth01", 0, NULL, 0), 0);
	ck_assert_int_ne(regexec(&rx, "xeth0", 0, NULL, 0), 0);
	regfree(&rx);
	ck_assert_int_eq(regex_compile_bounded(&rx, "rx_prio[0-9]_pause", 0), 0);
	ck_assert_int_eq(regexec(&rx, "rx_prio3_pause_duration", 0, NULL, 0), 0);
	regfree(&rx);
	ck_assert_int_eq(regex_compile_bounded(&rx, "eth(", 1), -EINVAL);
}
END_TEST

/* The config says why it refused a regex that is too big. */
START_TEST(test_config_says_why)
{
	struct config cfg;
	char err[512];

	config_defaults(&cfg);
	ck_assert_int_eq(config_set(&cfg, "interfaces", "((a{255}){255}){255}", err, sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, "expand to more than 10000 atoms"), "%s", err);
	ck_assert_str_eq(cfg.interfaces, "");
	ck_assert_int_eq(config_set(&cfg, "interfaces", "(a{98}){98}", err, sizeof(err)), 0);
}
END_TEST

Suite *regex_bounded_suite(void)
{
	const struct testutil_case cases[] = {
		{ "atoms_counted", test_atoms_counted, 0 },
		{ "nested_refused", test_nested_refused, 0 },
		{ "compile_anchored", test_compile_anchored, 0 },
		{ "config_says_why", test_config_says_why, 0 },
	};

	return TESTUTIL_SUITE("regex_bounded", cases);
}
