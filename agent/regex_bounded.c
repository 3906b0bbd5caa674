/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "regex_bounded.h"

/* Deeper nesting than this is counted as over the bound. */
#define REGEX_MAX_DEPTH 64

/* The end of the bracket expression that starts at p ('['): a ']' first
 * (or after '^') is a member, and "[:alpha:]"-style classes hold their own
 * ']' (POSIX.1-2017 XBD 9.3.5). NULL when it does not close. */
static const char *bracket_end(const char *p)
{
	p++;
	if (*p == '^')
		p++;
	if (*p == ']')
		p++;
	for (; *p && *p != ']'; p++) {
		if (*p == '[' && (p[1] == ':' || p[1] == '.' || p[1] == '=')) {
			const char *close = strchr(p + 2, p[1]);

			while (close && close[1] != ']')
				close = strchr(close + 1, p[1]);
			if (!close)
				return NULL;
			p = close + 1;
		}
	}
	return *p ? p : NULL;
}

/* The largest count of the interval at p ('{'), with *end after its '}';
 * 0 when p does not start an interval ("a{" alone is refused by regcomp). */
static unsigned long interval_count(const char *p, const char **end)
{
	char *q;
	unsigned long lo, hi;

	/* digits only: strtoul() would take a sign or spaces too */
	if (!isdigit((unsigned char)p[1]))
		return 0;
	lo = hi = strtoul(p + 1, &q, 10);
	if (*q == ',') {
		char *r = q + 1;

		if (isdigit((unsigned char)*r))
			hi = strtoul(r, &r, 10);
		else
			hi = lo + 1; /* {m,}: m copies then a star */
		q = r;
	}
	if (*q != '}')
		return 0;
	*end = q + 1;
	return hi > lo ? hi : lo;
}

unsigned long regex_atoms(const char *re)
{
	/* per open group: its atoms so far; last is what a repetition applies
	 * to (one atom, or a group's whole size just after its ')') */
	unsigned long sum[REGEX_MAX_DEPTH + 1] = { 0 }, last = 0;
	const unsigned long over = REGEX_MAX_ATOMS + 1;
	int depth = 0;

	for (const char *p = re; *p;) {
		const char *end = p + 1;
		unsigned long count = 0;
		int op = 0; /* an operator, a node of its own */

		if (*p == '(') {
			if (depth == REGEX_MAX_DEPTH)
				return over;
			sum[++depth] = 0;
			last = 0;
		} else if (*p == ')' && depth > 0) {
			/* the group's own node: an empty one is one too */
			last = sum[depth--] + 1;
			sum[depth] += last;
		} else if (*p == '|') {
			op = 1;
			last = 0;
		} else if (*p == '+') {
			count = 2; /* glibc writes "a+" as "aa*" */
		} else if (*p == '{') {
			count = interval_count(p, &end);
		} else if (*p == '*' || *p == '?') {
			count = 1;
		}
		if (*p == '[') {
			end = bracket_end(p);
			if (!end)
				break; /* regcomp refuses it */
			end++;
		} else if (*p == '\\' && p[1]) {
			end = p + 2;
		}
		if (!count && !strchr("()|", *p)) {
			/* a literal, bracket expression, escape or a '{' that
			 * starts no interval: one atom */
			sum[depth]++;
			last = 1;
		} else if (count > 0) {
			/* the atom is counted once already: count - 1 more */
			if (last > over / count)
				return over;
			sum[depth] += last * (count - 1);
			last *= count;
			op = 1;
		}
		if (op) {
			sum[depth]++;
			last += *p != '|';
		}
		if (sum[depth] > REGEX_MAX_ATOMS)
			return over;
		p = end;
	}
	/* an unclosed group counts what it holds */
	for (; depth > 0; depth--)
		sum[depth - 1] += sum[depth];
	return sum[0] > REGEX_MAX_ATOMS ? over : sum[0];
}

int regex_compile_bounded(regex_t *rx, const char *re, int anchored)
{
	size_t len = strlen(re);
	char *text;
	int r;

	if (regex_atoms(re) > REGEX_MAX_ATOMS)
		return -E2BIG;
	text = malloc(len + 5);
	if (!text)
		return -ENOMEM;
	if (anchored) {
		memcpy(text, "^(", 2);
		memcpy(text + 2, re, len);
		memcpy(text + 2 + len, ")$", 3);
	} else {
		memcpy(text, re, len + 1);
	}
	r = regcomp(rx, text, REG_EXTENDED | REG_NOSUB);
	free(text);
	if (r == REG_ESPACE)
		return -ENOMEM;
	return r ? -EINVAL : 0;
}
