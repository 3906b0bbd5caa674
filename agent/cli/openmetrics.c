/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "agent/cli/openmetrics.h"

#define TOTAL_SUFFIX "_total"

static int has_total(const char *metric)
{
	size_t n = strlen(metric), k = strlen(TOTAL_SUFFIX);

	return n > k && strcmp(metric + n - k, TOTAL_SUFFIX) == 0;
}

void openmetrics_type(struct strbuf *sb, const char *metric, int counter)
{
	if (counter && has_total(metric))
		strbuf_addf(sb, "# TYPE %.*s counter\n",
			    (int)(strlen(metric) - strlen(TOTAL_SUFFIX)), metric);
	else
		strbuf_addf(sb, "# TYPE %s %s\n", metric, counter ? "unknown" : "gauge");
}

/* The end of the label that starts at p (key="value", escapes skipped):
 * just past its closing quote. */
static const char *label_end(const char *p)
{
	p += strcspn(p, "\"");
	if (*p)
		p++;
	for (; *p && *p != '"'; p++)
		if (*p == '\\' && p[1])
			p++;
	return *p ? p + 1 : p;
}

/* True if labels has a label named key (the keylen bytes of key). */
static int labels_have_key(const char *labels, const char *key, size_t keylen)
{
	for (const char *p = labels; *p; p = label_end(p), p += *p == ',')
		if (strncmp(p, key, keylen) == 0 && p[keylen] == '=')
			return 1;
	return 0;
}

/* Appends the labels of extra that labels lacks, each followed by a comma. */
static void add_extra(struct strbuf *sb, const char *extra, const char *labels)
{
	for (const char *p = extra, *end; *p; p = end + (*end == ',')) {
		end = label_end(p);
		if (!labels_have_key(labels, p, strcspn(p, "="))) {
			strbuf_add(sb, p, (size_t)(end - p));
			strbuf_addch(sb, ',');
		}
	}
}

void openmetrics_sample(struct strbuf *sb, const char *metric, const char *extra,
			const char *labels, int64_t ts_ms, double value)
{
	size_t open;

	strbuf_addstr(sb, metric);
	open = sb->len;
	strbuf_addch(sb, '{');
	add_extra(sb, extra, labels);
	strbuf_addstr(sb, labels);
	if (sb->len > open && sb->buf[sb->len - 1] == ',')
		sb->len--; /* extra's last comma, when labels is empty */
	if (sb->len == open + 1)
		sb->len = open; /* no labels at all: no braces */
	else
		strbuf_addch(sb, '}');
	if (sb->buf)
		sb->buf[sb->len] = '\0';
	if (isnan(value))
		strbuf_addstr(sb, " NaN");
	else if (isinf(value))
		strbuf_addstr(sb, value > 0 ? " +Inf" : " -Inf");
	else
		strbuf_addf(sb, " %.17g", value);
	strbuf_addf(sb, " %lld.%03d\n", (long long)(ts_ms / 1000), (int)(ts_ms % 1000));
}

void openmetrics_eof(struct strbuf *sb)
{
	strbuf_addstr(sb, "# EOF\n");
}
