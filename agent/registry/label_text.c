/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "agent/registry/label_text.h"

/* Where the escaped value at v ends: the first quote after an even run of
 * backslashes, or NULL. */
static const char *value_end(const char *v)
{
	for (const char *e = v; (e = strchr(e, '"')) != NULL; e++) {
		const char *b = e;

		while (b > v && b[-1] == '\\')
			b--;
		if ((e - b) % 2 == 0)
			return e;
	}
	return NULL;
}

/*
 * Label by label, each key compared in place and the rest of its label
 * skipped with strchr(): the detect step looks up a label or three of
 * every RoCEv2 series each tick, and library calls that stop early read
 * less than a split of the whole text does (callgrind over
 * tests/bench/detectcost.c -r: 266 M instructions a run against 340 M).
 */
int label_value(const char *text, const char *key, char *buf, size_t len)
{
	size_t kl = strlen(key);
	const char *p = text, *end = NULL;
	int r = -ENOENT;

	while (*p) {
		int match = strncmp(p, key, kl) == 0 && p[kl] == '=';
		const char *eq = match ? p + kl : strchr(p, '=');

		if (!eq || eq == p || eq[1] != '"' || !(end = value_end(eq + 2)) ||
		    (end[1] != ',' && end[1] != '\0')) {
			r = -EINVAL;
			break;
		}
		if (match) {
			p = eq + 2;
			r = (size_t)(end - p) < len ? 0 : -ENAMETOOLONG;
			break;
		}
		p = end[1] ? end + 2 : end + 1;
	}
	if (len)
		buf[0] = '\0';
	if (r == 0) {
		memcpy(buf, p, (size_t)(end - p));
		buf[end - p] = '\0';
	}
	return r;
}
