/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/lib/strbuf.h"

static char strbuf_empty[1];

void strbuf_init(struct strbuf *sb)
{
	sb->buf = strbuf_empty;
	sb->len = 0;
	sb->alloc = 0;
	sb->failed = 0;
}

void strbuf_release(struct strbuf *sb)
{
	if (sb->alloc)
		free(sb->buf);
	strbuf_init(sb);
}

void strbuf_reset(struct strbuf *sb)
{
	sb->len = 0;
	sb->failed = 0;
	if (sb->alloc)
		sb->buf[0] = '\0';
}

static int strbuf_grow(struct strbuf *sb, size_t extra)
{
	size_t want, alloc;
	char *nbuf;

	if (sb->failed)
		return -1;
	want = sb->len + extra + 1;
	if (want <= sb->alloc)
		return 0;
	alloc = sb->alloc ? sb->alloc : 64;
	while (alloc < want)
		alloc *= 2;
	nbuf = realloc(sb->alloc ? sb->buf : NULL, alloc);
	if (!nbuf) {
		sb->failed = 1;
		return -1;
	}
	if (!sb->alloc)
		nbuf[0] = '\0';
	sb->buf = nbuf;
	sb->alloc = alloc;
	return 0;
}

void strbuf_reserve(struct strbuf *sb, size_t extra)
{
	(void)strbuf_grow(sb, extra);
}

void strbuf_add(struct strbuf *sb, const char *data, size_t len)
{
	if (strbuf_grow(sb, len) < 0)
		return;
	memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
}

void strbuf_addstr(struct strbuf *sb, const char *s)
{
	strbuf_add(sb, s, strlen(s));
}

void strbuf_addch(struct strbuf *sb, char c)
{
	strbuf_add(sb, &c, 1);
}

void strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || strbuf_grow(sb, (size_t)n) < 0) {
		sb->failed = 1;
		return;
	}
	va_start(ap, fmt);
	(void)vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
}

void strbuf_addjson(struct strbuf *sb, const char *s)
{
	strbuf_addch(sb, '"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			strbuf_addch(sb, '\\');
			strbuf_addch(sb, (char)c);
		} else if (c < 0x20) {
			strbuf_addf(sb, "\\u%04x", c);
		} else {
			strbuf_addch(sb, (char)c);
		}
	}
	strbuf_addch(sb, '"');
}

void strbuf_attach(struct strbuf *sb, char *buf, size_t alloc)
{
	strbuf_release(sb);
	sb->buf = buf;
	sb->alloc = alloc;
	sb->buf[0] = '\0';
}

char *strbuf_detach(struct strbuf *sb, size_t *ret_len)
{
	char *p = NULL;

	if (!sb->failed) {
		if (!sb->alloc && strbuf_grow(sb, 0) < 0)
			goto out;
		p = sb->buf;
		if (ret_len)
			*ret_len = sb->len;
		strbuf_init(sb);
		return p;
	}
out:
	strbuf_release(sb);
	return p;
}
