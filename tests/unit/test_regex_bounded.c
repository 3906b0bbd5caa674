/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <regex.h>
#include <string.h>

#include "suites.h"
#include "testutil.h"

#include "agent/config.h"
#include "agent/lib/regex_bounded.h"

static unsigned long atoms(const char *re)
{
	struct regex_shape shape;

	regex_measure(re, &shape);
	ck_assert_msg(!shape.empty_repeat, "%s", re);
	return shape.atoms;
}

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
		{ "a{,3}", 4 }, /* glibc's {0,3} */
		{ "a{,}", 2 }, /* and its "*" */
		{ "((a{2}b){3}c){2}", 37 },
		{ "[]a]{3}", 4 },
		{ "[^]a]x", 2 },
		{ "[[:alpha:]_]{4}", 5 },
		{ "\\{{3}", 4 },
		{ "a{", 2 }, /* no interval: a literal '{' */
		{ "a{ 9}", 5 }, /* nor with a space: a, {, space, 9, } */
		{ "(ab", 2 }, /* unclosed: regcomp refuses it */
		{ "(a{30}){30}", 961 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(atoms(cases[i].re) == cases[i].atoms, "%s: %lu, not %lu", cases[i].re,
			      atoms(cases[i].re), cases[i].atoms);
}
END_TEST

/* Nested counts multiply: the fuzzed configs' kinds are refused before
 * regcomp() (which took 3.4 GB on the first, 1.4 GB on "{,255}"),
 * whatever the nesting or counts. */
START_TEST(test_nested_refused)
{
	const char *big[] = {
		"((a{255}){255}){255}",
		"((a){1,255}){1,40}",
		"(a{100}){101}",
		"((((a{10}){10}){10}){10}){2}",
		"a{99999999999999999999}",
		"(x{32767}|y){32767}",
		"((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((a)))"
		"))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))",
	};
	struct regex_shape shape;
	regex_t rx;

	for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
		regex_measure(big[i], &shape);
		ck_assert_msg(shape.atoms > REGEX_MAX_ATOMS, "%s", big[i]);
		ck_assert_int_eq(regex_compile_bounded(&rx, big[i], 1), -E2BIG);
	}
}
END_TEST

/* re is refused before regcomp(), anchored or not, with want: -ELOOP for
 * an empty repetition, -EINVAL for a malformed regex. */
static void assert_refused(const char *re, int want)
{
	struct regex_shape shape;
	regex_t rx;

	regex_measure(re, &shape);
	ck_assert_msg(want == -ELOOP ? shape.empty_repeat : shape.malformed, "%s", re);
	ck_assert_msg(regex_compile_bounded(&rx, re, 1) == want, "%s", re);
	ck_assert_msg(regex_compile_bounded(&rx, re, 0) == want, "%s", re);
}

/* A repetition of what can match nothing is refused, however small: glibc
 * compiles it in time exponential in how many there are. The forms that
 * match something are kept. */
START_TEST(test_empty_repeat_refused)
{
	const char *empty[] = {
		"x**",
		"x+*",
		"x{2}{3}",
		"(x?)*",
		"(x*)+",
		"(x*){2}",
		"(x?){3}",
		"(a|)+",
		"(|a)*",
		"(a|b*)?",
		"(x*y*)*",
		"(){255}",
		"((){255}){25}", /* 626 MB, the CI fuzz run's */
		"((){,255}){,25}",
		"((a){,255}){,40}",
		"a(b|(c?))*d",
		"^*",
		"(\\b)*",
		"x\\<+",
		"(a)\\1*",
		" *%*****************************2*****", /* 14 s, a fuzz run's */
	};
	const char *kept[] = {
		"(x+y?)*", "(a|bc*)+", "((ab)?c)*", "x*y*z?", "(eth|ib)[0-9]+", "(x{0,2}y)+",
	};
	struct regex_shape shape;
	regex_t rx;

	for (size_t i = 0; i < sizeof(empty) / sizeof(empty[0]); i++)
		assert_refused(empty[i], -ELOOP);
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		regex_measure(kept[i], &shape);
		ck_assert_msg(!shape.empty_repeat, "%s", kept[i]);
		ck_assert_int_eq(regex_compile_bounded(&rx, kept[i], 1), 0);
		regfree(&rx);
	}
}
END_TEST

/* A ')' with no '(' would close the anchor's group, and what follows a
 * bracket expression that does not close is not measured: both refused,
 * before regcomp(). */
START_TEST(test_malformed_refused)
{
	/* the second took 2 GB in a fuzz run */
	const char *bad[] = {
		"eth0)|(.*", "  ht|||||rfaterfaces 5}){255}", ")", "[[:alpha:]x((){255}){25}",
		"[[.a]x",
	};
	struct regex_shape shape;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_refused(bad[i], -EBADMSG);
	regex_measure("[]a)]|(b)", &shape);
	ck_assert(!shape.malformed);
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

/* The config says why it refuses a regex: too big, an empty repetition, a stray ")" or an open "[". */
START_TEST(test_config_says_why)
{
	struct config cfg;
	char err[512];

	config_defaults(&cfg);
	ck_assert_int_eq(config_set(&cfg, "interfaces", "((a{255}){255}){255}", err, sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, "expand to more than 1000 atoms"), "%s", err);
	ck_assert_str_eq(cfg.interfaces, "");
	ck_assert_int_eq(config_set(&cfg, "interfaces", "(a{30}){30}", err, sizeof(err)), 0);
	ck_assert_int_eq(config_set(&cfg, "interfaces", "eth([0-9]?)+", err, sizeof(err)), -EINVAL);
	ck_assert_msg(
		strstr(err,
		       "repeats what can match nothing, as x** or (x?)* do, which regcomp takes exponential time over: write x*)"),
		"%s", err);
	ck_assert_int_eq(config_set(&cfg, "interfaces", "eth0)|(.*", err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "(it has a ')' that closes no '(' or a '[' with no ']')"), "%s",
		      err);
	ck_assert_int_eq(config_set(&cfg, "interfaces", "eth[0-9", err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "a '[' with no ']'"), "%s", err);
	ck_assert_str_eq(cfg.interfaces, "(a{30}){30}");
}
END_TEST

Suite *regex_bounded_suite(void)
{
	const struct testutil_case cases[] = {
		{ "atoms_counted", test_atoms_counted, 0 },
		{ "nested_refused", test_nested_refused, 0 },
		{ "empty_repeat_refused", test_empty_repeat_refused, 0 },
		{ "malformed_refused", test_malformed_refused, 0 },
		{ "compile_anchored", test_compile_anchored, 0 },
		{ "config_says_why", test_config_says_why, 0 },
	};

	return TESTUTIL_SUITE("regex_bounded", cases);
}
