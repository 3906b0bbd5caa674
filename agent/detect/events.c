/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "agent/detect/events.h"

/* Each kind's name and cause. slow_handoff is the network's: its rule reads
 * transfer times on the wire, and a receiver that stops reading is
 * host_stall's to name (the hand-off detector skips those). */
static const struct {
	const char *name;
	enum event_cause cause;
} kinds[EVENT_KINDS] = {
	[EVENT_HOTSPOT] = { "hotspot", EVENT_CAUSE_NETWORK },
	[EVENT_INCAST] = { "incast", EVENT_CAUSE_NETWORK },
	[EVENT_STALL] = { "stall", EVENT_CAUSE_NETWORK },
	[EVENT_PFC_STORM] = { "pfc_storm", EVENT_CAUSE_NETWORK },
	[EVENT_STRAGGLER] = { "straggler", EVENT_CAUSE_NETWORK },
	[EVENT_SLOW_HANDOFF] = { "slow_handoff", EVENT_CAUSE_NETWORK },
	[EVENT_HOST_STALL] = { "host_stall", EVENT_CAUSE_HOST },
	[EVENT_LOSSY_LINK] = { "lossy_link", EVENT_CAUSE_NETWORK },
	[EVENT_PATH_LATENCY] = { "path_latency", EVENT_CAUSE_NETWORK },
	/* every path to the peer failed at once: what they share is the
	 * host (or its only cable), not a link of the fabric */
	[EVENT_UNREACHABLE] = { "unreachable", EVENT_CAUSE_HOST },
};

int event_kind_parse(const char *name)
{
	for (int k = 0; k < EVENT_KINDS; k++)
		if (strcmp(name, kinds[k].name) == 0)
			return k;
	return -1;
}

const char *event_kind_name(enum event_kind kind)
{
	return kind < EVENT_KINDS ? kinds[kind].name : "unknown";
}

enum event_cause event_kind_cause(enum event_kind kind)
{
	return kind < EVENT_KINDS ? kinds[kind].cause : EVENT_CAUSE_NETWORK;
}

const char *event_cause_name(enum event_cause cause)
{
	return cause == EVENT_CAUSE_HOST ? "host" : "network";
}

struct events {
	unsigned open_ticks, close_ticks;
	struct event tracked[EVENTS_TRACKED];
	unsigned n;
	uint64_t opened[EVENT_KINDS];
	double stall_seconds; /* summed over open stall events, tick by tick */
	int64_t last_ms;
	uint64_t dropped;
};

struct events *events_new(unsigned open_ticks, unsigned close_ticks)
{
	struct events *ev = calloc(1, sizeof(*ev));

	if (!ev)
		return NULL;
	ev->open_ticks = open_ticks ? open_ticks : 1;
	ev->close_ticks = close_ticks ? close_ticks : 1;
	return ev;
}

void events_free(struct events *ev)
{
	free(ev);
}

static struct event *find(struct events *ev, enum event_kind kind, const char *subject)
{
	for (unsigned i = 0; i < ev->n; i++)
		if (ev->tracked[i].kind == kind && strcmp(ev->tracked[i].subject, subject) == 0)
			return &ev->tracked[i];
	return NULL;
}

/* Forgets what is neither open nor over: closed last tick, or a blip. */
static void compact(struct events *ev)
{
	unsigned j = 0;

	for (unsigned i = 0; i < ev->n; i++) {
		struct event *e = &ev->tracked[i];

		e->changes = 0;
		if (!e->open && e->over == 0)
			continue;
		if (j != i)
			ev->tracked[j] = *e;
		j++;
	}
	ev->n = j;
}

static void over(struct events *ev, struct event *e, const struct event_verdict *v, int64_t now)
{
	e->over++;
	e->under = 0;
	if (!e->open) {
		if (e->over == 1) {
			e->start_ms = now;
			e->peak = v->score;
			memcpy(e->evidence, v->evidence, sizeof(e->evidence));
		}
		if (v->score > e->peak)
			e->peak = v->score;
		if (e->over >= ev->open_ticks || v->weight == VERDICT_AT_ONCE) {
			e->open = 1;
			e->open_ms = now;
			e->end_ms = 0;
			e->changes |= EVENT_OPENED;
			ev->opened[e->kind]++;
		}
		return;
	}
	if (v->score > e->peak) {
		e->peak = v->score;
		e->changes |= EVENT_PEAK;
	}
}

void events_tick(struct events *ev, const struct event_verdict *v, size_t n, int64_t now_ms)
{
	unsigned char seen[EVENTS_TRACKED] = { 0 };

	compact(ev);
	/* the time since the last tick, for each stall that was open through it */
	for (unsigned i = 0; i < ev->n; i++)
		if (ev->tracked[i].open && ev->tracked[i].kind == EVENT_STALL && ev->last_ms &&
		    now_ms > ev->last_ms)
			ev->stall_seconds += (double)(now_ms - ev->last_ms) / 1000.0;
	for (size_t i = 0; i < n; i++) {
		struct event *e = find(ev, v[i].kind, v[i].subject);

		if (v[i].weight == VERDICT_HOLD && (!e || !e->open))
			continue;
		if (!e) {
			if (ev->n == EVENTS_TRACKED) {
				ev->dropped++;
				continue;
			}
			e = &ev->tracked[ev->n++];
			memset(e, 0, sizeof(*e));
			e->kind = v[i].kind;
			memcpy(e->subject, v[i].subject, sizeof(e->subject));
		}
		if (seen[e - ev->tracked])
			continue; /* one verdict per subject and tick counts */
		seen[e - ev->tracked] = 1;
		over(ev, e, &v[i], now_ms);
	}
	for (unsigned i = 0; i < ev->n; i++) {
		struct event *e = &ev->tracked[i];

		if (seen[i])
			continue;
		e->over = 0;
		e->under++;
		if (e->open && e->under >= ev->close_ticks) {
			e->open = 0;
			e->end_ms = now_ms;
			e->changes |= EVENT_CLOSED;
		}
	}
	ev->last_ms = now_ms;
}

void events_foreach_changed(struct events *ev, void (*fn)(struct event *e, void *arg), void *arg)
{
	for (unsigned i = 0; i < ev->n; i++)
		if (ev->tracked[i].changes)
			fn(&ev->tracked[i], arg);
}

void events_forget_store_ids(struct events *ev)
{
	for (unsigned i = 0; i < ev->n; i++)
		ev->tracked[i].store_id = 0;
}

void events_emit(const struct events *ev, struct sample_sink *out)
{
	static const struct metric_desc active = {
		.name = "fabmon_event_active",
		.help = "1 while an event is open (kind, cause and subject as in the events table).",
		.type = METRIC_GAUGE
	};
	static const struct metric_desc total = { .name = "fabmon_events_total",
						  .help = "Events opened, by kind (and its cause).",
						  .type = METRIC_COUNTER };
	static const struct metric_desc stall = {
		.name = "fabmon_stall_seconds_total",
		.help = "Time spent in open stall events, summed over stalled peers: the "
			"fabric's share of idle compute.",
		.type = METRIC_COUNTER,
		.scale = 1e-3
	};

	for (unsigned i = 0; i < ev->n; i++) {
		const struct event *e = &ev->tracked[i];
		struct label l[3] = { { "kind", event_kind_name(e->kind) },
				      { "cause", event_cause_name(event_kind_cause(e->kind)) },
				      { "subject", e->subject } };

		if (e->open)
			(void)sample_gauge(out, &active, l, 3, 1);
	}
	for (int k = 0; k < EVENT_KINDS; k++) {
		struct label l[2] = { { "kind", event_kind_name(k) },
				      { "cause", event_cause_name(event_kind_cause(k)) } };

		(void)sample_counter(out, &total, l, 2, ev->opened[k]);
	}
	/* counted in ms so the raw value is an integer the registry can track */
	(void)sample_counter(out, &stall, NULL, 0, (uint64_t)(ev->stall_seconds * 1000.0 + 0.5));
}
