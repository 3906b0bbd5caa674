/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "agent/detect/lossy.h"

void lossy_history_update(struct lossy_history *h, const struct lossy_input *in, size_t n,
			  int64_t window_ms, int64_t now_ms)
{
	size_t kept = 0;

	for (size_t i = 0; i < n; i++) {
		struct lossy_port *p = NULL;
		double dt;

		for (size_t j = 0; j < h->n && !p; j++)
			if (strcmp(h->ports[j].subject, in[i].subject) == 0)
				p = &h->ports[j];
		if (!p) {
			if (h->n == LOSSY_PORTS)
				continue;
			p = &h->ports[h->n++];
			memset(p, 0, sizeof(*p));
			memcpy(p->subject, in[i].subject, sizeof(p->subject));
		} else if (now_ms > p->last_ms) {
			/* a first tick has no interval: its rates say nothing yet */
			dt = (double)(now_ms - p->last_ms) / 1000.0;
			p->tick[p->next].ms = now_ms;
			p->tick[p->next].errors = in[i].errors * dt;
			p->tick[p->next].packets = in[i].packets * dt;
			p->tick[p->next].util = in[i].util;
			p->next = (p->next + 1) % LOSSY_SAMPLES;
			if (p->count < LOSSY_SAMPLES)
				p->count++;
		}
		p->last_ms = now_ms;
	}
	for (size_t j = 0; j < h->n; j++)
		if (now_ms - h->ports[j].last_ms <= window_ms)
			h->ports[kept++] = h->ports[j];
	h->n = kept;
}

size_t detect_lossy(const struct lossy_history *h, const struct lossy_bounds *b, int64_t now_ms,
		    struct event_verdict *out, size_t max)
{
	size_t k = 0;

	if (b->error_share <= 0)
		return 0;
	for (size_t j = 0; j < h->n && k < max; j++) {
		const struct lossy_port *p = &h->ports[j];
		double errors = 0, packets = 0, util = -1, share;
		unsigned erring = 0;

		for (unsigned i = 0; i < p->count; i++) {
			unsigned at = (p->next + LOSSY_SAMPLES - 1 - i) % LOSSY_SAMPLES;

			if (now_ms - p->tick[at].ms >= b->window_ms)
				break;
			errors += p->tick[at].errors;
			packets += p->tick[at].packets;
			erring += p->tick[at].errors > 0;
			if (p->tick[at].util > util)
				util = p->tick[at].util;
		}
		if (erring < 2 || util >= b->util)
			continue;
		/* errors with no packets counted: a link that carries nothing
		 * whole, as lossy as it gets */
		share = packets > 0 ? errors / packets : 1;
		if (share < b->error_share)
			continue;
		out[k].kind = EVENT_LOSSY_LINK;
		snprintf(out[k].subject, sizeof(out[k].subject), "%s", p->subject);
		out[k].score = share / b->error_share;
		out[k].weight = VERDICT_AT_ONCE;
		snprintf(out[k].evidence, sizeof(out[k].evidence),
			 "{\"errors\":%.0f,\"packets\":%.0f,\"error_share\":%.3g,"
			 "\"erring_ticks\":%u,\"utilisation_max\":%.3f}",
			 errors, packets, share, erring, util);
		k++;
	}
	return k;
}
