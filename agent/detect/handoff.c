/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "agent/detect/handoff.h"
#include "agent/lib/name_find.h"

/* name_find() reads a peer's name as its record's start */
_Static_assert(offsetof(struct handoff_peer, peer) == 0, "a handoff_peer starts with its name");

static struct handoff_peer *handoff_find(struct handoff_history *h, const char *peer)
{
	size_t i = name_find(h->peers, h->n, sizeof(h->peers[0]), peer, &h->hint);

	if (i < h->n)
		return &h->peers[i];
	if (h->n == HANDOFF_PEERS || strlen(peer) >= sizeof(h->peers[0].peer))
		return NULL;
	memset(&h->peers[h->n], 0, sizeof(h->peers[0]));
	snprintf(h->peers[h->n].peer, sizeof(h->peers[0].peer), "%s", peer);
	h->peers[h->n].stalled_ms = INT64_MIN / 2;
	return &h->peers[h->n++];
}

/* Whether a sample of these seconds and goodput is slow for p (header):
 * never before p has a baseline. */
static int handoff_slow(const struct handoff_peer *p, double seconds, double goodput,
			const struct handoff_bounds *b)
{
	double baseline = window_median(&p->baseline, 0, p->baseline.count);

	return p->baseline.count >= HANDOFF_BASELINE_MIN && seconds >= b->ratio * baseline &&
	       seconds - baseline >= b->extra_s &&
	       goodput * b->ratio <=
		       window_median(&p->baseline_goodput, 0, p->baseline_goodput.count);
}

void handoff_history_update(struct handoff_history *h, const struct handoff_input *in, size_t n,
			    const struct handoff_bounds *b, int64_t window_ms, int64_t now_ms)
{
	size_t kept = 0;

	for (size_t i = 0; i < n; i++) {
		struct handoff_peer *p;

		if ((in[i].transfers <= 0 && !in[i].stalled) || !(p = handoff_find(h, in[i].peer)))
			continue;
		if (in[i].stalled)
			p->stalled_ms = now_ms;
		if (now_ms - p->stalled_ms <= STALL_AFTERMATH_MS)
			continue;
		if (in[i].transfers <= 0)
			continue;
		/* both are per second over the same tick: their ratio is the mean */
		window_add(&p->seconds, in[i].seconds / in[i].transfers);
		window_add(&p->goodput, in[i].goodput);
		p->last_ms = now_ms;
		if (p->seconds.count > HANDOFF_RECENT) {
			double left = window_median(&p->seconds, HANDOFF_RECENT, 1),
			       left_goodput = window_median(&p->goodput, HANDOFF_RECENT, 1);

			if (!handoff_slow(p, left, left_goodput, b)) {
				window_add(&p->baseline, left);
				window_add(&p->baseline_goodput, left_goodput);
			}
		}
	}
	for (size_t i = 0; i < h->n; i++)
		if (now_ms - h->peers[i].last_ms <= window_ms ||
		    now_ms - h->peers[i].stalled_ms <= window_ms)
			h->peers[kept++] = h->peers[i];
	h->n = kept;
}

size_t detect_handoff(const struct handoff_history *h, const struct handoff_bounds *b,
		      size_t active_paths, int64_t window_ms, int64_t now_ms,
		      struct event_verdict *out, size_t max)
{
	size_t k = 0;

	if (active_paths >= 3)
		return 0;
	for (size_t i = 0; i < h->n && k < max; i++) {
		const struct handoff_peer *p = &h->peers[i];
		double recent, recent_goodput, baseline;
		struct event_verdict *v;

		if (now_ms - p->last_ms > window_ms || p->seconds.count < HANDOFF_RECENT ||
		    p->baseline.count < HANDOFF_BASELINE_MIN)
			continue;
		recent = window_median(&p->seconds, 0, HANDOFF_RECENT);
		recent_goodput = window_median(&p->goodput, 0, HANDOFF_RECENT);
		baseline = window_median(&p->baseline, 0, p->baseline.count);
		if (!handoff_slow(p, recent, recent_goodput, b))
			continue;
		v = &out[k++];
		v->score = recent / baseline / b->ratio;
		v->weight = VERDICT_OVER;
		snprintf(v->evidence, sizeof(v->evidence),
			 "{\"transfer_seconds\":%.4f,\"baseline_seconds\":%.4f,"
			 "\"ratio\":%.2f,\"goodput_bytes_per_second\":%.0f,"
			 "\"baseline_goodput_bytes_per_second\":%.0f}",
			 recent, baseline, recent / baseline, recent_goodput,
			 window_median(&p->baseline_goodput, 0, p->baseline_goodput.count));
		v->kind = EVENT_SLOW_HANDOFF;
		snprintf(v->subject, sizeof(v->subject), "peer=%s", p->peer);
	}
	return k;
}
