/* SPDX-License-Identifier: MIT */
#ifndef FABMON_NAME_FIND_H
#define FABMON_NAME_FIND_H

#include <stddef.h>
#include <string.h>

/*
 * The index of name among the n records of size stride at base, each of
 * which starts with its NUL-terminated name (a char array first member);
 * n when it is not there. *hint, the index after the last one found, is
 * tried first, then the last one found itself: the detectors are fed their
 * peers in the same order every tick (the registry's, by labels), one
 * series a peer or several in a row, so a lookup is one or two compares,
 * not n (at 1000 peers the scan cost more CPU than all the detectors'
 * judging).
 */
static inline size_t name_find(const void *base, size_t n, size_t stride, const char *name,
			       size_t *hint)
{
	const char *p = base;
	size_t i;

	if (*hint < n && strcmp(p + *hint * stride, name) == 0)
		i = *hint;
	else if (*hint > 0 && *hint <= n && strcmp(p + (*hint - 1) * stride, name) == 0)
		i = *hint - 1;
	else
		for (i = 0; i < n && strcmp(p + i * stride, name) != 0; i++)
			;
	*hint = i + 1;
	return i;
}

#endif
