/* SPDX-License-Identifier: MIT */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>

#include "agent/cli/json_arena.h"

/* a chunk, 1 MiB at least: a request larger than a quarter of that gets
 * one of its own, so that at most a quarter of any chunk goes unused */
#define CHUNK_BYTES (1u << 20)
#define ALIGN 16

struct chunk {
	struct chunk *next;
	size_t used, size;
	_Alignas(ALIGN) unsigned char data[];
};

static struct chunk *chunks;

static struct chunk *chunk_new(size_t size)
{
	struct chunk *c = malloc(sizeof(*c) + size);

	if (!c)
		return NULL;
	c->used = 0;
	c->size = size;
	return c;
}

static void *arena_malloc(size_t n)
{
	struct chunk *c;

	n = (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
	if (n > CHUNK_BYTES / 4) {
		/* its own chunk, behind the one being carved */
		c = chunk_new(n);
		if (!c)
			return NULL;
		c->used = n;
		if (chunks) {
			c->next = chunks->next;
			chunks->next = c;
		} else {
			c->next = NULL;
			chunks = c;
		}
		return c->data;
	}
	if (!chunks || chunks->size - chunks->used < n) {
		c = chunk_new(CHUNK_BYTES);
		if (!c)
			return NULL;
		c->next = chunks;
		chunks = c;
	}
	chunks->used += n;
	return chunks->data + chunks->used - n;
}

static void arena_free(void *p)
{
	(void)p;
}

void json_arena_use(void)
{
	json_set_alloc_funcs(arena_malloc, arena_free);
}

void json_arena_release(void)
{
	while (chunks) {
		struct chunk *next = chunks->next;

		free(chunks);
		chunks = next;
	}
	json_set_alloc_funcs(malloc, free);
}
