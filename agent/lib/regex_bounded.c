/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/lib/regex_bounded.h"

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

/* The largest count of the interval at p ('{'), with *end after its '}'
 * and its least in *least; 0 when p does not start an interval ("a{"
 * alone is refused by regcomp). glibc also takes "{,n}" as {0,n} (a fuzzed
 * config's "((){,255}){,25}" took 1.4 GB while counted as 13 atoms). */
static unsigned long interval_count(const char *p, const char **end, unsigned long *least)
{
	char *q = (char *)p + 1;
	unsigned long lo = 0, hi;

	/* digits only: strtoul() would take a sign or spaces too */
	if (isdigit((unsigned char)*q))
		lo = strtoul(q, &q, 10);
	else if (*q != ',')
		return 0;
	hi = lo;
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
	*least = lo;
	return hi > lo ? hi : lo;
}

/* Per open group, as the scan goes: its atoms so far, whether the branch
 * it is in matched only the empty string before its last piece, and
 * whether an earlier branch of it can match the empty string. */
struct group_scan {
	unsigned long sum;
	int before_empty;
	int branch_empty;
};

void regex_measure(const char *re, struct regex_shape *shape)
{
	struct group_scan g[REGEX_MAX_DEPTH + 1] = { { 0, 1, 0 } };
	const unsigned long over = REGEX_MAX_ATOMS + 1;
	/* the last piece, what a repetition applies to: its atoms (one, or a
	 * group's whole size just after its ')'), whether there is one in
	 * this branch, whether it can match the empty string and whether it
	 * is a repetition already */
	unsigned long last = 0;
	int has_last = 0, last_empty = 0, last_repeat = 0;
	int depth = 0;

	shape->atoms = 0;
	shape->empty_repeat = 0;
	shape->malformed = 0;
	for (const char *p = re; *p;) {
		const char *end = p + 1;
		unsigned long count = 0, least = 1;
		int op = 0; /* an operator, a node of its own */

		if (*p == '+') {
			count = 2; /* glibc writes "a+" as "aa*" */
		} else if (*p == '{') {
			count = interval_count(p, &end, &least);
		} else if (*p == '*' || *p == '?') {
			count = 1;
			least = 0;
		}
		if (count > 0 && has_last && (last_empty || last_repeat)) {
			shape->empty_repeat = 1;
			return;
		}
		if (!count && has_last) /* a new piece, '|' or ')': fold the last in */
			g[depth].before_empty = g[depth].before_empty && last_empty;
		if (*p == '(') {
			if (depth == REGEX_MAX_DEPTH) {
				shape->atoms = over;
				return;
			}
			g[++depth] = (struct group_scan){ 0, 1, 0 };
			last = 0;
			has_last = 0;
		} else if (*p == ')' && depth == 0) {
			shape->malformed = 1;
			return;
		} else if (*p == ')') {
			/* the group's own node: an empty one is one too */
			last = g[depth].sum + 1;
			last_empty = g[depth].before_empty || g[depth].branch_empty;
			depth--;
			g[depth].sum += last;
			has_last = 1;
			last_repeat = 0;
		} else if (*p == '|') {
			op = 1;
			last = 0;
			g[depth].branch_empty |= g[depth].before_empty;
			g[depth].before_empty = 1;
			has_last = 0;
		} else if (!count) {
			/* a literal, bracket expression, escape, anchor or a '{'
			 * that starts no interval: one atom */
			if (*p == '[') {
				end = bracket_end(p);
				if (!end) {
					shape->malformed = 1;
					return;
				}
				end++;
			} else if (*p == '\\' && p[1]) {
				end = p + 2;
			}
			g[depth].sum++;
			last = 1;
			has_last = 1;
			/* anchors match nothing, GNU's too (\b \B \< \> \` \'):
			 * "(\b)*" 50 times ran past 20 s; so may a back-reference */
			last_empty = *p == '^' || *p == '$' ||
				     (*p == '\\' && p[1] && strchr("bB<>`'123456789", p[1]));
			last_repeat = 0;
		} else {
			/* the atom is counted once already: count - 1 more */
			if (last > over / count) {
				shape->atoms = over;
				return;
			}
			g[depth].sum += last * (count - 1);
			last *= count;
			op = 1;
			last_empty = least == 0; /* "*", "?", {0,n}, {,n} */
			last_repeat = 1;
		}
		if (op) {
			g[depth].sum++;
			last += *p != '|';
		}
		if (g[depth].sum > REGEX_MAX_ATOMS) {
			shape->atoms = over;
			return;
		}
		p = end;
	}
	/* an unclosed group counts what it holds */
	for (; depth > 0; depth--)
		g[depth - 1].sum += g[depth].sum;
	shape->atoms = g[0].sum > REGEX_MAX_ATOMS ? over : g[0].sum;
}

int regex_compile_bounded(regex_t *rx, const char *re, int anchored)
{
	size_t len = strlen(re);
	struct regex_shape shape;
	char *text;
	int r;

	regex_measure(re, &shape);
	if (shape.malformed)
		return -EBADMSG;
	if (shape.empty_repeat)
		return -ELOOP;
	if (shape.atoms > REGEX_MAX_ATOMS)
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
