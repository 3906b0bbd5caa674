/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/detect/mesh.h"
#include "agent/lib/name_find.h"
#include "agent/registry/label_text.h"
#include "collector/mesh/mesh_knock.h"
#include "collector/metric_names.h"

enum mesh_family {
	F_SENT,
	F_LOST,
	F_QUEUED,
	F_LOST_QUEUED,
	F_RTT_SUM,
	F_RTT_COUNT,
	F_DELAY,
	F_LAST_ANSWER,
	F_KERNEL_SILENT,
	F_FLOW_LOST,
	F_FLOW_RTT,
	F_HOP,
	F_NONE
};

static const char *const mesh_families[F_NONE] = {
	[F_SENT] = M_MESH_PROBES_SENT_TOTAL,
	[F_LOST] = M_MESH_PROBES_LOST_TOTAL,
	[F_QUEUED] = M_MESH_PROBES_QUEUED_TOTAL,
	[F_LOST_QUEUED] = M_MESH_PROBES_LOST_QUEUED_TOTAL,
	[F_RTT_SUM] = M_MESH_RTT_SECONDS_SUM,
	[F_RTT_COUNT] = M_MESH_RTT_SECONDS_COUNT,
	[F_DELAY] = M_MESH_RESPONDER_DELAY_SECONDS_TOTAL,
	[F_LAST_ANSWER] = M_MESH_LAST_ANSWER_TIMESTAMP_SECONDS,
	[F_KERNEL_SILENT] = M_MESH_KERNEL_SILENT_SECONDS,
	[F_FLOW_LOST] = M_MESH_FLOW_PROBES_LOST_TOTAL,
	[F_FLOW_RTT] = M_MESH_FLOW_RTT_SECONDS,
	[F_HOP] = M_MESH_HOP_INFO,
};

static enum mesh_family family_of(const char *name)
{
	int f = 0;

	if (strncmp(name, M_MESH_PREFIX, sizeof(M_MESH_PREFIX) - 1) != 0)
		return F_NONE;
	while (f < F_NONE && strcmp(name, mesh_families[f]) != 0)
		f++;
	return (enum mesh_family)f;
}

void mesh_gather_begin(struct mesh_gather *g)
{
	g->n = 0;
	g->hint = 0;
	g->n_flows = 0;
}

struct mesh_obs_flows *mesh_obs_flows(struct mesh_gather *g, struct mesh_obs *o)
{
	/* one a peer, and g holds as many as it holds peers */
	if (!o->flows) {
		o->flows = &g->flows[g->n_flows++];
		memset(o->flows, 0, sizeof(*o->flows));
	}
	return o->flows;
}

static const uint32_t no_hops[MESH_DETECT_HOPS];

/* The hops of o's flow f: none known where no flow of o shows. */
static const uint32_t *hops_of(const struct mesh_obs *o, int f)
{
	return o->flows ? o->flows->hop[f] : no_hops;
}

/* The recent RTT of o's flow f; 0: not shown. */
static double flow_rtt(const struct mesh_obs *o, int f)
{
	return o->flows ? o->flows->rtt[f] : 0;
}

int mesh_gather_wants(const char *name)
{
	return family_of(name) != F_NONE;
}

static struct mesh_obs *obs_for(struct mesh_gather *g, const char *peer)
{
	size_t i = name_find(g->obs, g->n, sizeof(g->obs[0]), peer, &g->hint);
	struct in_addr a;

	if (i < g->n)
		return &g->obs[i];
	if (g->n == MESH_DETECT_PEERS)
		return NULL;
	memset(&g->obs[g->n], 0, sizeof(g->obs[0]));
	snprintf(g->obs[g->n].peer, sizeof(g->obs[0].peer), "%s", peer);
	if (inet_pton(AF_INET, peer, &a) == 1)
		g->obs[g->n].addr = ntohl(a.s_addr);
	return &g->obs[g->n++];
}

/* The flow label as a bit index, or -1. */
static int flow_of(const struct series *s)
{
	char v[8];
	char *end;
	long f;

	if (label_value(s->labels, "flow", v, sizeof(v)) < 0)
		return -1;
	f = strtol(v, &end, 10);
	return *end || f < 0 || f >= MESH_DETECT_FLOWS ? -1 : (int)f;
}

void mesh_gather_series(struct mesh_gather *g, const struct series *s)
{
	enum mesh_family fam = family_of(s->name);
	char peer[48], v[48];
	struct mesh_obs *o;
	struct in_addr a;
	int flow, hop;
	double rate = s->has_rate ? s->rate : 0;

	if (fam == F_NONE || label_value(s->labels, "peer", peer, sizeof(peer)) < 0)
		return;
	o = obs_for(g, peer);
	if (!o)
		return;
	flow = flow_of(s);
	switch (fam) {
	case F_SENT:
		o->sent = rate;
		if (label_value(s->labels, "interface", o->ifname, sizeof(o->ifname)) < 0)
			o->ifname[0] = '\0';
		break;
	case F_LOST:
		o->lost = rate;
		break;
	case F_QUEUED:
		o->sent_queued = rate;
		break;
	case F_LOST_QUEUED:
		o->lost_queued = rate;
		break;
	case F_RTT_SUM:
		o->rtt_sum = rate;
		break;
	case F_RTT_COUNT:
		o->rtt_count = rate;
		break;
	case F_DELAY:
		o->delay_sum = rate;
		break;
	case F_LAST_ANSWER:
		o->last_answer_ms = (int64_t)(s->value * 1000);
		break;
	case F_KERNEL_SILENT:
		o->kernel_silent_s = s->value;
		break;
	case F_FLOW_LOST:
		/* a flow's series shows from its first loss on: its first
		 * reading, with no rate yet, is a loss too */
		if (flow >= 0 && (rate > 0 || (!s->has_rate && s->value > 0)))
			o->lost_flows |= 1ULL << flow;
		break;
	case F_FLOW_RTT:
		if (flow >= 0)
			mesh_obs_flows(g, o)->rtt[flow] = (float)s->value;
		break;
	case F_HOP:
		if (flow < 0 || flow >= MESH_DETECT_HOP_FLOWS ||
		    label_value(s->labels, "hop", v, sizeof(v)) < 0)
			break;
		hop = atoi(v);
		if (hop < 1 || hop > MESH_DETECT_HOPS)
			break;
		o->known_flows |= 1ULL << flow;
		if (label_value(s->labels, "address", v, sizeof(v)) == 0 &&
		    inet_pton(AF_INET, v, &a) == 1)
			mesh_obs_flows(g, o)->hop[flow][hop - 1] = ntohl(a.s_addr);
		break;
	case F_NONE:
		break;
	}
}

/* The oldest and newest ticks that lost a probe (0: none), of one peer or
 * of several (every peer has the same ticks): two ticks or more lost one
 * if they differ. */
struct lossy_ticks {
	int64_t old_ms, new_ms;
};

static void lossy_add(struct lossy_ticks *l, int64_t old_ms, int64_t new_ms)
{
	if (!new_ms)
		return;
	if (!l->new_ms || new_ms > l->new_ms)
		l->new_ms = new_ms;
	if (!l->old_ms || old_ms < l->old_ms)
		l->old_ms = old_ms;
}

static int lossy_two(const struct lossy_ticks *l)
{
	return l->new_ms > l->old_ms;
}

/* p's ticks since a moment, summed. */
struct span {
	/* the probes outside a queue's spike: a link's evidence */
	double sent, lost;
	double sent_all, lost_all; /* and all of them */
	double rtt_n; /* answers */
	uint64_t lost_flows;
	struct lossy_ticks lossy; /* the ticks that lost a probe */
	unsigned ticks;
};

static const struct mesh_tick *ring_of(const struct mesh_history *h, size_t i)
{
	return h->tick + i * h->ring;
}

/* Every flow a peer is probed over (h->flows; in a history whose caller
 * left it 0, every flow). */
static uint64_t flows_all(const struct mesh_history *h)
{
	return h->flows && h->flows < 64 ? (1ULL << h->flows) - 1 : ~0ULL;
}

/* part's share of whole's flows (1 where whole has none) */
static double flow_share(uint64_t part, uint64_t whole)
{
	int n = __builtin_popcountll(whole);

	return n ? (double)__builtin_popcountll(part & whole) / n : 1;
}

/* Peer i's ticks since a moment, summed, over the flows in mask
 * (flows_all(): every probe): a tick's probes went out evenly over the
 * flows, its losses on its losing ones. */
static void window_of(const struct mesh_history *h, size_t i, int64_t since_ms, uint64_t mask,
		      struct span *s)
{
	const struct mesh_history_peer *p = &h->peers[i];
	const struct mesh_tick *ring = ring_of(h, i);
	uint64_t all = flows_all(h);
	double sent_share = flow_share(mask, all);

	memset(s, 0, sizeof(*s));
	for (unsigned k = 0; k < p->count; k++) {
		const struct mesh_tick *t = &ring[(p->next + h->ring - 1 - k) % h->ring];
		double share = flow_share(mask, t->lost_flows ? t->lost_flows : all);
		double lost = (t->lost - t->lost_queued) * share;

		if (t->ms <= since_ms)
			break;
		s->sent += (t->sent - t->sent_queued) * sent_share;
		s->lost += lost;
		s->sent_all += t->sent * sent_share;
		s->lost_all += t->lost * share;
		s->rtt_n += t->rtt_n;
		s->lost_flows |= t->lost_flows & mask;
		if (lost >= 0.5)
			lossy_add(&s->lossy, t->ms, t->ms);
		s->ticks++;
	}
}

/* Peer i's ticks since a moment, summed. */
static void window(const struct mesh_history *h, size_t i, int64_t since_ms, struct span *s)
{
	window_of(h, i, since_ms, ~0ULL, s);
}

/* True if peer i lost every probe of the last second, on 1.5 sent at
 * least; or, this tick, half its probes and a round's worth, on every flow
 * it is probed over: a link loses on the flows that cross it, and at random
 * never all of a round's (3 % loss: once in 10^12 rounds of 8), so an
 * outage under a second (an agent restarted there) is one too. */
static int silent(const struct mesh_history *h, size_t i, int64_t now_ms)
{
	const struct mesh_history_peer *p = &h->peers[i];
	const struct mesh_tick *t =
		h->ring && p->count ? &ring_of(h, i)[(p->next + h->ring - 1) % h->ring] : NULL;
	struct span s;

	if (t && h->flows >= 2 && t->ms == now_ms && t->lost >= 0.5f * t->sent &&
	    t->lost >= 0.95f * (float)h->flows &&
	    (unsigned)__builtin_popcountll(t->lost_flows) >= h->flows)
		return 1;
	window(h, i, now_ms - 1000, &s);
	return s.sent_all >= 1.5 && s.lost_all >= 0.95 * s.sent_all;
}

/* Gives every peer a ring twice as long (its ticks kept, oldest first).
 * Returns 0, or -ENOMEM with h as it was. */
static int ring_grow(struct mesh_history *h)
{
	unsigned ring = h->ring ? 2 * h->ring : 16;
	struct mesh_tick *t = calloc((size_t)MESH_DETECT_PEERS * ring, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < h->n; i++) {
		struct mesh_history_peer *p = &h->peers[i];

		for (unsigned k = 0; k < p->count; k++)
			t[i * ring + k] =
				ring_of(h, i)[(p->next + h->ring - p->count + k) % h->ring];
		p->next = p->count;
	}
	free(h->tick);
	h->tick = t;
	h->ring = ring;
	return 0;
}

/* The peer named peer; NULL if there is none. */
static struct mesh_history_peer *peer_find(struct mesh_history *h, const char *peer)
{
	size_t i = name_find(h->peers, h->n, sizeof(h->peers[0]), peer, &h->hint);

	return i < h->n ? &h->peers[i] : NULL;
}

/* Where o's tick goes in p's ring; NULL if there is no ring. A full ring
 * whose oldest tick is still in the loss window grows first. */
static struct mesh_tick *tick_slot(struct mesh_history *h, struct mesh_history_peer *p,
				   int64_t now_ms)
{
	size_t i = (size_t)(p - h->peers);

	if (!h->ring ||
	    (p->count == h->ring && ring_of(h, i)[p->next].ms > now_ms - MESH_LOSS_WINDOW_MS &&
	     h->ring < 1024))
		(void)ring_grow(h);
	if (!h->ring)
		return NULL;
	return &h->tick[i * h->ring + p->next];
}

int mesh_answered_since(struct mesh_history *h, const char *peer, int64_t since_ms)
{
	const struct mesh_history_peer *p = peer_find(h, peer);

	return p && p->last_answer_ms > since_ms;
}

int mesh_lost_since(struct mesh_history *h, const char *peer, int64_t since_ms)
{
	const struct mesh_history_peer *p = peer_find(h, peer);
	struct span s;

	if (!p)
		return 0;
	window_of(h, (size_t)(p - h->peers), since_ms, flows_all(h), &s);
	return s.lost >= 0.5;
}

void mesh_history_update(struct mesh_history *h, const struct mesh_gather *g, int64_t now_ms)
{
	size_t k = 0;

	for (size_t i = 0; i < g->n; i++) {
		const struct mesh_obs *o = &g->obs[i];
		struct mesh_history_peer *p = peer_find(h, o->peer);
		struct mesh_tick *t;
		double dt;

		if (!p) {
			if (h->n == MESH_DETECT_PEERS)
				continue;
			p = &h->peers[h->n++];
			memset(p, 0, sizeof(*p));
			snprintf(p->peer, sizeof(p->peer), "%s", o->peer);
			p->last_ms = now_ms;
			h->hint = h->n;
		}
		t = tick_slot(h, p, now_ms);
		dt = (double)(now_ms - p->last_ms) / 1000.0;
		p->last_ms = now_ms;
		p->obs = i;
		if (!t)
			continue; /* seen, not counted: no memory for its ring */
		*t = (struct mesh_tick){
			.ms = now_ms,
			.sent = (float)(o->sent * dt),
			.lost = (float)(o->lost * dt),
			.sent_queued = (float)(fmin(o->sent_queued, o->sent) * dt),
			.lost_queued = (float)(fmin(o->lost_queued, o->lost) * dt),
			.rtt_n = (float)(o->rtt_count * dt),
			.lost_flows = o->lost_flows,
		};
		if (o->last_answer_ms > p->last_answer_ms)
			p->last_answer_ms = o->last_answer_ms;
		p->kernel_silent_s = o->kernel_silent_s;
		if (o->rtt_count > 0)
			p->answer_ms = now_ms;
		p->next = (p->next + 1) % h->ring;
		if (p->count < h->ring)
			p->count++;
	}
	for (size_t j = 0; j < h->n; j++)
		if (h->peers[j].last_ms == now_ms && silent(h, j, now_ms))
			h->peers[j].silent_ms = now_ms;
	for (size_t j = 0; j < h->n; j++) {
		if (now_ms - h->peers[j].last_ms >= MESH_LOSS_WINDOW_MS)
			continue;
		if (k != j) {
			h->peers[k] = h->peers[j];
			memcpy(h->tick + k * h->ring, ring_of(h, j), h->ring * sizeof(*h->tick));
		}
		k++;
	}
	h->n = k;
}

void mesh_history_free(struct mesh_history *h)
{
	free(h->tick);
	h->tick = NULL;
	h->ring = 0;
	h->n = 0;
	h->hint = 0;
	h->n_own_suspect = 0;
}

static int flow_crosses(const struct mesh_obs *o, int f, uint32_t addr)
{
	for (int k = 0; k < MESH_DETECT_HOPS; k++)
		if (hops_of(o, f)[k] == addr)
			return 1;
	return 0;
}

/* A hop of flow f did not answer its last trace (the trace's own probes
 * cross the lossy link too): f may cross any address. */
static int flow_has_unknown(const struct mesh_obs *o, int f)
{
	int last = -1;

	for (int k = 0; k < MESH_DETECT_HOPS; k++)
		if (hops_of(o, f)[k])
			last = k;
	for (int k = 0; k < last; k++)
		if (!hops_of(o, f)[k])
			return 1;
	return 0;
}

/*
 * Appends ",hops=A+B" to subject: the hops every flow of bad crosses and
 * some flow whose hops are known does not. A flow through the same hops
 * that did not lose is no alibi: 2 % loss leaves most probes through a bad
 * link alone, so a sibling on the same path is clean by chance. A hop every
 * flow crosses (this host's leaf, the peer) names nothing.
 */
static void hops_append(const struct mesh_obs *o, uint64_t bad, char *subject, size_t len)
{
	int first = -1, n = 0;

	bad &= o->known_flows;
	/* the hops of a losing flow whose every hop answered */
	for (int f = 0; f < MESH_DETECT_HOP_FLOWS; f++)
		if ((bad >> f & 1) && (first < 0 || !flow_has_unknown(o, f)))
			first = first < 0 || flow_has_unknown(o, first) ? f : first;
	if (first < 0)
		return;
	for (int h = 0; h < MESH_DETECT_HOPS; h++) {
		uint32_t addr = hops_of(o, first)[h];
		struct in_addr a = { htonl(addr) };
		char text[INET_ADDRSTRLEN];
		size_t used = strlen(subject);
		int keep = addr != 0, avoided = 0;

		for (int f = 0; f < MESH_DETECT_HOP_FLOWS && keep; f++)
			if (bad >> f & 1)
				keep = flow_crosses(o, f, addr) || flow_has_unknown(o, f);
			else if (o->known_flows >> f & 1)
				avoided |= !flow_crosses(o, f, addr);
		if (!keep || !avoided || addr == o->addr ||
		    !inet_ntop(AF_INET, &a, text, sizeof(text)) || used + strlen(text) + 7 >= len)
			continue;
		snprintf(subject + used, len - used, "%s%s", n++ ? "+" : ",hops=", text);
	}
}

/*
 * True if a hop separates the flows in bad from the others (hops_append
 * names one). A flow slower than a sibling through the same hops is slow
 * on its hosts, which pick its receive queue and CPU by its ports, not on
 * its path; where traces got no answer nothing tells the two apart.
 */
static int hops_separate(const struct mesh_obs *o, uint64_t bad)
{
	char subject[EVENT_SUBJECT_MAX] = "";

	hops_append(o, bad, subject, sizeof(subject));
	return subject[0] != 0;
}

/*
 * True if a clean path (losing a probe with probability p, MESH_CLEAN_LOSS)
 * would lose k or more of n probes with probability under MESH_LOSS_ALPHA:
 * the binomial tail, 1 less the terms below k, each from the one before.
 */
static int loss_beyond_chance(unsigned long n, unsigned long k, double p)
{
	double term = exp((double)n * log1p(-p)), below = 0;

	/* P(X >= k) <= P(X >= i + 1) for every i < k: done once that is small */
	for (unsigned long i = 0; i < k && i <= n; i++) {
		below += term;
		if (1 - below < MESH_LOSS_ALPHA)
			return 1;
		term *= (double)(n - i) / (double)(i + 1) * p / (1 - p);
	}
	return 0;
}

static size_t verdict(struct event_verdict *out, size_t max, size_t n, enum event_kind kind,
		      const struct mesh_obs *o, uint64_t flows, double score, const char *evidence,
		      enum verdict_weight weight)
{
	struct event_verdict *v = &out[n];

	if (n == max)
		return n;
	memset(v, 0, sizeof(*v));
	v->kind = kind;
	snprintf(v->subject, sizeof(v->subject), "peer=%s", o->peer);
	if (flows)
		hops_append(o, flows, v->subject, sizeof(v->subject));
	v->score = score;
	snprintf(v->evidence, sizeof(v->evidence), "%s", evidence);
	v->weight = weight;
	return n + 1;
}

/* What a peer's probes say this tick. */
enum peer_state { PEER_CLEAN, PEER_GOING, PEER_UNREACHABLE, PEER_LOSSY };

struct peer_judged {
	enum peer_state state;
	/* over the loss window (the unreachable's: its own), outside a queue's
	 * spike; and every probe lost there */
	double sent, lost, lost_all;
	double answered_1s; /* probes answered in the last second */
	int outage; /* silent within the loss window: its losses are the outage's */
	uint64_t lost_flows; /* over the loss window */
	struct lossy_ticks lossy; /* over the loss window */
	/* lossy by judge_hops(): the hop, and its pool's probes */
	uint32_t pool_hop;
	double pool_sent, pool_lost;
};

/* Peer i of h, whose observation this tick is o. */
static void judge(const struct mesh_history *h, size_t i, const struct mesh_obs *o, int64_t now_ms,
		  struct peer_judged *j)
{
	const struct mesh_history_peer *p = &h->peers[i];
	struct span s;

	memset(j, 0, sizeof(*j));
	window(h, i, now_ms - MESH_UNREACHABLE_MS, &s);
	j->sent = s.sent_all;
	j->lost = s.lost_all;
	/* rates times ticks: a probe counted is about 1, never exactly. A
	 * peer that never answered is not gone: it never came (no responder);
	 * one gone is silent since its last answer that long at least */
	if (p->answer_ms && now_ms - p->answer_ms >= MESH_UNREACHABLE_MS && s.ticks >= 2 &&
	    s.sent_all >= 1.5 && s.lost_all >= 0.95 * s.sent_all) {
		j->state = PEER_UNREACHABLE;
		return;
	}
	/* silent on every flow this last second, or losing on every flow
	 * this tick (a pause that began mid-tick): going, not lossy
	 * (unreachable once it lasts). A link loses on the flows that cross it. */
	window(h, i, now_ms - 1000, &s);
	j->answered_1s = s.rtt_n;
	if (p->silent_ms == now_ms ||
	    (o->known_flows && (o->lost_flows & o->known_flows) == o->known_flows)) {
		j->state = PEER_GOING;
		return;
	}
	window(h, i, now_ms - MESH_LOSS_WINDOW_MS, &s);
	j->sent = s.sent;
	j->lost = s.lost;
	j->lost_all = s.lost_all;
	j->lost_flows = s.lost_flows;
	j->lossy = s.lossy;
	/* the losses of a window that holds an outage are the outage's */
	j->outage = p->silent_ms && now_ms - p->silent_ms < MESH_LOSS_WINDOW_MS;
	if (j->lost < 0.95 * j->sent && lossy_two(&j->lossy) && !j->outage &&
	    loss_beyond_chance(lround(j->sent), lround(j->lost), MESH_CLEAN_LOSS))
		j->state = PEER_LOSSY;
}

/* The known flows of o that cross addr, or may (a hop unanswered). */
static uint64_t flows_crossing(const struct mesh_obs *o, uint32_t addr)
{
	uint64_t m = 0;

	for (int f = 0; f < MESH_DETECT_HOP_FLOWS; f++)
		if ((o->known_flows >> f & 1) &&
		    (flow_crosses(o, f, addr) || flow_has_unknown(o, f)))
			m |= 1ULL << f;
	return m;
}

/* The flows of peer i that hop's pool counts: those that cross it, where
 * some known flow of i does not (a hop every flow crosses, the peer or
 * this host's leaf, is no path's); 0 where the peer adds nothing. A peer
 * whose hops are not shown (none of its flows lost in a minute) may cross
 * it on every flow: its probes count, lest the pool hold only the peers
 * that lost and a clean path's chance losses, pooled, look like a link. */
static uint64_t pool_flows(const struct mesh_history *h, const struct mesh_gather *g, size_t i,
			   const struct peer_judged *j, int64_t now_ms, uint32_t hop)
{
	const struct mesh_history_peer *p = &h->peers[i];
	const struct mesh_obs *o = &g->obs[p->obs];
	uint64_t m;

	if (p->last_ms != now_ms || (j->state != PEER_CLEAN && j->state != PEER_LOSSY) || j->outage)
		return 0;
	if (!o->known_flows)
		return flows_all(h);
	m = flows_crossing(o, hop);
	return m == o->known_flows ? 0 : m;
}

/* Adds the hops of peer i's losing flows that some flow of i avoids to
 * hops (n of them, MESH_POOL_HOPS at most). Not the peer itself, which a
 * flow whose trace stopped short seems to avoid: its own loss is judge()'s. */
static size_t pool_candidates(const struct mesh_gather *g, const struct mesh_history_peer *p,
			      const struct peer_judged *j, uint32_t *hops, size_t n)
{
	const struct mesh_obs *o = &g->obs[p->obs];
	uint64_t bad = j->lost_flows & o->known_flows;

	for (int f = 0; f < MESH_DETECT_HOP_FLOWS; f++)
		for (int k = 0; (bad >> f & 1) && k < MESH_DETECT_HOPS; k++) {
			uint32_t a = hops_of(o, f)[k];
			size_t x = 0;

			while (x < n && hops[x] != a)
				x++;
			if (a && a != o->addr && x == n && n < MESH_POOL_HOPS &&
			    flows_crossing(o, a) != o->known_flows)
				hops[n++] = a;
		}
	return n;
}

/*
 * A link that loses a few in a hundred crosses some flows of several
 * peers: each peer alone may show a loss or two, chance by its own probes,
 * where all of them over that link are not. Each hop a losing flow crosses
 * is judged over every peer's flows across it (judge()'s rule, on their
 * probes alone); where they lost beyond chance, each peer that lost there
 * is lossy.
 */
static void judge_hops(const struct mesh_history *h, const struct mesh_gather *g, int64_t now_ms,
		       struct peer_judged *j)
{
	uint32_t hops[MESH_POOL_HOPS];
	double lost_across[MESH_DETECT_PEERS]; /* each peer's share of the pool's losses */
	size_t nh = 0;

	for (size_t i = 0; i < h->n; i++)
		if (h->peers[i].last_ms == now_ms && j[i].state == PEER_CLEAN && j[i].lost >= 0.5)
			nh = pool_candidates(g, &h->peers[i], &j[i], hops, nh);
	for (size_t x = 0; x < nh; x++) {
		struct span pool = { 0 }, s;

		for (size_t i = 0; i < h->n; i++) {
			uint64_t m = pool_flows(h, g, i, &j[i], now_ms, hops[x]);

			lost_across[i] = 0;
			if (!m)
				continue;
			window_of(h, i, now_ms - MESH_LOSS_WINDOW_MS, m, &s);
			lost_across[i] = s.lost;
			pool.sent += s.sent;
			pool.lost += s.lost;
			lossy_add(&pool.lossy, s.lossy.old_ms, s.lossy.new_ms);
		}
		if (pool.lost >= 0.95 * pool.sent || !lossy_two(&pool.lossy) ||
		    !loss_beyond_chance(lround(pool.sent), lround(pool.lost), MESH_CLEAN_LOSS))
			continue;
		for (size_t i = 0; i < h->n; i++) {
			if (lost_across[i] < 0.5 || j[i].state != PEER_CLEAN)
				continue;
			j[i].state = PEER_LOSSY;
			j[i].pool_hop = hops[x];
			j[i].pool_sent = pool.sent;
			j[i].pool_lost = pool.lost;
		}
	}
}

/* A lossy peer's evidence: its probes, and those across the hop that made
 * it lossy (judge_hops()) where that was the pool's. */
static void lossy_evidence(const struct peer_judged *j, char *ev, size_t len)
{
	struct in_addr a = { htonl(j->pool_hop) };
	char hop[INET_ADDRSTRLEN] = "";
	int n = snprintf(
		ev, len, "{\"sent\":%.0f,\"lost\":%.0f,\"flows_losing\":%d,\"window_s\":%d",
		j->sent, j->lost, __builtin_popcountll(j->lost_flows), MESH_LOSS_WINDOW_MS / 1000);

	if (n < 0 || (size_t)n >= len)
		return;
	if (j->pool_hop && inet_ntop(AF_INET, &a, hop, sizeof(hop)))
		n += snprintf(ev + n, len - (size_t)n,
			      ",\"hop\":\"%s\",\"hop_sent\":%.0f,\"hop_lost\":%.0f", hop,
			      j->pool_sent, j->pool_lost);
	if ((size_t)n < len - 1)
		snprintf(ev + n, len - (size_t)n, "}");
}

/* The peers one local interface carries, this tick. */
struct iface_tally {
	const char *ifname;
	unsigned peers, failing, gone, going;
	double sent, lost, answered_1s;
	struct lossy_ticks lossy;
	/* the hops the paths of every peer that lost cross (losses_meet()),
	 * over the traced ones: those whose hops are known */
	uint32_t shared[MESH_SHARED_HOPS];
	unsigned nshared, traced;
	enum event_kind verdict; /* EVENT_KINDS: none */
};

static struct iface_tally *tally_for(struct iface_tally *t, size_t *n, const char *ifname)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp(t[i].ifname, ifname) == 0)
			return &t[i];
	if (*n == MESH_IFACES_MAX)
		return NULL;
	t[*n] = (struct iface_tally){ .ifname = ifname, .verdict = EVENT_KINDS };
	return &t[(*n)++];
}

/* ifname's entry in h->own_suspect, or NULL. */
static const struct mesh_own_suspect *own_suspect_find(const struct mesh_history *h,
						       const char *ifname)
{
	size_t hint = 0;
	size_t i = name_find(h->own_suspect, h->n_own_suspect, sizeof(h->own_suspect[0]), ifname,
			     &hint);

	return i < h->n_own_suspect ? &h->own_suspect[i] : NULL;
}

/* More than 3/4 of x's peers fail, 3 at least. */
static int most_fail(const struct iface_tally *x)
{
	return x->peers >= MESH_OWN_LINK_PEERS && 4 * x->failing > 3 * x->peers;
}

/* Two peers or more lost, and no hop past the first is on the paths of
 * all of them: no fabric link or switch explains them all. */
static int spread(const struct iface_tally *x)
{
	return x->traced >= 2 && x->nshared == 0;
}

/* Keeps, for each interface whose peers' failures may be its own link's
 * (most fail, or their losses are spread), since when and when last, and
 * when it was last named. An interface that stops being a suspect is kept
 * for the loss window: one that is again within it has waited already, so
 * that losses flickering in and out of spread do not hold its peers'
 * verdicts back without end. */
static void own_suspect_update(struct mesh_history *h, const struct iface_tally *t, size_t nt,
			       int64_t now_ms)
{
	struct mesh_own_suspect keep[MESH_IFACES_MAX];
	size_t k = 0;

	for (size_t i = 0; i < h->n_own_suspect; i++)
		if (now_ms - h->own_suspect[i].last_ms < MESH_LOSS_WINDOW_MS)
			keep[k++] = h->own_suspect[i];
	for (size_t i = 0; i < nt; i++) {
		size_t x = 0;

		if (!most_fail(&t[i]) && !spread(&t[i]))
			continue;
		while (x < k && strcmp(keep[x].ifname, t[i].ifname) != 0)
			x++;
		if (x == k) {
			if (k == MESH_IFACES_MAX)
				continue;
			snprintf(keep[k].ifname, sizeof(keep[k].ifname), "%s", t[i].ifname);
			keep[k].since_ms = now_ms;
			keep[k++].named_ms = 0;
		}
		keep[x].last_ms = now_ms;
		if (t[i].verdict != EVENT_KINDS)
			keep[x].named_ms = now_ms;
	}
	memcpy(h->own_suspect, keep, k * sizeof(keep[0]));
	h->n_own_suspect = k;
}

/* True if o's interface's failures look like its own link's now, and have
 * for less than MESH_OWN_LINK_WAIT_MS or since it was named: its own link,
 * named or about to be. */
static int own_link_awaited(const struct mesh_history *h, const struct mesh_obs *o, int64_t now_ms)
{
	const struct mesh_own_suspect *m = own_suspect_find(h, o->ifname);

	return m && m->last_ms == now_ms &&
	       (now_ms - m->since_ms < MESH_OWN_LINK_WAIT_MS || m->named_ms);
}

/* The first of flow f's hops that losses_meet() starts from: its second
 * where it has one. This host's link ends at the first, and a router every
 * path leaves by is not told from it; a peer on the same segment is the
 * one hop of its flows. */
static int past_first(const struct mesh_obs *o, int f)
{
	return hops_of(o, f)[1] ? 1 : 0;
}

/* True if some known flow of o crosses addr. */
static int peer_crosses(const struct mesh_obs *o, uint32_t addr)
{
	for (int f = 0; f < MESH_DETECT_HOP_FLOWS; f++)
		if ((o->known_flows >> f & 1) && flow_crosses(o, f, addr))
			return 1;
	return 0;
}

/*
 * Meets x's shared hops with those of o, a peer that lost on some known
 * flow: the hops any of its paths cross (every flow's, not the losing
 * ones' only: a reply may come back by another path than its probe went).
 * The first such peer's, as many as fit, start the set.
 */
static void losses_meet(struct iface_tally *x, const struct mesh_obs *o)
{
	unsigned k = 0;

	if (x->traced++ > 0) {
		for (unsigned i = 0; i < x->nshared; i++)
			if (peer_crosses(o, x->shared[i]))
				x->shared[k++] = x->shared[i];
		x->nshared = k;
		return;
	}
	for (int f = 0; f < MESH_DETECT_HOP_FLOWS; f++)
		for (int h = past_first(o, f); (o->known_flows >> f & 1) && h < MESH_DETECT_HOPS;
		     h++) {
			uint32_t a = hops_of(o, f)[h];
			unsigned i = 0;

			while (i < k && x->shared[i] != a)
				i++;
			if (a && i == k && k < MESH_SHARED_HOPS)
				x->shared[k++] = a;
		}
	x->nshared = k;
}

/* Sums the judged peers per interface and decides each interface's own
 * verdict (EVENT_KINDS where its peers speak for themselves). */
static size_t tally(const struct mesh_history *h, const struct mesh_gather *g, int64_t now_ms,
		    const struct peer_judged *j, struct iface_tally *t)
{
	size_t n = 0;

	for (size_t i = 0; i < h->n; i++) {
		const struct mesh_obs *o = &g->obs[h->peers[i].obs];
		struct iface_tally *x;

		if (h->peers[i].last_ms != now_ms || !o->ifname[0] ||
		    !(x = tally_for(t, &n, o->ifname)))
			continue;
		x->peers++;
		x->gone += j[i].state == PEER_UNREACHABLE;
		x->going += j[i].state == PEER_GOING;
		/* a spike's losses too: the port that drops may be the one that
		 * queues, and its pooled probes outside spikes say which */
		x->failing += j[i].state != PEER_CLEAN || j[i].lost_all >= 0.5;
		x->answered_1s += j[i].answered_1s;
		if (j[i].state == PEER_UNREACHABLE || j[i].state == PEER_GOING)
			continue;
		/* spread losses are a link's that drops at random: outside a
		 * queue's spike, where a full queue drops */
		if ((j[i].lost_flows & o->known_flows) && j[i].lost >= 0.5)
			losses_meet(x, o);
		/* the link's evidence is the probes no outage explains (and,
		 * as the peers' own, outside a queue's spike) */
		if (j[i].outage)
			continue;
		x->sent += j[i].sent;
		x->lost += j[i].lost;
		lossy_add(&x->lossy, j[i].lossy.old_ms, j[i].lossy.new_ms);
	}
	for (size_t i = 0; i < n; i++) {
		struct iface_tally *x = &t[i];
		const struct mesh_own_suspect *m = own_suspect_find(h, x->ifname);

		/* most failing, with losses no fabric hop explains, is enough
		 * (not while some go silent: a cut's first ticks); named, it
		 * stays so while most of its peers fail: one whose window came
		 * out clean for a moment does not clear it */
		if (x->peers < MESH_OWN_LINK_PEERS ||
		    (x->failing < x->peers &&
		     !(most_fail(x) &&
		       ((m && m->named_ms) || (spread(x) && !x->going && !x->gone)))))
			continue;
		if (x->gone == x->peers)
			x->verdict = EVENT_STALL;
		else if (x->answered_1s >= 0.5 && x->lost < 0.95 * x->sent &&
			 lossy_two(&x->lossy) &&
			 loss_beyond_chance(lround(x->sent), lround(x->lost), MESH_CLEAN_LOSS))
			x->verdict = EVENT_LOSSY_LINK;
	}
	return n;
}

/* The verdict of interface x, at once. */
static size_t iface_verdict(struct event_verdict *out, size_t max, size_t n,
			    const struct iface_tally *x)
{
	struct event_verdict *v = &out[n];

	if (n == max)
		return n;
	memset(v, 0, sizeof(*v));
	v->kind = x->verdict;
	snprintf(v->subject, sizeof(v->subject), "interface=%s", x->ifname);
	v->score = x->verdict == EVENT_STALL ? 1 : x->lost / 1.5;
	snprintf(v->evidence, sizeof(v->evidence),
		 "{\"peers\":%u,\"peers_failing\":%u,\"peers_unreachable\":%u,"
		 "\"sent\":%.0f,\"lost\":%.0f,\"window_s\":%d}",
		 x->peers, x->failing, x->gone, x->sent, x->lost, MESH_LOSS_WINDOW_MS / 1000);
	v->weight = VERDICT_AT_ONCE;
	return n + 1;
}

/* True if every peer of o's interface fails: their loss is the interface's,
 * which names it once its evidence holds (a link cut silences peers a tick
 * or two apart). */
static int own_link_failing(const struct iface_tally *t, size_t nt, const struct mesh_obs *o)
{
	for (size_t i = 0; i < nt; i++)
		if (t[i].peers >= MESH_OWN_LINK_PEERS && t[i].failing == t[i].peers &&
		    strcmp(t[i].ifname, o->ifname) == 0)
			return 1;
	return 0;
}

/*
 * True if peer i's losses (PEER_LOSSY), alone on an interface of
 * MESH_OWN_LINK_PEERS peers or more, may yet be this host's own link's:
 * since its first loss in the window, under MESH_OWN_LINK_WAIT_MS ago, the
 * interface's other peers lost nothing, but have not answered enough
 * probes that its loss rate would have shown on them but for a chance of
 * MESH_SIBLINGS_ALPHA. Probes outside a queue's spike, as the verdict's
 * own; theirs sent h->answer_wait_ms ago at least, which would have been
 * counted lost by now (one in flight is neither). The collector probes
 * some of them as fast as the lossy peer from its first loss, so the wait
 * is a tick or two. Once they lose as well, the own-link tests above decide.
 */
static int own_link_untested(const struct mesh_history *h, const struct mesh_gather *g,
			     const struct peer_judged *j, const struct iface_tally *t, size_t nt,
			     size_t i, int64_t now_ms)
{
	const struct mesh_obs *o = &g->obs[h->peers[i].obs];
	int64_t first = j[i].lossy.old_ms;
	double sent = 0, lost = 0, rate, since_first;
	size_t x = 0;
	struct span s;

	while (x < nt && strcmp(t[x].ifname, o->ifname) != 0)
		x++;
	if (x == nt || t[x].peers < MESH_OWN_LINK_PEERS || !first ||
	    now_ms - first >= MESH_OWN_LINK_WAIT_MS)
		return 0;
	window(h, i, first - 1, &s);
	if (s.sent < 1)
		return 0;
	rate = s.lost / s.sent;
	for (size_t k = 0; k < h->n; k++) {
		if (k == i || h->peers[k].last_ms != now_ms ||
		    strcmp(g->obs[h->peers[k].obs].ifname, o->ifname) != 0 ||
		    (j[k].state != PEER_CLEAN && j[k].state != PEER_LOSSY))
			continue;
		window(h, k, first - 1, &s);
		lost += s.lost;
		since_first = s.sent;
		window(h, k, now_ms - h->answer_wait_ms, &s);
		sent += fmax(since_first - s.sent, 0);
	}
	return lost < 0.5 && rate < 1 && pow(1 - rate, sent) > MESH_SIBLINGS_ALPHA;
}

int mesh_own_link_holds(struct mesh_history *h, const struct mesh_gather *g, const char *peer,
			int64_t now_ms)
{
	const struct mesh_history_peer *p = peer_find(h, peer);

	return p && p->last_ms == now_ms && p->obs < g->n && g->obs[p->obs].ifname[0] &&
	       own_link_awaited(h, &g->obs[p->obs], now_ms);
}

/* True if p's kernel, which answered knocks before, left one unanswered
 * for its whole timeout (MESH_KNOCK_TIMEOUT_S) since: not a host that
 * stopped (its kernel would answer) but one gone, or its path cut, as a
 * TCP stall says where this host has traffic to it. */
static int kernel_silent(const struct mesh_history_peer *p)
{
	return p->kernel_silent_s >= MESH_KNOCK_TIMEOUT_S;
}

size_t detect_mesh(struct mesh_history *h, const struct mesh_gather *g, int64_t now_ms,
		   struct event_verdict *out, size_t max)
{
	struct peer_judged j[MESH_DETECT_PEERS];
	struct iface_tally t[MESH_IFACES_MAX];
	size_t n = 0, nt;

	for (size_t i = 0; i < h->n; i++)
		if (h->peers[i].last_ms == now_ms)
			judge(h, i, &g->obs[h->peers[i].obs], now_ms, &j[i]);
	judge_hops(h, g, now_ms, j);
	nt = tally(h, g, now_ms, j, t);
	own_suspect_update(h, t, nt, now_ms);
	for (size_t i = 0; i < nt; i++)
		if (t[i].verdict != EVENT_KINDS)
			n = iface_verdict(out, max, n, &t[i]);
	for (size_t i = 0; i < h->n; i++) {
		const struct mesh_obs *o = &g->obs[h->peers[i].obs];
		double avg, worst = 0;
		uint64_t slow = 0;
		char ev[EVENT_EVIDENCE_MAX];

		if (h->peers[i].last_ms != now_ms)
			continue;
		if (j[i].state == PEER_UNREACHABLE && !own_link_failing(t, nt, o)) {
			int cut = kernel_silent(&h->peers[i]);

			snprintf(ev, sizeof(ev),
				 "{\"sent\":%.0f,\"lost\":%.0f,\"window_s\":%d,"
				 "\"kernel_silent_seconds\":%.1f}",
				 j[i].sent, j[i].lost, MESH_UNREACHABLE_MS / 1000,
				 h->peers[i].kernel_silent_s);
			n = verdict(out, max, n, cut ? EVENT_STALL : EVENT_UNREACHABLE, o, 0, 1, ev,
				    VERDICT_AT_ONCE);
		}
		if (j[i].state == PEER_UNREACHABLE || j[i].state == PEER_GOING)
			continue;
		if (j[i].state == PEER_LOSSY && !own_link_failing(t, nt, o) &&
		    !own_link_awaited(h, o, now_ms) &&
		    !own_link_untested(h, g, j, t, nt, i, now_ms)) {
			lossy_evidence(&j[i], ev, sizeof(ev));
			n = verdict(out, max, n, EVENT_LOSSY_LINK, o, j[i].lost_flows,
				    j[i].lost / 1.5, ev, VERDICT_AT_ONCE);
		}
		/* the network's share, as the flows' own figures are */
		avg = o->rtt_count > 0 ? (o->rtt_sum - o->delay_sum) / o->rtt_count : 0;
		for (int f = 0; f < MESH_DETECT_FLOWS && avg > 0; f++)
			if (!(j[i].lost_flows >> f & 1) && flow_rtt(o, f) > 2 * avg &&
			    flow_rtt(o, f) > avg + MESH_SLOW_MARGIN_S) {
				slow |= 1ULL << f;
				if (flow_rtt(o, f) > worst)
					worst = flow_rtt(o, f);
			}
		if (slow && hops_separate(o, slow)) {
			snprintf(ev, sizeof(ev),
				 "{\"rtt_s\":%.6f,\"peer_rtt_s\":%.6f,\"flows_slow\":%d}", worst,
				 avg, __builtin_popcountll(slow));
			n = verdict(out, max, n, EVENT_PATH_LATENCY, o, slow, worst / (2 * avg), ev,
				    VERDICT_OVER);
		}
	}
	return n;
}
