/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "agent/daemon/pipeline.h"

int pipeline_init(struct pipeline *p, const struct config *cfg, int64_t series_expiry_ms)
{
	memset(p, 0, sizeof(*p));
	p->reg = registry_new(cfg->max_series, series_expiry_ms);
	p->events = events_new(cfg->event_open_ticks, cfg->event_close_ticks);
	if (!p->reg || !p->events || detect_new(cfg, &p->detect) < 0) {
		pipeline_release(p);
		return -ENOMEM;
	}
	return 0;
}

void pipeline_release(struct pipeline *p)
{
	detect_free(p->detect);
	events_free(p->events);
	registry_free(p->reg);
	memset(p, 0, sizeof(*p));
}

void pipeline_begin(struct pipeline *p, int64_t now_ms)
{
	registry_begin_tick(p->reg, now_ms);
}

void pipeline_detect(struct pipeline *p, const char *source)
{
	size_t n = detect_run(p->detect, p->reg, p->verdicts, EVENTS_TRACKED);

	events_tick(p->events, p->verdicts, n, registry_now(p->reg));
	events_emit(p->events, registry_sink(p->reg, source));
}

void pipeline_end(struct pipeline *p)
{
	registry_end_tick(p->reg);
}

int pipeline_store_tick(struct pipeline *p, struct store *store, double collect_s, char *err,
			size_t err_len)
{
	return store_write_tick(store, p->reg, collect_s, err, err_len);
}

struct changed {
	struct store *store;
	void (*fn)(struct event *e, void *arg);
	void *arg;
};

static void event_changed(struct event *e, void *arg)
{
	struct changed *c = arg;

	/* first: the row's id is then in what the caller sees */
	if (c->store)
		(void)store_save_event(c->store, e);
	if (c->fn)
		c->fn(e, c->arg);
}

void pipeline_store_events(struct pipeline *p, struct store *store,
			   void (*changed)(struct event *e, void *arg), void *arg)
{
	struct changed c = { store, changed, arg };

	events_foreach_changed(p->events, event_changed, &c);
}
