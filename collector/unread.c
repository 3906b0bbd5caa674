/* SPDX-License-Identifier: MIT */
#include <stdlib.h>

#include "collector/kmap.h"
#include "collector/unread.h"

struct unread_entry {
	uint64_t tick; /* the last tick that noted it */
	uint64_t read;
	int64_t last_ms; /* that tick's time */
	int64_t since_ms; /* the tick its data began to stand; 0: it does not */
	uint32_t unread;
	uint32_t pad;
};

struct unread_tracker {
	struct kmap *m; /* cookie -> struct unread_entry */
};

struct unread_tracker *unread_tracker_new(unsigned max)
{
	struct unread_tracker *t = calloc(1, sizeof(*t));

	if (t && !(t->m = kmap_new(sizeof(uint64_t), sizeof(struct unread_entry), max))) {
		free(t);
		t = NULL;
	}
	return t;
}

void unread_tracker_free(struct unread_tracker *t)
{
	if (t)
		kmap_free(t->m);
	free(t);
}

double unread_note(struct unread_tracker *t, const struct unread_sock *s, int64_t now_ms,
		   uint64_t tick, int *ret_read)
{
	struct unread_entry *e = kmap_put(t->m, &s->cookie, NULL);
	int before;

	*ret_read = 0;
	if (!e)
		return 0;
	before = e->tick && e->tick + 1 == tick;
	*ret_read = before && e->read != s->read;
	if (!before || !e->unread || !s->unread || e->read != s->read)
		e->since_ms = 0;
	else if (!e->since_ms)
		e->since_ms = e->last_ms;
	e->tick = tick;
	e->read = s->read;
	e->unread = s->unread;
	e->last_ms = now_ms;
	return e->since_ms && now_ms > e->since_ms ? (double)(now_ms - e->since_ms) / 1000.0 : 0;
}

double unread_awaited(double best, double quiet_s, double unread_s)
{
	if (unread_s <= 0 || quiet_s < unread_s)
		return best;
	return best == 0 || quiet_s < best ? quiet_s : best;
}

static int unread_seen(const void *key, void *val, void *arg)
{
	const struct unread_entry *e = val;

	(void)key;
	return e->tick == *(const uint64_t *)arg;
}

void unread_end_tick(struct unread_tracker *t, uint64_t tick)
{
	kmap_sweep(t->m, unread_seen, &tick);
}
