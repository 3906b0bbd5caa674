/* SPDX-License-Identifier: MIT */
#ifndef FABMON_TESTUTIL_H
#define FABMON_TESTUTIL_H

#include <check.h>
#include <regex.h>
#include <stdint.h>

#include "agent/registry/registry.h"
#include "collector/collector.h"

/*
 * Helpers shared by the unit tests. Tests run with the repository root as the
 * working directory (tests/run.sh and `make unit-test` see to it).
 */

/* ../shared/fixtures, or $SHARED_FIXTURES. */
const char *testutil_shared_fixtures(void);

/* The sysfs tree read off a real host: testutil_shared_fixtures()/sysfs (static buffer). */
const char *testutil_shared_sysfs(void);

/* True when running as root (tests that need it skip loudly otherwise). */
int testutil_is_root(void);

/* Prints "SKIP: name: why" to stderr; the test then returns. */
void testutil_skip(const char *name, const char *why);

/*
 * Moves the test process to a network namespace of its own (empty but for a
 * down lo), and with with_sysfs to a mount namespace too, with a fresh sysfs
 * on /sys that shows the new network namespace. Everything goes away with the
 * forked test process. Returns 0, or -errno after testutil_skip() said why it
 * cannot (not root, CK_FORK=no, no namespaces here).
 */
int testutil_netns_enter(int with_sysfs, const char *name);

/* One tick of one collector: begin_tick(now_ms), ops->sample(state), end_tick.
 * Returns what sample returned. */
int testutil_tick(struct registry *reg, const struct collector_ops *ops, void *state,
		  const struct collector_env *env, int64_t now_ms);

/* The registry's /metrics text for the current tick (caller frees). */
char *testutil_render(struct registry *reg);

/*
 * Looks up the series name{labels} among those of the current tick; labels in
 * Prometheus text form as in struct series ("" for none). Returns 1 and copies
 * it to *ret if it is there, 0 (*ret untouched) if not.
 */
int testutil_series_find(struct registry *reg, const char *name, const char *labels,
			 struct series *ret);

/* As testutil_series_find(), but fails the test if the series is absent. */
struct series testutil_series(struct registry *reg, const char *name, const char *labels);

/*
 * One collector on a registry, as the agent runs it. env.interfaces and
 * env.ethtool_include point into the rig; a test may change env between ticks.
 */
struct testutil_rig {
	const struct collector_ops *ops;
	struct collector_env env;
	struct registry *reg;
	void *state;
	char why[COLLECTOR_WHY_MAX]; /* what init said ("" if nothing) */
	regex_t interfaces;
	regex_t ethtool_include;
};

/*
 * Inits ops over sysfs_root with a fresh registry. interfaces and
 * ethtool_include are extended regular expressions as in the config, or NULL.
 * Fails the test unless init returns 0.
 */
void testutil_rig_init(struct testutil_rig *rig, const struct collector_ops *ops,
		       const char *sysfs_root, const char *interfaces, const char *ethtool_include);

/* Ticks at now_ms, fails the test unless sample returns 0, and returns the
 * rendered /metrics text (caller frees). */
char *testutil_rig_tick(struct testutil_rig *rig, int64_t now_ms);

/* Calls ops->fini, frees the registry and the regular expressions. */
void testutil_rig_release(struct testutil_rig *rig);

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

/*
 * Removes path, a file or a whole tree, without following links; fails the
 * test if that fails or if path is not under /tmp/fabmon- (what the tests make).
 */
void testutil_remove_tree(const char *path);

/* Removes the SQLite database path and its -wal and -shm side files, if there. */
void testutil_remove_db(const char *path);

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
