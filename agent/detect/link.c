/* SPDX-License-Identifier: MIT */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "agent/detect/link.h"
#include "agent/lib/name_find.h"

/* name_find() reads a port's subject as its record's start */
_Static_assert(offsetof(struct link_port, subject) == 0, "a link_port starts with its subject");

static struct link_port *link_find(struct link_history *h, const char *subject)
{
	size_t i = name_find(h->ports, h->n, sizeof(h->ports[0]), subject, &h->hint);

	if (i < h->n)
		return &h->ports[i];
	if (h->n == LINK_PORTS)
		return NULL;
	memset(&h->ports[h->n], 0, sizeof(h->ports[0]));
	snprintf(h->ports[h->n].subject, sizeof(h->ports[0].subject), "%s", subject);
	return &h->ports[h->n++];
}

/* Every port that moved bytes within window_ms is down (one at least). */
static int cut_now(const struct link_history *h, int64_t window_ms, int64_t now_ms)
{
	int used = 0;

	for (size_t i = 0; i < h->n; i++) {
		const struct link_port *p = &h->ports[i];

		if (!p->traffic_ms || now_ms - p->traffic_ms > window_ms || p->seen_ms != now_ms)
			continue;
		if (!p->down_ms)
			return 0;
		used = 1;
	}
	return used;
}

void link_history_update(struct link_history *h, const struct link_input *in, size_t n,
			 int64_t window_ms, int64_t now_ms)
{
	size_t kept = 0;

	for (size_t i = 0; i < n; i++) {
		struct link_port *p = link_find(h, in[i].subject);

		if (!p)
			continue;
		p->seen_ms = now_ms;
		if (in[i].up) {
			p->down_ms = 0;
			if (in[i].bytes_rate > 0)
				p->traffic_ms = now_ms;
		} else if (!p->down_ms && p->traffic_ms && now_ms - p->traffic_ms <= window_ms) {
			p->down_ms = now_ms;
		}
	}
	for (size_t i = 0; i < h->n; i++)
		if (now_ms - h->ports[i].seen_ms <= window_ms)
			h->ports[kept++] = h->ports[i];
	h->n = kept;
	if (cut_now(h, window_ms, now_ms)) {
		if (!h->cut_from_ms || h->cut_until_ms) {
			h->cut_from_ms = now_ms;
			h->cut_until_ms = 0;
		}
	} else if (h->cut_from_ms && !h->cut_until_ms) {
		h->cut_until_ms = now_ms;
	}
}

size_t detect_link(const struct link_history *h, int64_t now_ms, struct event_verdict *out,
		   size_t max)
{
	size_t k = 0;

	for (size_t i = 0; i < h->n && k < max; i++) {
		const struct link_port *p = &h->ports[i];
		struct event_verdict *v;

		if (!p->down_ms || p->seen_ms != now_ms)
			continue;
		v = &out[k++];
		v->kind = EVENT_STALL;
		v->weight = VERDICT_AT_ONCE;
		v->score = 1;
		snprintf(v->subject, sizeof(v->subject), "%s", p->subject);
		snprintf(v->evidence, sizeof(v->evidence),
			 "{\"up\":0,\"down_seconds\":%.3f,\"idle_before_seconds\":%.3f}",
			 (double)(now_ms - p->down_ms) / 1000,
			 (double)(p->down_ms - p->traffic_ms) / 1000);
	}
	return k;
}

int link_cut_off(const struct link_history *h, int64_t now_ms)
{
	return h->cut_from_ms &&
	       (!h->cut_until_ms || now_ms - h->cut_until_ms <= h->cut_until_ms - h->cut_from_ms);
}
