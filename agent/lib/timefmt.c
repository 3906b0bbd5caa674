/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/lib/timefmt.h"

int duration_parse(const char *text, int64_t *ret_ms)
{
	static const struct {
		const char *suffix;
		int64_t ms;
	} units[] = { { "ms", 1 },	{ "s", 1000 },	   { "m", 60000 },
		      { "h", 3600000 }, { "d", 86400000 }, { "", 1000 } };
	double v;
	char *end;

	while (isspace((unsigned char)*text))
		text++;
	if (!isdigit((unsigned char)*text))
		return -EINVAL;
	errno = 0;
	v = strtod(text, &end);
	/* decimal only: strtod would also take "0x10" and "1e3" */
	if (errno || strspn(text, "0123456789.") != (size_t)(end - text))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(end, units[i].suffix) == 0) {
			double ms = v * (double)units[i].ms;

			if (ms > 1e15)
				return -EINVAL;
			*ret_ms = (int64_t)(ms + 0.5);
			return 0;
		}
	return -EINVAL;
}

/* "now", "now-D", "now+D", or a bare duration D meaning now - D. */
static int parse_relative(const char *text, int64_t now_ms, int64_t *ret_ms)
{
	int64_t d;

	if (strcmp(text, "now") == 0) {
		*ret_ms = now_ms;
		return 0;
	}
	if (strncmp(text, "now", 3) == 0 && (text[3] == '-' || text[3] == '+')) {
		if (duration_parse(text + 4, &d) < 0)
			return -EINVAL;
		*ret_ms = text[3] == '-' ? now_ms - d : now_ms + d;
		return 0;
	}
	/* a bare number is Unix seconds, not a duration: only with a unit */
	if (isdigit((unsigned char)text[strlen(text) - 1]) || duration_parse(text, &d) < 0)
		return -EINVAL;
	*ret_ms = now_ms - d;
	return 0;
}

/* Unix seconds, with an optional fraction. */
static int parse_unix(const char *text, int64_t *ret_ms)
{
	char *end;
	double s;

	for (const char *p = text; *p; p++)
		if (!isdigit((unsigned char)*p) && *p != '.')
			return -EINVAL;
	errno = 0;
	s = strtod(text, &end);
	/* past ~285,000 years the milliseconds leave int64_t (undefined) */
	if (errno || *end || end == text || s > 9e12)
		return -EINVAL;
	*ret_ms = (int64_t)(s * 1000.0 + 0.5);
	return 0;
}

/* Reads ".fff" (any digits, kept to milliseconds) at *p. */
static int parse_fraction(const char **p)
{
	int ms = 0, scale = 100;

	if (**p != '.')
		return 0;
	for ((*p)++; isdigit((unsigned char)**p); (*p)++, scale /= 10)
		ms += (**p - '0') * scale;
	return ms;
}

/* RFC 3339 or a local date and time, or a local time of today. */
static int parse_calendar(const char *text, int64_t now_ms, int64_t *ret_ms)
{
	struct tm tm;
	const char *p;
	time_t now = (time_t)(now_ms / 1000), t;
	int ms, zoned = 0;
	long off = 0;

	memset(&tm, 0, sizeof(tm));
	p = strptime(text, "%Y-%m-%d", &tm);
	if (p && (*p == 'T' || *p == ' '))
		p = strptime(p + 1, "%H:%M", &tm);
	else if (!p) {
		/* a time alone: today's date, local */
		if (!localtime_r(&now, &tm))
			return -EINVAL;
		tm.tm_sec = 0;
		p = strptime(text, "%H:%M", &tm);
	}
	if (!p)
		return -EINVAL;
	if (*p == ':') {
		const char *q = strptime(p + 1, "%S", &tm);

		if (!q)
			return -EINVAL;
		p = q;
	}
	ms = parse_fraction(&p);
	if (*p == 'Z' || *p == 'z') {
		zoned = 1;
		p++;
	} else if ((*p == '+' || *p == '-') && isdigit((unsigned char)p[1])) {
		int hh, mm;

		if (sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2 || strlen(p) != 6)
			return -EINVAL;
		off = (hh * 60L + mm) * 60L * (*p == '+' ? 1 : -1);
		zoned = 1;
		p += 6;
	}
	if (*p)
		return -EINVAL;
	if (zoned) {
		t = timegm(&tm);
		if (t == (time_t)-1)
			return -EINVAL;
		t -= off;
	} else {
		tm.tm_isdst = -1;
		t = mktime(&tm);
		if (t == (time_t)-1)
			return -EINVAL;
	}
	*ret_ms = (int64_t)t * 1000 + ms;
	return 0;
}

int time_parse(const char *text, int64_t now_ms, int64_t *ret_ms)
{
	if (!text || !*text)
		return -EINVAL;
	if (parse_relative(text, now_ms, ret_ms) == 0 || parse_unix(text, ret_ms) == 0)
		return 0;
	return parse_calendar(text, now_ms, ret_ms);
}

void time_format(int64_t ms, int utc, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	size_t n;

	if (!(utc ? gmtime_r(&t, &tm) : localtime_r(&t, &tm)) ||
	    !(n = strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))) {
		snprintf(buf, len, "?");
		return;
	}
	snprintf(buf + n, len - n, ".%03d %s", (int)(ms % 1000), utc ? "UTC" : tm.tm_zone);
}

void time_format_rfc3339(int64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	size_t n;

	if (!gmtime_r(&t, &tm) || !(n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm))) {
		snprintf(buf, len, "?");
		return;
	}
	snprintf(buf + n, len - n, ".%03dZ", (int)(ms % 1000));
}
