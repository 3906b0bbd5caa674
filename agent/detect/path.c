/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "agent/detect/path.h"
#include "agent/lib/name_find.h"

/* Samples an incast verdict looks at: a collapse shows within a few transfers. */
#define PATH_INCAST_SAMPLES 3
/* Busy rate samples a peer's typical rate is the median of. */
#define PATH_BUSY_TYPICAL 3

/* name_find() reads a peer's name as its record's start */
_Static_assert(offsetof(struct path_peer, peer) == 0, "a path_peer starts with its name");

/* The peer's history; a new one when create is set and there is room. */
static struct path_peer *path_find(struct path_history *h, const char *peer, int create)
{
	size_t i = name_find(h->peers, h->n, sizeof(h->peers[0]), peer, &h->hint);

	if (i < h->n)
		return &h->peers[i];
	if (!create || h->n == PATH_PEERS || strlen(peer) >= sizeof(h->peers[0].peer))
		return NULL;
	memset(&h->peers[h->n], 0, sizeof(h->peers[0]));
	snprintf(h->peers[h->n].peer, sizeof(h->peers[0].peer), "%s", peer);
	h->peers[h->n].stalled_ms = INT64_MIN / 2;
	h->peers[h->n].lost_ms = INT64_MIN / 2;
	return &h->peers[h->n++];
}

void path_history_update(struct path_history *h, const struct path_input *in, size_t n,
			 int64_t window_ms, int64_t now_ms)
{
	size_t kept = 0;

	for (size_t i = 0; i < n; i++) {
		/* bulk ticks only (a delivery rate: 64 KiB acknowledged): a
		 * tick busy with little acknowledged is a loss's recovery or a
		 * request, not what the path gives (a clean bench run named a
		 * straggler at 0.008 of the others from such ticks) */
		double busy_rate = in[i].busy >= PATH_BUSY_MIN && in[i].acked > 0 && in[i].rate > 0
					   ? in[i].acked / in[i].busy
					   : 0;
		int sampled = in[i].rate > 0 || in[i].goodput > 0 || busy_rate > 0;
		/* a tick the peer left unread is no straggler's (header) */
		double acked = in[i].unread ? 0 : in[i].acked, busy = in[i].unread ? 0 : in[i].busy;
		double prev_acked, prev_busy;
		struct path_peer *p;

		/* a rate of 0 is a connection with no sample yet, not a dead path:
		 * a dead path is the stall detector's */
		if (!(p = path_find(h, in[i].peer, sampled || in[i].stalled)))
			continue;
		prev_acked = p->prev_acked;
		prev_busy = p->prev_busy;
		p->prev_acked = acked;
		p->prev_busy = busy;
		p->input_ms = now_ms;
		if (in[i].stalled)
			p->stalled_ms = now_ms;
		if (in[i].window_limited > 0)
			p->held_ms = now_ms;
		if (now_ms - p->stalled_ms <= STALL_AFTERMATH_MS || !sampled)
			continue;
		if (in[i].acked > 0 || in[i].retransmits > 0) {
			p->loss = in[i].acked > 0 ? in[i].retransmits / in[i].acked : INFINITY;
			p->loss_ms = now_ms;
			if (p->loss >= PATH_LOSS_FLOOR)
				p->lost_ms = now_ms;
		}
		p->upstream_rate = in[i].upstream_rate;
		/* the straggler's samples (header) */
		if (busy_rate > 0 && !in[i].unread) {
			window_add(&p->busy, busy_rate);
			p->busy_ms = now_ms;
			p->busy_alone =
				now_ms - p->lost_ms <= PATH_STRAGGLER_LOSS_MS
					? fmin(busy_rate, (acked + prev_acked) / (busy + prev_busy))
					: busy_rate;
			p->busy_now = fmax(p->busy_alone, in[i].rate);
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

/* Sorts m's readings of h's peers. */
static void path_measure_sort(const struct path_history *h, struct path_measure *m)
{
	m->n = 0;
	for (size_t j = 0; j < h->n; j++)
		if (!isnan(m->v[j]))
			m->sorted[m->n++] = m->v[j];
	sort_values(m->sorted, m->n);
}

/*
 * The median of m's readings of the peers other than i, and in *ret_m how
 * many those are; NAN when fewer than two.
 */
static double path_others_median(const struct path_measure *m, size_t i, size_t *ret_m)
{
	*ret_m = m->n - !isnan(m->v[i]);
	return *ret_m < 2 ? NAN : quantile_without(m->sorted, m->n, m->v[i], 0.5);
}

/*
 * Peer i's share of what the other active peers' paths give: the q-quantile
 * of its newest k samples in the window its w picks over the median of the
 * others' typical readings. NAN when it cannot be judged: fewer than k
 * samples, or fewer than two others. *ret_mid and *ret_m: that median and
 * how many others.
 */
static double path_share(const struct path_history *h, size_t i, int goodput,
			 const struct path_measure *typical, unsigned k, double q, double *ret_mid,
			 size_t *ret_m)
{
	const struct window *w = goodput ? &h->peers[i].goodput : &h->peers[i].rate;
	size_t m;
	double mid;

	if (w->count < k)
		return NAN;
	mid = path_others_median(typical, i, &m);
	if (isnan(mid))
		return NAN;
	*ret_mid = mid;
	*ret_m = m;
	return mid > 0 ? window_quantile(w, 0, k, q) / mid : NAN;
}

/*
 * Peer i's last loss over the median of the other active peers' (loss holds
 * each one's last; INFINITY when theirs is 0), for an incast's evidence: 0
 * when it has none or no others.
 */
static double path_loss_ratio(const struct path_measure *loss, size_t i)
{
	size_t m;
	double mid = path_others_median(loss, i, &m);

	if (isnan(loss->v[i]) || isnan(mid))
		return 0;
	return mid > 0 ? loss->v[i] / mid : loss->v[i] > 0 ? INFINITY : 0;
}

/* Whether rate, one of ring peer i's neighbours' (0: none), is under bound
 * times the median of the other peers' typical busy rates. */
static int path_under(const struct path_measure *typical, size_t i, double rate, double bound)
{
	size_t m;

	return rate > 0 && rate < bound * path_others_median(typical, i, &m);
}

/*
 * Of two ring peers under the straggler bound, whether a is named before b
 * (header): one whose path lost data lately, then the one named the tick
 * before, then the lower typical busy rate, then the lower sample.
 */
static int path_slower(const struct path_history *h, size_t a, size_t b,
		       const struct path_measure *typical, int64_t now_ms)
{
	const struct path_peer *pa = &h->peers[a], *pb = &h->peers[b];
	int lost_a = now_ms - pa->lost_ms <= PATH_STRAGGLER_LOSS_MS,
	    lost_b = now_ms - pb->lost_ms <= PATH_STRAGGLER_LOSS_MS;
	int named_a = strcmp(pa->peer, h->straggler) == 0,
	    named_b = strcmp(pb->peer, h->straggler) == 0;

	if (lost_a != lost_b)
		return lost_a;
	if (named_a != named_b)
		return named_a;
	if (typical->v[a] != typical->v[b])
		return typical->v[a] < typical->v[b];
	return pa->busy_now < pb->busy_now;
}

/*
 * Ring peer i's busy rate this tick over the median of the others' typical
 * ones, into *ret_mid and *ret_m as path_share(); NAN where it is not
 * judged (header).
 */
static double path_ring_share(const struct path_history *h, size_t i, int64_t now_ms,
			      const struct path_measure *typical, const struct path_measure *moving,
			      double *ret_mid, size_t *ret_m)
{
	const struct path_peer *p = &h->peers[i];
	double mid;

	if (p->fanout >= 2 || p->busy_ms != now_ms || p->busy.count < PATH_STRAGGLER_SAMPLES)
		return NAN;
	/* the others stopped: the ring's stall, not a slow link (header) */
	if (path_others_median(moving, i, ret_m) < PATH_BUSY_MIN)
		return NAN;
	mid = path_others_median(typical, i, ret_m);
	*ret_mid = mid;
	return mid > 0 ? p->busy_now / mid : NAN;
}

/* A straggler verdict of the given weight on peer p, at share of the others. */
static void path_straggler_verdict(struct event_verdict *v, const struct path_peer *p,
				   const struct path_config *cfg, enum verdict_weight weight,
				   double share, double mid, size_t m)
{
	v->kind = EVENT_STRAGGLER;
	v->weight = weight;
	snprintf(v->subject, sizeof(v->subject), "peer=%s", p->peer);
	v->score = share > 0 ? cfg->straggler_fraction / share : cfg->straggler_fraction * 1e6;
	snprintf(v->evidence, sizeof(v->evidence),
		 "{\"busy_rate_share\":%.3f,\"others_median_bytes_per_second\":%.0f,"
		 "\"sender_fanout\":%.0f,\"peers\":%zu}",
		 share, mid, p->fanout, m + 1);
}

/*
 * The straggler among the ring peers, if any (header), from each peer's
 * typical busy rate in typical, then the holds: at most max verdicts into
 * out; returns how many.
 */
static size_t path_straggler(struct path_history *h, const struct path_config *cfg, int64_t now_ms,
			     const struct path_measure *typical, const struct path_measure *moving,
			     struct event_verdict *out, size_t max)
{
	/* each ring peer's share this tick (NAN: not judged), and the
	 * median and count of the others it was set against */
	double *share = h->scratch.share, *mid = h->scratch.mid,
	       *held_share = h->scratch.held_share;
	size_t *others = h->scratch.others;
	double hold = (1 + cfg->straggler_fraction) / 2;
	size_t slow = h->n, held = h->n, k = 0;

	for (size_t i = 0; i < h->n; i++) {
		share[i] = path_ring_share(h, i, now_ms, typical, moving, &mid[i], &others[i]);
		/* a hold reads the busy rate alone (header) */
		held_share[i] = isnan(share[i]) ? NAN : h->peers[i].busy_alone / mid[i];
		if (h->peers[i].straggling && held_share[i] < hold)
			held = i;
		/* its sender's port is slow inbound: its ACKs wait there (header) */
		if (!(share[i] < cfg->straggler_fraction) ||
		    path_under(typical, i, h->peers[i].upstream_rate, PATH_UPSTREAM_SHARE) ||
		    (slow < h->n && !path_slower(h, i, slow, typical, now_ms)))
			continue;
		slow = i;
	}
	snprintf(h->straggler, sizeof(h->straggler), "%s",
		 slow < h->n   ? h->peers[slow].peer
		 : held < h->n ? h->peers[held].peer
			       : "");
	if (slow < h->n && k < max)
		path_straggler_verdict(&out[k++], &h->peers[slow], cfg, VERDICT_OVER, share[slow],
				       mid[slow], others[slow]);
	/* after the straggler, so that max leaves these out first; only a
	 * peer named since it last read over the hold bound can have one open */
	for (size_t i = 0; i < h->n; i++) {
		h->peers[i].straggling =
			i == slow || (h->peers[i].straggling && held_share[i] < hold);
		if (i != slow && h->peers[i].straggling && k < max)
			path_straggler_verdict(&out[k++], &h->peers[i], cfg, VERDICT_HOLD,
					       held_share[i], mid[i], others[i]);
	}
	return k;
}

size_t detect_path(struct path_history *h, const struct path_config *cfg, int64_t now_ms,
		   struct event_verdict *out, size_t max)
{
	/*
	 * Each active peer's typical reading, NAN where it has none: the
	 * median of its transfer goodput and of its delivery rate, and its
	 * last loss.
	 */
	struct path_measure *goodput_mid = &h->scratch.goodput_mid,
			    *rate_mid = &h->scratch.rate_mid, *loss = &h->scratch.loss;
	/* and the median of its newest PATH_BUSY_TYPICAL busy rates, and
	 * its busy seconds per second this tick (0 when not in the input) */
	struct path_measure *busy_typical = &h->scratch.busy_typical, *moving = &h->scratch.moving;
	unsigned char *over = h->scratch.over; /* judged this tick */
	size_t k = 0;

	for (size_t i = 0; i < h->n; i++) {
		const struct window *g = &h->peers[i].goodput, *r = &h->peers[i].rate,
				    *b = &h->peers[i].busy;
		int active = path_active(&h->peers[i], cfg->window_ms, now_ms);

		rate_mid->v[i] = active ? window_median(r, 0, r->count) : NAN;
		goodput_mid->v[i] = active && g->count ? window_median(g, 0, g->count) : NAN;
		loss->v[i] = active && h->peers[i].loss_ms ? h->peers[i].loss : NAN;
		busy_typical->v[i] =
			b->count && now_ms - h->peers[i].busy_ms <= cfg->window_ms
				? window_median(b, 0,
						b->count < PATH_BUSY_TYPICAL ? b->count
									     : PATH_BUSY_TYPICAL)
				: NAN;
		moving->v[i] =
			active ? (h->peers[i].input_ms == now_ms ? h->peers[i].prev_busy : 0) : NAN;
	}
	path_measure_sort(h, goodput_mid);
	path_measure_sort(h, rate_mid);
	path_measure_sort(h, loss);
	path_measure_sort(h, busy_typical);
	path_measure_sort(h, moving);
	memset(over, 0, h->n);
	for (size_t i = 0; i < h->n; i++) {
		struct path_peer *p = &h->peers[i];
		double bound = cfg->incast_fraction;
		double share, mid = 0, rate_share, rate_mid_others = 0;
		size_t m = 0, m2 = 0;
		struct event_verdict *v;

		if (p->fanout < 2 || !path_active(p, cfg->window_ms, now_ms) ||
		    p->held_ms == now_ms)
			continue;
		share = path_share(h, i, 1, goodput_mid, PATH_INCAST_SAMPLES, 0.5, &mid, &m);
		rate_share = path_share(h, i, 0, rate_mid, PATH_INCAST_SAMPLES, 0.5,
					&rate_mid_others, &m2);
		/* both must agree: the rate estimate jumps past any link when
		 * ACKs come compressed; goodput to a peer mixes its senders, one
		 * of which may wait on a congested ACK path */
		if (isnan(rate_share) || rate_share >= bound || isnan(share) || share >= bound)
			continue;
		over[i] = 1;
		/* its run of ticks under, this one counted once */
		if (p->over_ticks + (p->over_ms != now_ms) < PATH_INCAST_TICKS ||
		    now_ms - (p->over_ticks ? p->over_start_ms : now_ms) < cfg->incast_for_ms ||
		    k == max)
			continue;
		v = &out[k++];
		v->kind = EVENT_INCAST;
		v->weight = VERDICT_OVER;
		snprintf(v->subject, sizeof(v->subject), "peer=%s", p->peer);
		v->score = share > 0 ? bound / share : bound * 1e6;
		snprintf(v->evidence, sizeof(v->evidence),
			 "{\"goodput_share\":%.3f,\"delivery_rate_share\":%.3f,"
			 "\"others_median_bytes_per_second\":%.0f,\"loss_over_others\":%.3g,"
			 "\"sender_fanout\":%.0f,\"peers\":%zu}",
			 share, rate_share, mid, fmin(path_loss_ratio(loss, i), 1e9), p->fanout,
			 m + 1);
	}
	for (size_t i = 0; i < h->n; i++) {
		struct path_peer *p = &h->peers[i];

		if (!over[i])
			p->over_ticks = 0;
		else if (p->over_ms != now_ms && !p->over_ticks++)
			p->over_start_ms = now_ms;
		p->over_ms = now_ms;
	}
	return k + path_straggler(h, cfg, now_ms, busy_typical, moving, out + k, max - k);
}
