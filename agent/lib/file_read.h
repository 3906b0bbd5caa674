/* SPDX-License-Identifier: MIT */
#ifndef FABMON_FILE_READ_H
#define FABMON_FILE_READ_H

#include <stddef.h>

/*
 * Reading a configuration file whole: the agent's config, the web config
 * and the certificate, key and CA files it names. A FIFO at such a path
 * would block open(2) until a writer came, and a device could be read
 * forever, so the file is opened non-blocking and checked with fstat(2)
 * before a byte is read: anything but a regular file is refused at once.
 */

/* A config, a certificate or a CA bundle is a few KiB: a bound keeps a
 * wrong path (a log, an image) from being read whole. */
#define FILE_READ_MAX (1 << 20)

/*
 * Reads the regular file at path into a NUL-terminated buffer (*ret, which
 * the caller frees; *ret_len without the NUL). Returns 0, or -errno:
 * -EINVAL if it is not a regular file, -EFBIG if it holds over
 * FILE_READ_MAX bytes, else open(2)'s or read(2)'s.
 */
int file_read(const char *path, char **ret, size_t *ret_len);

/* file_read()'s error r in words: "not a regular file", "over 1 MiB", or
 * strerror's. */
const char *file_read_strerror(int r);

#endif
