/* SPDX-License-Identifier: MIT */
#ifndef FABMON_LABTOOL_H
#define FABMON_LABTOOL_H

/* What the lab's traffic tools (one C file and one binary each) share. */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

/* Says "TOOL: message" and where help is on stderr; returns -EINVAL, which
 * the tools turn into exit status 2. */
__attribute__((format(printf, 2, 3))) static inline int labtool_usage_error(const char *tool,
									    const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", tool);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help'.\n", tool);
	return -EINVAL;
}

#endif
