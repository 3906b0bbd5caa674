/* SPDX-License-Identifier: MIT */
#ifndef FABMON_SYSFS_H
#define FABMON_SYSFS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Reading small sysfs attribute files under a root directory ("/sys" or a
 * fixture tree). Paths are relative to the root: "class/net/eth0/mtu".
 */

/*
 * Reads the file root/path into buf (at most len - 1 bytes), NUL-terminated,
 * trailing whitespace removed. Returns the length, or -errno (-ENOENT when the
 * file is absent, -EINVAL when it holds a NUL byte or is empty).
 */
int sysfs_read(const char *root, const char *path, char *buf, size_t len);

/*
 * Reads a decimal unsigned integer (optionally "0x" hex) from root/path.
 * Returns 0 and sets *ret, or -errno: -EINVAL for garbage such as
 * "N/A (no PMA)", -ERANGE for overflow.
 */
int sysfs_read_u64(const char *root, const char *path, uint64_t *ret);

/* Parses text the way sysfs_read_u64() does. */
int sysfs_parse_u64(const char *text, uint64_t *ret);

/*
 * Lists the entries of directory root/path (no "." or ".."), sorted by name,
 * calling fn for each. Stops at the first fn that returns non-zero and returns
 * that; returns -errno if the directory cannot be read.
 */
int sysfs_list(const char *root, const char *path, int (*fn)(const char *name, void *arg),
	       void *arg);

/*
 * As sysfs_list(), for the entries that are directories or links to one: the
 * devices of a class ("class/net/eth0", a link into devices/), not the class's
 * own files ("class/net/bonding_masters", which the bonding driver adds).
 */
int sysfs_list_dirs(const char *root, const char *path, int (*fn)(const char *name, void *arg),
		    void *arg);

#endif
