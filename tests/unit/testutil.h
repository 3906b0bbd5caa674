/* SPDX-License-Identifier: MIT */
#ifndef FABMON_TESTUTIL_H
#define FABMON_TESTUTIL_H

#include <check.h>
#include <stdint.h>

#include "../../agent/registry.h"
#include "../../collector/collector.h"

/*
 * Helpers shared by the unit tests. Tests run with the repository root as the
 * working directory (tests/run.sh and `make unit-test` see to it).
 */

/* ../shared/fixtures, or $SHARED_FIXTURES. */
const char *testutil_shared_fixtures(void);

/* True when running as root (tests that need it skip loudly otherwise). */
int testutil_is_root(void);

/* Prints "SKIP: name: why" to stderr; the test then returns. */
void testutil_skip(const char *name, const char *why);

/* One tick of one collector: begin_tick(now_ms), ops->sample(state), end_tick.
 * Returns what sample returned. */
int testutil_tick(struct registry *reg, const struct collector_ops *ops, void *state,
		  const struct collector_env *env, int64_t now_ms);

/* The registry's /metrics text for the current tick (caller frees). */
char *testutil_render(struct registry *reg);

/*
 * Compares text with tests/fixtures/golden/name and fails the test with the
 * first differing line. With UPDATE_GOLDEN=1 in the environment it rewrites
 * the file instead.
 */
void testutil_check_golden(const char *text, const char *name);

/* Finds the line of text that starts with prefix (a series, up to the space)
 * and returns its value; fails the test if it is absent. */
double testutil_value(const char *text, const char *series);

/* Returns 1 if some line of text starts with prefix. */
int testutil_has(const char *text, const char *prefix);

/* Copies directory tree src to a fresh temp dir; returns its path (static
 * buffer until the next call); fails the test on error. */
const char *testutil_copy_tree(const char *src);

/* Writes text to root/rel, creating parent directories. */
void testutil_write(const char *root, const char *rel, const char *text);

/* A suite of one tcase per test (one behaviour each), for the *_suite()s. */
struct testutil_case {
	const char *name;
	const TTest *fn;
	int timeout_s; /* 0: Check's default */
};
Suite *testutil_suite(const char *name, const struct testutil_case *cases, size_t n);
#define TESTUTIL_SUITE(name, cases) testutil_suite(name, cases, sizeof(cases) / sizeof(cases[0]))

#endif
