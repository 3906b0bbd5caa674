/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "detect_path.h"

/* Samples an incast verdict looks at: a collapse shows within a few transfers. */
#define PATH_INCAST_SAMPLES 3
/*
 * A straggler is judged on what its link gives at its best, the upper
 * quartile of its samples: what lowers a healthy link's samples (a sender or
 * receiver not scheduled, an application-limited moment, a small window)
 * comes and goes, while a slow link caps every sample.
 */
#define PATH_STRAGGLER_QUANTILE 0.75

static struct path_peer *path_find(struct path_history *h, const char *peer)
{
	for (size_t i = 0; i < h->n; i++)
		if (strcmp(h->peers[i].peer, peer) == 0)
			return &h->peers[i];
	if (h->n == PATH_PEERS || strlen(peer) >= sizeof(h->peers[0].peer))
		return NULL;
	memset(&h->peers[h->n], 0, sizeof(h->peers[0]));
	snprintf(h->peers[h->n].peer, sizeof(h->peers[0].peer), "%s", peer);
	h->peers[h->n].stalled_ms = INT64_MIN / 2;
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
		if ((in[i].rate <= 0 && !in[i].stalled) || !(p = path_find(h, in[i].peer)))
			continue;
		if (in[i].stalled)
			p->stalled_ms = now_ms;
		if (in[i].rate <= 0 || now_ms - p->stalled_ms <= STALL_AFTERMATH_MS)
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
		if (now_ms - h->peers[i].last_ms <= window_ms ||
		    now_ms - h->peers[i].stalled_ms <= window_ms)
			h->peers[kept++] = h->peers[i];
	h->n = kept;
}

/* A peer with samples, the last within the window. */
static int path_active(const struct path_peer *p, int64_t window_ms, int64_t now_ms)
{
	return p->rate.count > 0 && now_ms - p->last_ms <= window_ms;
}

size_t path_history_active(const struct path_history *h, int64_t window_ms, int64_t now_ms)
{
	size_t n = 0;

	for (size_t i = 0; i < h->n; i++)
		n += path_active(&h->peers[i], window_ms, now_ms);
	return n;
}

size_t detect_path(const struct path_history *h, const struct path_config *cfg, int64_t now_ms,
		   struct event_verdict *out, size_t max)
{
	/* each active peer's median and upper quartile */
	static double typical[2][PATH_PEERS], others[PATH_PEERS];
	size_t k = 0;

	for (size_t i = 0; i < h->n; i++) {
		const struct window *w = &h->peers[i].rate;

		if (!path_active(&h->peers[i], cfg->window_ms, now_ms))
			continue;
		typical[0][i] = window_median(w, 0, w->count);
		typical[1][i] = window_quantile(w, 0, w->count, PATH_STRAGGLER_QUANTILE);
	}
	for (size_t i = 0; i < h->n && k < max; i++) {
		const struct path_peer *p = &h->peers[i];
		int incast = p->fanout >= 2;
		double bound = incast ? cfg->incast_fraction : cfg->straggler_fraction;
		unsigned samples = incast ? PATH_INCAST_SAMPLES : PATH_SAMPLES;
		double q = incast ? 0.5 : PATH_STRAGGLER_QUANTILE;
		size_t m = 0;
		double rate, mid, share;
		struct event_verdict *v;

		/* a full set: a new connection's first samples are its slow start */
		if (p->rate.count < samples || !path_active(p, cfg->window_ms, now_ms))
			continue;
		for (size_t j = 0; j < h->n; j++)
			if (j != i && path_active(&h->peers[j], cfg->window_ms, now_ms))
				others[m++] = typical[!incast][j];
		if (m < 2)
			continue;
		mid = quantile_of(others, (unsigned)m, 0.5);
		rate = window_quantile(&p->rate, 0, samples, q);
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
