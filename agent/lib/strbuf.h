/* SPDX-License-Identifier: MIT */
#ifndef FABMON_STRBUF_H
#define FABMON_STRBUF_H

#include <stddef.h>

/*
 * A growable, always NUL-terminated byte buffer, after git's strbuf.h.
 * strbuf_init() leaves it empty and allocation-free; strbuf_release() frees
 * it and leaves it reusable. On allocation failure the buffer is marked
 * failed (sb->failed), further appends are ignored, and the caller checks
 * once at the end.
 */
struct strbuf {
	char *buf;
	size_t len;
	size_t alloc;
	int failed;
};

void strbuf_init(struct strbuf *sb);
void strbuf_release(struct strbuf *sb);
/* Empties the buffer, keeping its memory for reuse on the next tick. */
void strbuf_reset(struct strbuf *sb);
/* Makes room for extra bytes more, so that appends up to them do not
 * reallocate (a failure marks sb failed). */
void strbuf_reserve(struct strbuf *sb, size_t extra);
void strbuf_add(struct strbuf *sb, const char *data, size_t len);
void strbuf_addstr(struct strbuf *sb, const char *s);
void strbuf_addch(struct strbuf *sb, char c);
void strbuf_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s as a JSON string: quoted, with '"', '\\' and control
 * characters escaped (RFC 8259 7). Other bytes go as they are. */
void strbuf_addjson(struct strbuf *sb, const char *s);
/* Takes buf (malloc'd, alloc bytes, alloc > 0) as sb's emptied memory: a
 * buffer detached before, handed back for reuse. What sb held is freed. */
void strbuf_attach(struct strbuf *sb, char *buf, size_t alloc);
/* Detaches the buffer (caller frees it); sb is left empty. NULL if failed. */
char *strbuf_detach(struct strbuf *sb, size_t *ret_len);

#endif
