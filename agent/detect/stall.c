/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "agent/detect/stall.h"

/* p's read stall, 0 while it waits on a send of its own that still moves
 * (header): its application is busy on the network, not stopped. */
static double stall_read_s(const struct stall_input *p)
{
	return p->sender_busy_s >= p->read_stall_s && p->sender_stall_s < p->read_stall_s
		       ? 0
		       : p->read_stall_s;
}

/* Whether p's application left acked data unread or closed its window:
 * its path works, so a wait for its acks is not the path's. */
static int stall_stopped(const struct stall_input *p)
{
	return stall_read_s(p) > 0 || p->zero_window > 0;
}

/* Whether data to p and from p (where this host sees its senders) both
 * wait for acks past the bound. */
static int stall_both_ways(const struct stall_input *p, const struct stall_bounds *b)
{
	return p->ack_stall_s >= b->after_s && p->sender_stall_s >= b->after_s;
}

/* Whether p is cut off: both ways at once, nothing of its acknowledged
 * either way for as long, no incast pacing (header). */
static int stall_cut_off(const struct stall_input *p, const struct stall_bounds *b)
{
	return !stall_stopped(p) && !p->paced && !p->reached && stall_both_ways(p, b) &&
	       p->progress_age_s >= b->after_s;
}

/* Whether p's wait for acks is for data in flight through an open window,
 * on a path that does not deliver: the path's, not the reader's to take.
 * One that acknowledged data to p on another connection in the wait's
 * second half delivers, as one the mesh's probes reach does: the waiting
 * connection is on its own retransmission timer, after a queue's drop. */
static int stall_in_flight(const struct stall_input *p)
{
	return p->in_flight_bytes > 0 && !p->zero_window && !p->reached &&
	       (p->progress_age_s == 0 || p->progress_age_s >= p->ack_stall_s / 2);
}

/* The network's evidence: data in flight and no ack for the bound, or cut
 * off; waits both ways under an incast are the incast's (header). */
static int stall_network(const struct stall_input *p, const struct stall_bounds *b)
{
	int one_way = p->ack_stall_s >= b->after_s && stall_in_flight(p);

	return (one_way && !(p->paced && stall_both_ways(p, b))) || stall_cut_off(p, b);
}

/* The host's evidence: acked, not read, for the bound. */
static int stall_host(const struct stall_input *p, const struct stall_bounds *b)
{
	return stall_read_s(p) >= b->host_after_s;
}

/* Whether p, over kind's bound, is a victim of another peer (header). */
static int stall_victim(const struct stall_input *p, enum event_kind kind, int cut_off_seen,
			const struct stall_bounds *b)
{
	double blocked = p->sender_read_stall_s > p->sender_stall_s ? p->sender_read_stall_s
								    : p->sender_stall_s;

	/* blocked sending since before it stopped reading: it waits on its
	 * own receiver. A wait that began later (a retransmission timer on
	 * what a paused rank had sent) is not the cause. */
	if (kind == EVENT_HOST_STALL)
		return blocked >= stall_read_s(p);
	return cut_off_seen && !stall_cut_off(p, b);
}

static int stall_over(const struct stall_input *p, enum event_kind kind,
		      const struct stall_bounds *b)
{
	return kind == EVENT_HOST_STALL ? stall_host(p, b) : stall_network(p, b);
}

/* A verdict of kind on p with this weight into v, its evidence what that
 * kind reads. */
static void stall_verdict(struct event_verdict *v, const struct stall_input *p,
			  enum event_kind kind, enum verdict_weight weight, size_t victims,
			  const struct stall_bounds *b)
{
	int n;

	v->kind = kind;
	snprintf(v->subject, sizeof(v->subject), "peer=%s", p->peer);
	v->weight = weight;
	if (kind == EVENT_HOST_STALL) {
		v->score = stall_read_s(p) / b->host_after_s;
		n = snprintf(v->evidence, sizeof(v->evidence),
			     "{\"read_stall_seconds\":%.3f,\"ack_stall_seconds\":%.3f,"
			     "\"zero_window_connections\":%.0f,\"in_flight_bytes\":%.0f,"
			     "\"victims\":%zu",
			     p->read_stall_s, p->ack_stall_s, p->zero_window, p->in_flight_bytes,
			     victims);
	} else {
		v->score = p->ack_stall_s / b->after_s;
		n = snprintf(v->evidence, sizeof(v->evidence),
			     "{\"ack_stall_seconds\":%.3f,\"sender_ack_stall_seconds\":%.3f,"
			     "\"progress_age_seconds\":%.3f,\"in_flight_bytes\":%.0f,"
			     "\"victims\":%zu",
			     p->ack_stall_s, p->sender_stall_s, p->progress_age_s,
			     p->in_flight_bytes, victims);
	}
	if (n > 0 && (size_t)n + 2 <= sizeof(v->evidence))
		memcpy(v->evidence + n, "}", 2);
}

/* The culprits of one kind (header) into out, at most max; returns how many. */
static size_t stall_culprits(const struct stall_input *in, size_t n, enum event_kind kind,
			     const struct stall_bounds *b, struct event_verdict *out, size_t max)
{
	size_t k = 0, stalled = 0, victims = 0;
	int cut_off = 0;

	for (size_t i = 0; i < n; i++) {
		if (!stall_over(&in[i], kind, b))
			continue;
		stalled++;
		cut_off |= kind == EVENT_STALL && stall_cut_off(&in[i], b);
	}
	for (size_t i = 0; i < n; i++)
		if (stall_over(&in[i], kind, b) && stall_victim(&in[i], kind, cut_off, b))
			victims++;
	if (victims == stalled)
		victims = 0; /* a cycle: no one to single out */
	for (size_t i = 0; i < n && k < max; i++) {
		if (!stall_over(&in[i], kind, b) ||
		    (victims && stall_victim(&in[i], kind, cut_off, b)))
			continue;
		/* unacked data one way may be waiting on a retransmission
		 * timer, and a cut-off peer's victims can cross first (their
		 * data left earlier): open_ticks then */
		stall_verdict(&out[k++], &in[i], kind,
			      kind == EVENT_HOST_STALL || stall_cut_off(&in[i], b) ? VERDICT_AT_ONCE
										   : VERDICT_OVER,
			      victims, b);
	}
	return k;
}

size_t detect_stall(const struct stall_input *in, size_t n, const struct stall_bounds *b,
		    struct event_verdict *out, size_t max)
{
	size_t k;

	if (b->after_s <= 0 || b->host_after_s <= 0)
		return 0;
	k = stall_culprits(in, n, EVENT_STALL, b, out, max);
	k += stall_culprits(in, n, EVENT_HOST_STALL, b, out + k, max - k);
	/* after the stalls, so that max leaves these out first */
	for (size_t i = 0; i < n && k < max; i++)
		if (!stall_network(&in[i], b) && stall_in_flight(&in[i]) &&
		    in[i].ack_stall_s >= STALL_HOLD_SHARE * b->after_s)
			stall_verdict(&out[k++], &in[i], EVENT_STALL, VERDICT_HOLD, 0, b);
	return k;
}

/* Whether this host's application with in's unread data has waited as
 * long on another (detect_unread()): in a send of its own under way
 * (open_s), on a peer that stopped reading (its read stall, as
 * detect_stall() takes it), on a path that stopped acknowledging (data to
 * the peer in flight, no ack: a sender blocked on it leaves its other
 * peers' data unread), or in a receive from a peer gone quiet shortly
 * before. */
static int unread_waiting(const struct unread_input *in, const struct stall_input *peers,
			  size_t npeers, double host_after_s)
{
	double wait_s = in->unread_s;

	if (in->awaited_s > 0 && in->awaited_s - wait_s < host_after_s)
		return 1;
	for (size_t i = 0; i < npeers; i++)
		if (peers[i].open_s >= wait_s || stall_read_s(&peers[i]) >= wait_s ||
		    peers[i].ack_stall_s >= wait_s)
			return 1;
	return 0;
}

/* Whether in's unread data is an episode h holds as excused: its unread
 * time has not dropped since (its application read nothing). */
static int unread_excused(const struct unread_history *h, const struct unread_input *in)
{
	for (size_t i = 0; i < h->n; i++)
		if (strcmp(h->excused[i].local, in->local) == 0)
			return in->unread_s >= h->excused[i].unread_s;
	return 0;
}

size_t detect_unread(const struct unread_input *in, size_t n, const struct stall_input *peers,
		     size_t npeers, const struct stall_bounds *b, struct unread_history *h,
		     struct event_verdict *out, size_t max)
{
	struct unread_history next = { .n = 0 };
	size_t k = 0;

	if (b->host_after_s <= 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		struct event_verdict *v = &out[k];
		int excused = unread_excused(h, &in[i]) ||
			      unread_waiting(&in[i], peers, npeers, b->host_after_s);

		if (excused && in[i].unread_s > 0 && next.n < UNREAD_EXCUSED_MAX &&
		    strlen(in[i].local) < sizeof(next.excused[0].local)) {
			strcpy(next.excused[next.n].local, in[i].local);
			next.excused[next.n++].unread_s = in[i].unread_s;
		}
		if (excused || k == max || in[i].unread_s < b->host_after_s || in[i].reading > 0)
			continue;
		v->kind = EVENT_HOST_STALL;
		snprintf(v->subject, sizeof(v->subject), "host=%s", in[i].local);
		v->weight = VERDICT_AT_ONCE;
		v->score = in[i].unread_s / b->host_after_s;
		snprintf(v->evidence, sizeof(v->evidence),
			 "{\"unread_seconds\":%.3f,\"unread_connections\":%.0f,"
			 "\"unread_bytes\":%.0f}",
			 in[i].unread_s, in[i].connections, in[i].bytes);
		k++;
	}
	*h = next;
	return k;
}

void stall_aftermath(struct stall_history *h, struct stall_input *in, size_t n,
		     const struct stall_bounds *b, int64_t now_ms)
{
	size_t kept = 0;

	for (size_t i = 0; i < n; i++) {
		size_t j;

		if (!stall_cut_off(&in[i], b))
			continue;
		for (j = 0; j < h->n && strcmp(h->cut[j].peer, in[i].peer) != 0; j++)
			;
		if (j == h->n) {
			if (h->n == STALL_CUT_PEERS || strlen(in[i].peer) >= sizeof(h->cut[0].peer))
				continue;
			snprintf(h->cut[j].peer, sizeof(h->cut[j].peer), "%s", in[i].peer);
			h->cut[j].start_ms = now_ms;
			h->n++;
		}
		h->cut[j].last_ms = now_ms;
	}
	/* a cut-off is forgotten once its aftermath is over: it began
	 * after_s before it was seen */
	for (size_t j = 0; j < h->n; j++)
		if (now_ms - h->cut[j].last_ms <=
		    h->cut[j].last_ms - h->cut[j].start_ms + (int64_t)(b->after_s * 1000))
			h->cut[kept++] = h->cut[j];
	h->n = kept;
	for (size_t j = 0; j < h->n; j++) {
		struct stall_input *x = NULL;

		if (h->cut[j].last_ms == now_ms)
			continue; /* cut off now: detect_stall() names its victims */
		for (size_t i = 0; i < n && !x; i++)
			if (strcmp(in[i].peer, h->cut[j].peer) == 0)
				x = &in[i];
		/* its application waits on those timers too: what it leaves
		 * unread here meanwhile is theirs */
		if (x)
			x->read_stall_s = 0;
		/* a read stall that began before the cut-off ended is the
		 * collective's wait on the cut peer, as it was while cut off */
		for (size_t i = 0; i < n; i++)
			if (in[i].read_stall_s * 1000 >= (double)(now_ms - h->cut[j].last_ms))
				in[i].read_stall_s = 0;
		for (size_t i = 0; x && i < n; i++)
			if (&in[i] != x && !stall_stopped(&in[i]) &&
			    x->sender_stall_s >= in[i].ack_stall_s)
				in[i].ack_stall_s = 0;
	}
}
