/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cli/replay_tick.h"
#include "agent/daemon/pipeline.h"
#include "collector/flow_series.h"
#include "collector/pcap/pause_series.h"

/* Empty ticks run across a gap in the capture before jumping over the rest:
 * more than any close hysteresis needs. */
#define REPLAY_GAP_TICKS 16
/* Events kept for the report; more are stored but not listed. */
#define REPLAY_EVENTS_MAX 1024

struct replay_ticks {
	struct pipeline pipe;
	struct flow_series *series;
	struct store *store;
	int64_t interval_ns, next_ns; /* next_ns 0: no packet yet */
	uint64_t last_ts_ns; /* the timestamp of the packet before */
	uint64_t shift_ns; /* the steps back so far: added to every timestamp */
	uint64_t steps_back, step_back_max_ns;
	int64_t idle_ms;
	uint64_t ticks, store_errors;
	char store_err[256];
	struct event found[REPLAY_EVENTS_MAX];
	size_t nfound;
};

int replay_ticks_new(const struct config *cfg, int db, struct replay_ticks **ret, char *err,
		     size_t err_len)
{
	struct replay_ticks *t = calloc(1, sizeof(*t));
	int r = -ENOMEM;

	err[0] = '\0';
	if (!t)
		goto fail;
	t->interval_ns = cfg->interval_ms * 1000000;
	t->idle_ms = cfg->bpf_flow_idle_ms;
	t->series = flow_series_new(cfg->bpf_max_flows, cfg->bpf_top_peers);
	if (!t->series || pipeline_init(&t->pipe, cfg, cfg->series_expiry_ms) < 0) {
		snprintf(err, err_len, "out of memory");
		goto fail;
	}
	if (db) {
		r = store_open(cfg->db_path, STORE_READ_WRITE, &t->store, err, err_len);
		if (r < 0)
			goto fail;
	}
	*ret = t;
	return 0;
fail:
	replay_ticks_free(t);
	return r;
}

void replay_ticks_free(struct replay_ticks *t)
{
	if (!t)
		return;
	store_close(t->store);
	pipeline_release(&t->pipe);
	flow_series_free(t->series);
	free(t);
}

struct feed {
	struct flow_series *series;
	int64_t now_ms;
};

static int feed_flow(const void *key, void *val, void *arg)
{
	struct feed *f = arg;

	(void)flow_series_add_flow(f->series, key, val, f->now_ms);
	return 1;
}

static int feed_qp(const void *key, void *val, void *arg)
{
	struct feed *f = arg;

	(void)flow_series_add_qp(f->series, key, val, f->now_ms);
	return 1;
}

/* Keeps a copy of each event for the report, updated as it changes (and
 * stored by then). */
static void event_changed(struct event *e, void *arg)
{
	struct replay_ticks *t = arg;
	size_t i;

	for (i = 0; i < t->nfound; i++)
		if (t->found[i].kind == e->kind && t->found[i].start_ms == e->start_ms &&
		    strcmp(t->found[i].subject, e->subject) == 0)
			break;
	if (i == t->nfound && t->nfound < REPLAY_EVENTS_MAX)
		t->nfound++;
	if (i < t->nfound)
		t->found[i] = *e;
}

/* One tick ending at end_ns: the counts so far as series, then detectors,
 * events and the database. */
static void tick(struct replay_ticks *t, struct capture *cap, int64_t end_ns)
{
	struct feed f = { t->series, end_ns / 1000000 };
	struct sample_sink *out;
	char err[256];

	pipeline_begin(&t->pipe, f.now_ms);
	out = registry_sink(t->pipe.reg, "replay");
	/* the capture keeps every entry: the report's totals need them all */
	kmap_sweep(capture_flows(cap), feed_flow, &f);
	kmap_sweep(capture_qps(cap), feed_qp, &f);
	flow_series_end_tick(t->series, f.now_ms, t->idle_ms);
	flow_series_emit(t->series, out, "capture", "pcap", 0);
	pause_series_emit(&capture_stats(cap)->pause, "capture", (uint64_t)end_ns, out);
	pipeline_detect(&t->pipe, "replay");
	pipeline_end(&t->pipe);
	/* a failed tick is counted; the first reason is kept for the report */
	if (t->store && pipeline_store_tick(&t->pipe, t->store, 0, err, sizeof(err)) < 0 &&
	    !t->store_errors++)
		snprintf(t->store_err, sizeof(t->store_err), "%s", err);
	pipeline_store_events(&t->pipe, t->store, event_changed, t);
	t->ticks++;
}

uint64_t replay_ticks_advance(struct replay_ticks *t, struct capture *cap, uint64_t ts_ns)
{
	unsigned empty = 0;
	int64_t ts;

	if (t->next_ns && ts_ns < t->last_ts_ns) {
		uint64_t back = t->last_ts_ns - ts_ns;

		t->steps_back++;
		if (back > t->step_back_max_ns)
			t->step_back_max_ns = back;
		t->shift_ns += back;
	}
	t->last_ts_ns = ts_ns;
	ts = (int64_t)(ts_ns + t->shift_ns);
	if (!t->next_ns) {
		t->next_ns = ts - ts % t->interval_ns + t->interval_ns;
		return (uint64_t)ts;
	}
	while (ts >= t->next_ns) {
		tick(t, cap, t->next_ns);
		t->next_ns += t->interval_ns;
		if (ts >= t->next_ns && ++empty == REPLAY_GAP_TICKS)
			t->next_ns = ts - ts % t->interval_ns;
	}
	return (uint64_t)ts;
}

void replay_ticks_finish(struct replay_ticks *t, struct capture *cap)
{
	if (!t->next_ns)
		return;
	tick(t, cap, t->next_ns);
	/*
	 * An event still open when the capture ends is stored as ending there:
	 * the capture cannot say how long it went on, and a row left open would
	 * overlap every window the review commands ask about from then on. The
	 * report still says it was open at the end.
	 */
	for (size_t i = 0; t->store && i < t->nfound; i++) {
		struct event e = t->found[i];

		if (e.end_ms || !e.store_id)
			continue;
		e.end_ms = t->next_ns / 1000000;
		(void)store_save_event(t->store, &e);
	}
}

uint64_t replay_ticks_count(const struct replay_ticks *t, uint64_t *ret_store_errors,
			    const char **ret_err)
{
	*ret_store_errors = t->store_errors;
	*ret_err = t->store_err;
	return t->ticks;
}

uint64_t replay_ticks_steps_back(const struct replay_ticks *t, uint64_t *ret_max_ns)
{
	*ret_max_ns = t->step_back_max_ns;
	return t->steps_back;
}

size_t replay_ticks_events(const struct replay_ticks *t, const struct event **ret)
{
	*ret = t->found;
	return t->nfound;
}
