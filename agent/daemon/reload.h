/* SPDX-License-Identifier: MIT */
#ifndef FABMON_RELOAD_H
#define FABMON_RELOAD_H

#include <stddef.h>

#include "agent/config.h"

/*
 * SIGHUP's config read, off the tick thread. Opening a config non-blocking
 * refuses a FIFO at once (agent/lib/file_read.h), but a regular file can block too
 * (a hung NFS mount, a slow disk): the read and the parse run in a thread
 * of their own, the tick thread goes on ticking, and it takes the parsed
 * config when reload_fd() becomes readable. Every function but the thread
 * itself is called from the tick thread.
 */
struct reload;

/* Ready to read the config as src says (borrowed: it must outlive r).
 * NULL on failure. */
struct reload *reload_new(const struct config_source *src);

/* A descriptor that becomes readable when a result waits (for poll). */
int reload_fd(const struct reload *r);

/*
 * Starts a read in a thread; if one is under way, another follows it, and
 * the first one's result is dropped: the file may have changed after it
 * was read. Never blocks.
 */
void reload_request(struct reload *r);

/*
 * Takes the result of the last read without blocking: 0 if there is none
 * (yet), 1 and the config in *ret_cfg, or -errno with why in err, as
 * config_build() says it.
 */
int reload_take(struct reload *r, struct config *ret_cfg, char *err, size_t err_len);

/* Waits for a read under way to end, then frees r. Accepts NULL. */
void reload_free(struct reload *r);

#endif
