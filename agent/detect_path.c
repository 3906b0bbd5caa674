/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "detect_path.h"

/* Samples an incast verdict looks at: a collapse shows within a few transfers. */
#define PATH_INCAST_SAMPLES 3

static struct path_peer *path_find(struct path_history *h, const char *peer)
{
	for (size_t i = 0; i < h->n; i++)
		if (strcmp(h->peers[i].peer, peer) == 0)
			return &h->peers[i];
	if (h->n == PATH_PEERS || strlen(peer) >= sizeof(h->peers[0].peer))
		return NULL;
	memset(&h->peers[h->n], 0, sizeof(h->peers[0]));
	snprintf(h->peers[h->n].peer, sizeof(h->peers[0].peer), "%s", peer);
	return &h->peers[h->n++];
}

void path_history_update(struct path_history *h, const struct path_input *in, size_t n,
			 int64_t window_ms, int64_t now_ms)
{
	size_t kept = 0;

	for (size_t i = 0; i < n; i++) {
		struct path_peer *p;

		/* a rate of 0 is a connection with no sample yet, not a dead path:
		 * a dead path is the stall detector's */
		if (in[i].rate <= 0 || !(p = path_find(h, in[i].peer)))
			continue;
		window_add(&p->rate, in[i].rate);
		/* the largest within the window: at the tail of an all-to-all only
		 * the slow peer still takes data, so one tick's fan-out reads 1 */
		if (in[i].fanout >= p->fanout || now_ms - p->fanout_ms > window_ms) {
			p->fanout = in[i].fanout;
			p->fanout_ms = now_ms;
		}
		p->last_ms = now_ms;
	}
	for (size_t i = 0; i < h->n; i++)
		if (now_ms - h->peers[i].last_ms <= window_ms)
			h->peers[kept++] = h->peers[i];
	h->n = kept;
}

size_t detect_path(const struct path_history *h, const struct path_config *cfg, int64_t now_ms,
		   struct event_verdict *out, size_t max)
{
	static double typical[PATH_PEERS], others[PATH_PEERS];
	size_t k = 0;

	for (size_t i = 0; i < h->n; i++)
		typical[i] = window_median(&h->peers[i].rate, 0, h->peers[i].rate.count);
	for (size_t i = 0; i < h->n && k < max; i++) {
		const struct path_peer *p = &h->peers[i];
		int incast = p->fanout >= 2;
		double bound = incast ? cfg->incast_fraction : cfg->straggler_fraction;
		unsigned samples = incast ? PATH_INCAST_SAMPLES : PATH_SAMPLES;
		size_t m = 0;
		double rate, mid, share;
		struct event_verdict *v;

		/* a full set: a new connection's first samples are its slow start */
		if (p->rate.count < samples || now_ms - p->last_ms > cfg->window_ms)
			continue;
		for (size_t j = 0; j < h->n; j++)
			if (j != i && now_ms - h->peers[j].last_ms <= cfg->window_ms)
				others[m++] = typical[j];
		if (m < 2)
			continue;
		mid = median_of(others, (unsigned)m);
		rate = window_median(&p->rate, 0, samples);
		share = rate / mid;
		if (mid <= 0 || share >= bound)
			continue;
		v = &out[k++];
		v->kind = incast ? EVENT_INCAST : EVENT_STRAGGLER;
		snprintf(v->subject, sizeof(v->subject), "peer=%s", p->peer);
		v->score = share > 0 ? bound / share : bound * 1e6;
		snprintf(v->evidence, sizeof(v->evidence),
			 "{\"delivery_rate_bytes_per_second\":%.0f,\"others_median\":%.0f,"
			 "\"share\":%.3f,\"sender_fanout\":%.0f,\"peers\":%zu}",
			 rate, mid, share, p->fanout, m + 1);
	}
	return k;
}
