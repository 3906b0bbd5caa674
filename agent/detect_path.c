/* SPDX-License-Identifier: MIT */
#include <math.h>
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
/*
 * ...and on its share of the others' medians too, which must be under the
 * bound times this. A healthy link's upper quartile can fall under the bound
 * of the others' upper quartiles when theirs are bursts: a ring link that
 * comes back from a slow spell catches up at several times the port rate,
 * and ACKs that come compressed read the same way (t_straggler named a
 * healthy peer so after the slow port was restored, in about 1 run of 10:
 * its share 0.525 of an others' median of 45 MB/s on 25 MB/s ports). A
 * median is not moved by such bursts. The margin keeps a slow link named as
 * soon as before: while its window still holds samples from before it
 * slowed, its share of the medians runs 0.05-0.15 above its share of the
 * upper quartiles (t_straggler, 100 ms ticks).
 */
#define PATH_STRAGGLER_MEDIAN_MARGIN 1.25

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
		if ((in[i].rate <= 0 && in[i].goodput <= 0 && !in[i].stalled) ||
		    !(p = path_find(h, in[i].peer)))
			continue;
		if (in[i].stalled)
			p->stalled_ms = now_ms;
		if (now_ms - p->stalled_ms <= STALL_AFTERMATH_MS ||
		    (in[i].rate <= 0 && in[i].goodput <= 0))
			continue;
		if (in[i].acked > 0 || in[i].retransmits > 0) {
			p->loss = in[i].acked > 0 ? in[i].retransmits / in[i].acked : INFINITY;
			p->loss_ms = now_ms;
		}
		if (in[i].goodput > 0)
			window_add(&p->goodput, in[i].goodput);
		if (in[i].rate > 0)
			window_add(&p->rate, in[i].rate);
		/* the largest within the window: at the tail of an all-to-all only
		 * the slow peer still takes data, so one tick's fan-out reads 1 */
		if (in[i].fanout > 0 &&
		    (in[i].fanout >= p->fanout || now_ms - p->fanout_ms > window_ms)) {
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

/* A peer with delivery rate samples, the last within the window. */
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

/*
 * The median of v[j] over the peers other than i where it is not NAN, and
 * in *ret_m how many those are; NAN when fewer than two.
 */
static double path_others_median(const struct path_history *h, size_t i, const double *v,
				 size_t *ret_m)
{
	static double others[PATH_PEERS];
	size_t m = 0;

	for (size_t j = 0; j < h->n; j++)
		if (j != i && !isnan(v[j]))
			others[m++] = v[j];
	*ret_m = m;
	return m < 2 ? NAN : quantile_of(others, (unsigned)m, 0.5);
}

/*
 * Peer i's share of what the other active peers' paths give: the q-quantile
 * of its newest k samples in the window its w picks over the median of the
 * others' typical[j] (NAN: none). NAN when it cannot be judged: fewer than k
 * samples, or fewer than two others. *ret_mid and *ret_m: that median and
 * how many others.
 */
static double path_share(const struct path_history *h, size_t i, int goodput, const double *typical,
			 unsigned k, double q, double *ret_mid, size_t *ret_m)
{
	const struct window *w = goodput ? &h->peers[i].goodput : &h->peers[i].rate;
	size_t m;
	double mid;

	if (w->count < k)
		return NAN;
	mid = path_others_median(h, i, typical, &m);
	if (isnan(mid))
		return NAN;
	*ret_mid = mid;
	*ret_m = m;
	return mid > 0 ? window_quantile(w, 0, k, q) / mid : NAN;
}

/*
 * Whether peer i's path is losing this tick (header): loss[] holds each
 * active peer's last, NAN where it has none. The others' may be older than
 * this tick: an all-to-all waiting on one receiver moves nothing else.
 * *ret_ratio: its loss over the others' median (INFINITY when that is 0).
 */
static int path_lossy(const struct path_history *h, size_t i, const double *loss, double bound,
		      int64_t now_ms, double *ret_ratio)
{
	size_t m;
	double mid;

	if (h->peers[i].loss_ms != now_ms || loss[i] < PATH_LOSS_FLOOR)
		return 0;
	mid = path_others_median(h, i, loss, &m);
	if (isnan(mid))
		return 0;
	*ret_ratio = mid > 0 ? loss[i] / mid : INFINITY;
	return loss[i] * bound >= mid;
}

size_t detect_path(struct path_history *h, const struct path_config *cfg, int64_t now_ms,
		   struct event_verdict *out, size_t max)
{
	/*
	 * Each active peer's typical reading, NAN where it has none: the upper
	 * quartile of its delivery rate (a straggler's measure), the median of
	 * its transfer goodput and of its delivery rate (an incast's).
	 */
	static double rate_q3[PATH_PEERS], goodput_mid[PATH_PEERS], rate_mid[PATH_PEERS],
		loss[PATH_PEERS];
	static struct event_verdict incasts[PATH_PEERS];
	static unsigned char over[PATH_PEERS]; /* judged this tick */
	static size_t who[PATH_PEERS]; /* incasts[j] is peer who[j]'s */
	struct event_verdict slowest = { 0 };
	struct path_peer *slow = NULL;
	size_t k = 0, nincast = 0;
	int losing = 0;

	for (size_t i = 0; i < h->n; i++) {
		const struct window *g = &h->peers[i].goodput, *r = &h->peers[i].rate;
		int active = path_active(&h->peers[i], cfg->window_ms, now_ms);

		rate_q3[i] =
			active ? window_quantile(r, 0, r->count, PATH_STRAGGLER_QUANTILE) : NAN;
		rate_mid[i] = active ? window_median(r, 0, r->count) : NAN;
		goodput_mid[i] = active && g->count ? window_median(g, 0, g->count) : NAN;
		loss[i] = active && h->peers[i].loss_ms ? h->peers[i].loss : NAN;
	}
	memset(over, 0, h->n);
	for (size_t i = 0; i < h->n; i++) {
		struct path_peer *p = &h->peers[i];
		int incast = p->fanout >= 2, lossy = 0, at_once = 0;
		double bound = incast ? cfg->incast_fraction : cfg->straggler_fraction;
		double share, mid = 0, rate_share, rate_mid_others = 0, loss_ratio = 0;
		const char *measure = incast ? "goodput_share" : "delivery_rate_share";
		size_t m = 0, m2 = 0;
		struct event_verdict *v;

		if (!path_active(p, cfg->window_ms, now_ms))
			continue;
		if (incast) {
			/* this tick's own rate sample, if it brought one */
			double now_share = p->last_ms == now_ms
						   ? path_share(h, i, 0, rate_mid, 1, 0.5,
								&rate_mid_others, &m2)
						   : NAN;

			/* a loss burst at speed is a queue's moment, not an incast
			 * (one in a clean all-gather lasted 4 ticks) */
			lossy = now_share < PATH_LOSS_RATE_SHARE &&
				path_lossy(h, i, loss, bound, now_ms, &loss_ratio);
			share = path_share(h, i, 1, goodput_mid, PATH_INCAST_SAMPLES, 0.5, &mid,
					   &m);
			rate_share = path_share(h, i, 0, rate_mid, PATH_INCAST_SAMPLES, 0.5,
						&rate_mid_others, &m2);
			/* both must agree: the rate estimate jumps past any link
			 * when ACKs come compressed; goodput to a peer mixes its
			 * senders, one of which may wait on a congested ACK path */
			if (isnan(rate_share) || rate_share >= bound || isnan(share) ||
			    share >= bound) {
				/* a losing path's run goes on while it stays slow */
				if (lossy) {
					share = now_share;
					measure = "delivery_rate_share_now";
					/* losing while it delivers under the bound:
					 * no queue's moment does both */
					at_once = now_share < bound;
				} else if (p->lossy_run && rate_share < PATH_LOSS_RATE_SHARE) {
					share = rate_share;
					measure = "delivery_rate_share";
				} else {
					continue;
				}
				mid = rate_mid_others;
				m = m2;
			}
		} else {
			double of_mid, mid2;

			share = path_share(h, i, 0, rate_q3, PATH_SAMPLES, PATH_STRAGGLER_QUANTILE,
					   &mid, &m);
			if (isnan(share) || share >= bound)
				continue;
			of_mid = path_share(h, i, 0, rate_mid, PATH_SAMPLES,
					    PATH_STRAGGLER_QUANTILE, &mid2, &m2);
			if (!(of_mid < bound * PATH_STRAGGLER_MEDIAN_MARGIN))
				continue;
		}
		/* a ring runs at the speed of its slowest link, and that link's
		 * queue delays the ACKs of the next one too: only the slowest
		 * ring peer is the straggler */
		if (incast) {
			who[nincast] = i;
			v = &incasts[nincast++];
			over[i] = 1 + lossy;
		} else {
			v = &slowest;
			if (slow && bound / share <= v->score)
				continue;
			slow = &h->peers[i];
		}
		v->kind = incast ? EVENT_INCAST : EVENT_STRAGGLER;
		v->at_once = at_once;
		snprintf(v->subject, sizeof(v->subject), "peer=%s", p->peer);
		v->score = share > 0 ? bound / share : bound * 1e6;
		snprintf(v->evidence, sizeof(v->evidence),
			 "{\"%s\":%.3f,\"others_median_bytes_per_second\":%.0f,"
			 "\"loss_over_others\":%.3g,\"sender_fanout\":%.0f,\"peers\":%zu}",
			 measure, share, mid, fmin(loss_ratio, 1e9), p->fanout, m + 1);
	}
	if (slow)
		over[slow - h->peers] = 1;
	for (size_t i = 0; i < h->n; i++) {
		struct path_peer *p = &h->peers[i];

		if (!over[i]) {
			p->over_ticks = 0;
			p->lossy_run = 0;
		} else if (p->over_ms != now_ms) {
			p->over_ticks++;
		}
		p->lossy_run |= over[i] == 2;
		p->over_ms = now_ms;
	}
	/* while one receiver's path loses, another that only runs slow waits
	 * on it: its senders are the same, held up by the losing one */
	for (size_t j = 0; j < nincast; j++)
		losing |= h->peers[who[j]].lossy_run;
	for (size_t j = 0; j < nincast && k < max; j++)
		if (h->peers[who[j]].lossy_run ||
		    (!losing && h->peers[who[j]].over_ticks >= PATH_INCAST_TICKS))
			out[k++] = incasts[j];
	if (slow && slow->over_ticks >= PATH_STRAGGLER_TICKS && k < max)
		out[k++] = slowest;
	return k;
}
