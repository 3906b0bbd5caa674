/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "agent/lib/log.h"

static enum log_level log_max = LOG_LEVEL_INFO;

void log_set_level(enum log_level level)
{
	log_max = level;
}

static void log_vprint(enum log_level level, const char *prefix, int err, const char *fmt,
		       va_list ap)
{
	if (level > log_max)
		return;
	fprintf(stderr, "fabmon: %s", prefix);
	vfprintf(stderr, fmt, ap);
	if (err)
		fprintf(stderr, ": %s", strerror(err));
	fputc('\n', stderr);
}

void log_warn(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	log_vprint(LOG_LEVEL_WARN, "warning: ", saved, fmt, ap);
	va_end(ap);
}

void log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vprint(LOG_LEVEL_WARN, "warning: ", 0, fmt, ap);
	va_end(ap);
}

void log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vprint(LOG_LEVEL_INFO, "", 0, fmt, ap);
	va_end(ap);
}

void log_debug(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vprint(LOG_LEVEL_DEBUG, "debug: ", 0, fmt, ap);
	va_end(ap);
}

void log_error(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vprint(LOG_LEVEL_ERROR, "error: ", err < 0 ? -err : 0, fmt, ap);
	va_end(ap);
}
