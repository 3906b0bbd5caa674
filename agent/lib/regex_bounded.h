/* SPDX-License-Identifier: MIT */
#ifndef FABMON_REGEX_BOUNDED_H
#define FABMON_REGEX_BOUNDED_H

#include <regex.h>

/*
 * The most atoms a configured regex may stand for once its bounded
 * repetitions are written out. glibc's regcomp() copies a repeated group
 * once per count, so nested counts multiply: "((a{255}){255}){255}" is 16.6
 * million copies and took 3.4 GB to compile here (a fuzzed config found
 * it). Nodes that match nothing (empty groups, "?", "|") cost it memory
 * that grows with the square of their count, as each one's epsilon closure
 * holds the rest: "((){255}){25}", 6426 atoms, took 626 MB and 1.6 s, past
 * 2 GB under AddressSanitizer. An interface or stat-name pattern needs
 * tens; at 1000, with empty repetitions refused (below), the worst form
 * found, "()" 499 times, takes 9 MB and 25 ms.
 */
#define REGEX_MAX_ATOMS 1000

/* What regex_measure() finds. */
struct regex_shape {
	unsigned long atoms; /* more than REGEX_MAX_ATOMS once past it */
	/* A repetition applies to what can match the empty string: "x**",
	 * "(x?)*", "(a|)+", "(){2}", "(x*y*)*". glibc's regcomp() takes time
	 * exponential in how many there are ("x**" 50 times ran past 30 s
	 * here; a fuzzed config found it) and each has a form without:
	 * x* for (x?)*, (x|y)* for (x*y*)*, x{0,2} for (x?){2}. POSIX leaves
	 * adjacent repetitions undefined (XBD 9.4.6); this refuses them too. */
	int empty_repeat;
	/* A ')' that closes no '(' (POSIX reads it as itself, but anchored
	 * as "^(re)$" it would close the anchor's group: in a fuzz run a
	 * stray "){255}" repeated the whole pattern 255 times, 2 GB, and
	 * "eth0)|(.*" would select every name), or a bracket expression that
	 * does not close: what follows it is not measured. */
	int malformed;
};

/*
 * Measures re without compiling it. atoms is an upper estimate of what re
 * expands to: each literal, bracket expression or escape is one, a group
 * is one more than what it holds, a repetition {m}, {,n}, {m,} or {m,n}
 * multiplies what it follows by its largest count (plus one for {m,}),
 * "+" by two, and each operator (| * ? + or an interval) is one more.
 * Stops at the first empty repetition, malformed part or once past
 * REGEX_MAX_ATOMS. Other errors of form are left to regcomp().
 */
void regex_measure(const char *re, struct regex_shape *shape);

/*
 * regcomp(rx, re, REG_EXTENDED | REG_NOSUB), anchored as "^(re)$" when
 * anchored is set (a whole-name match: "eth0" must not select "eth01").
 * Returns 0; without compiling, -EBADMSG for a malformed regex (a stray
 * ')' or an unclosed '['), -ELOOP for an empty repetition or -E2BIG for a
 * regex over REGEX_MAX_ATOMS; -EINVAL for one regcomp() refuses, or
 * -ENOMEM. On 0 the caller owns rx and
 * regfree()s it.
 */
int regex_compile_bounded(regex_t *rx, const char *re, int anchored);

#endif
