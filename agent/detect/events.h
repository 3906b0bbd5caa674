/* SPDX-License-Identifier: MIT */
#ifndef FABMON_EVENTS_H
#define FABMON_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "collector/collector.h"

/*
 * Events: what the detectors found, with hysteresis. A detector reports, each
 * tick, the subjects over its threshold (verdicts); an event opens after
 * open_ticks ticks over in a row and closes after close_ticks ticks under,
 * so a blip raises nothing and a flapping subject stays one event; a verdict's
 * weight can open it on its first tick over, or only keep it open.
 */

enum event_kind {
	EVENT_HOTSPOT,
	EVENT_INCAST,
	EVENT_STALL,
	EVENT_PFC_STORM,
	EVENT_STRAGGLER,
	EVENT_SLOW_HANDOFF,
	EVENT_HOST_STALL,
	EVENT_LOSSY_LINK,
	EVENT_PATH_LATENCY,
	EVENT_UNREACHABLE,
	EVENT_KINDS,
};

/* Where the fault is: in the fabric (links, ports, queues), or in a host
 * whose application stopped while its path kept working. */
enum event_cause {
	EVENT_CAUSE_NETWORK,
	EVENT_CAUSE_HOST,
};

/* "stall", "pfc_storm", ... as in DESIGN.md and the events table. */
const char *event_kind_name(enum event_kind kind);

/* A kind's cause: each kind names one (DESIGN.md, Events). */
enum event_cause event_kind_cause(enum event_kind kind);

/* "network" or "host": the cause label and column. */
const char *event_cause_name(enum event_cause cause);

/* The kind named name ("stall"), or -1. */
int event_kind_parse(const char *name);

#define EVENT_SUBJECT_MAX 96
#define EVENT_EVIDENCE_MAX 256

/* How a verdict counts towards its subject's event. */
enum verdict_weight {
	/* a tick over: the event opens after open_ticks in a row */
	VERDICT_OVER,
	/* the detector waited its own bound already: the event opens on this
	 * first tick over */
	VERDICT_AT_ONCE,
	/* over a lower bound only (a detector's hysteresis): a tick over for
	 * the subject's open event, and nothing else: it neither starts nor
	 * opens one */
	VERDICT_HOLD,
};

/* One subject over a detector's threshold this tick. */
struct event_verdict {
	enum event_kind kind;
	char subject[EVENT_SUBJECT_MAX]; /* "peer=198.18.0.3", "interface=eth0,priority=3" */
	double score; /* how far over: 1 is the threshold */
	char evidence[EVENT_EVIDENCE_MAX]; /* a JSON object with the readings */
	enum verdict_weight weight;
};

enum event_change { EVENT_OPENED = 1, EVENT_CLOSED = 2, EVENT_PEAK = 4 };

struct event {
	enum event_kind kind;
	char subject[EVENT_SUBJECT_MAX];
	char evidence[EVENT_EVIDENCE_MAX]; /* of the first tick over */
	int64_t start_ms; /* first tick over */
	int64_t open_ms; /* tick it opened: start_ms, or open_ticks - 1 ticks later */
	int64_t end_ms; /* tick it closed; 0 while open */
	double peak;
	int open;
	unsigned changes; /* enum event_change bits, this tick */
	int64_t store_id; /* the events row; 0 until stored */
	/* hysteresis */
	unsigned over, under;
};

struct events;

/* open_ticks, close_ticks >= 1. NULL on allocation failure. */
struct events *events_new(unsigned open_ticks, unsigned close_ticks);
void events_free(struct events *ev);

/*
 * Feeds one tick's verdicts (any order, any kinds). Subjects tracked but not
 * in verdicts count a tick under. At most EVENTS_TRACKED subjects are
 * followed at once; verdicts beyond that are dropped (and counted).
 */
#define EVENTS_TRACKED 256
void events_tick(struct events *ev, const struct event_verdict *v, size_t n, int64_t now_ms);

/* Calls fn for every event that opened, closed or reached a new peak this tick. */
void events_foreach_changed(struct events *ev, void (*fn)(struct event *e, void *arg), void *arg);

/* Sets store_id to 0 on every event (the store is another database now):
 * each is written as a new row at its next change. */
void events_forget_store_ids(struct events *ev);

/*
 * Emits fabmon_event_active{kind,cause,subject} for open events,
 * fabmon_events_total{kind,cause} and fabmon_stall_seconds_total.
 */
void events_emit(const struct events *ev, struct sample_sink *out);

#endif
