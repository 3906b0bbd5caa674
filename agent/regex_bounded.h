/* SPDX-License-Identifier: MIT */
#ifndef FABMON_REGEX_BOUNDED_H
#define FABMON_REGEX_BOUNDED_H

#include <regex.h>

/*
 * The most atoms a configured regex may stand for once its bounded
 * repetitions are written out. glibc's regcomp() copies a repeated group
 * once per count, so nested counts multiply: "((a{255}){255}){255}" is 16.6
 * million copies and took 3.4 GB to compile here (a fuzzed config found
 * it). An interface or stat-name pattern needs tens; 10000 costs about 2 MB.
 */
#define REGEX_MAX_ATOMS 10000

/*
 * An upper estimate of the atoms re expands to: each literal, bracket
 * expression or escape is one, a group is one more than what it holds (an
 * empty group is a node too: "((){255}){255}" overflowed regcomp's stack
 * in a fuzz run), a repetition {m}, {m,} or {m,n} multiplies what it
 * follows by its largest count (plus one for {m,}), "+" by two, and each
 * operator (| * ? + or an interval) is one more. Stops counting past
 * REGEX_MAX_ATOMS and returns more than it. Malformed text is counted as
 * far as it goes; regcomp() judges its form.
 */
unsigned long regex_atoms(const char *re);

/*
 * regcomp(rx, re, REG_EXTENDED | REG_NOSUB), anchored as "^(re)$" when
 * anchored is set (a whole-name match: "eth0" must not select "eth01").
 * Returns 0, -E2BIG for a regex over REGEX_MAX_ATOMS (not compiled),
 * -EINVAL for one regcomp() refuses, or -ENOMEM. On 0 the caller owns rx
 * and regfree()s it.
 */
int regex_compile_bounded(regex_t *rx, const char *re, int anchored);

#endif
