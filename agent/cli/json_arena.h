/* SPDX-License-Identifier: MIT */
#ifndef FABMON_CLI_JSON_ARENA_H
#define FABMON_CLI_JSON_ARENA_H

/*
 * Jansson's memory for a command that parses large answers once and is
 * done with them when it exits (fabmon locate: tens of MB of Prometheus
 * JSON at 2,000 nodes, where malloc and free were a third of its work):
 * values are carved from large chunks, freeing one does nothing, and
 * json_arena_release() returns every chunk at once. Process-wide, as
 * jansson's allocator is: not for the daemon.
 */

/* Jansson allocates from the arena from now on. */
void json_arena_use(void);

/* Frees every chunk: no jansson value made since json_arena_use() may be
 * used after. Jansson allocates from malloc again. */
void json_arena_release(void);

#endif
