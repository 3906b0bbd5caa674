/* SPDX-License-Identifier: MIT */
#ifndef FABMON_LABEL_TEXT_H
#define FABMON_LABEL_TEXT_H

#include <stddef.h>

/*
 * The value of key in the label text of a series (struct series' labels)
 * as the registry writes it: key="value" pairs joined by commas, each value
 * escaped as the text format 0.0.4 has it (a backslash before a backslash
 * or a quote, \n for a newline). The value comes out escaped, into buf of
 * size len, NUL-terminated. Returns 0; -ENOENT when there is no such label,
 * -ENAMETOOLONG when its value does not fit, -EINVAL for text that is not
 * label text; buf is "" on any of them.
 */
int label_value(const char *text, const char *key, char *buf, size_t len);

#endif
