/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "detect_stall.h"

/* p's read stall, 0 while it waits on a send of its own (header). */
static double stall_read_s(const struct stall_input *p)
{
	return p->paced || (p->sender_busy_s >= p->read_stall_s &&
			    p->sender_stall_s < p->read_stall_s)
		       ? 0
		       : p->read_stall_s;
}

/* Whether p's application stopped reading: its window's edge stood still
 * while its kernel acked, or its window closed. */
static int stall_unread(const struct stall_input *p, const struct stall_bounds *b)
{
	return stall_read_s(p) >= b->read_after_s || p->zero_window > 0;
}

/* Whether data to p and from p (where this host sees its senders) both
 * wait for acks past the read bound. */
static int stall_both_ways(const struct stall_input *p, const struct stall_bounds *b)
{
	return p->ack_stall_s >= b->read_after_s && p->sender_stall_s >= b->read_after_s;
}

/* Whether p's waits are the incast's that paces the collective (header). */
static int stall_incast_wait(const struct stall_input *p, const struct stall_bounds *b)
{
	return p->paced && stall_both_ways(p, b);
}

/* Whether p is cut off: both ways at once, nothing of its acknowledged
 * either way for as long, no incast pacing. Two connections in opposite
 * directions do not wait on one retransmission timer, so the shorter bound
 * holds. */
static int stall_cut_off(const struct stall_input *p, const struct stall_bounds *b)
{
	return !stall_unread(p, b) && !p->paced && stall_both_ways(p, b) &&
	       p->progress_age_s >= b->read_after_s;
}

static int stall_over(const struct stall_input *p, const struct stall_bounds *b)
{
	return !stall_incast_wait(p, b) &&
	       (p->ack_stall_s >= b->after_s || stall_read_s(p) >= b->read_after_s ||
		stall_cut_off(p, b));
}

/* Whether stalled peer p is a victim of another stalled peer (header). */
static int stall_victim(const struct stall_input *p, int cut_off_seen, const struct stall_bounds *b)
{
	double blocked = p->sender_read_stall_s > p->sender_stall_s ? p->sender_read_stall_s
								    : p->sender_stall_s;

	if (stall_unread(p, b))
		/* blocked sending since before it stopped reading: it waits on
		 * its own receiver. A wait that began later (a retransmission
		 * timer on what a paused rank had sent) is not the cause. */
		return blocked >= (stall_read_s(p) > 0 ? stall_read_s(p) : p->ack_stall_s);
	return cut_off_seen && !stall_cut_off(p, b);
}

/* A stall verdict on p with this score and weight into v. */
static void stall_verdict(struct event_verdict *v, const struct stall_input *p, double score,
			  enum verdict_weight weight, size_t victims)
{
	v->kind = EVENT_STALL;
	snprintf(v->subject, sizeof(v->subject), "peer=%s", p->peer);
	v->score = score;
	v->weight = weight;
	snprintf(v->evidence, sizeof(v->evidence),
		 "{\"ack_stall_seconds\":%.3f,\"sender_ack_stall_seconds\":%.3f,"
		 "\"read_stall_seconds\":%.3f,\"progress_age_seconds\":%.3f,"
		 "\"in_flight_bytes\":%.0f,\"zero_window_connections\":%.0f,\"victims\":%zu}",
		 p->ack_stall_s, p->sender_stall_s, p->read_stall_s, p->progress_age_s,
		 p->in_flight_bytes, p->zero_window, victims);
}

size_t detect_stall(const struct stall_input *in, size_t n, const struct stall_bounds *b,
		    struct event_verdict *out, size_t max)
{
	size_t k = 0, stalled = 0, victims = 0;
	int cut_off = 0;

	if (b->after_s <= 0 || b->read_after_s <= 0)
		return 0;
	/* ack_stall_s and read_stall_s are 0 unless data is pending */
	for (size_t i = 0; i < n; i++) {
		if (!stall_over(&in[i], b))
			continue;
		stalled++;
		cut_off |= stall_cut_off(&in[i], b);
	}
	for (size_t i = 0; i < n; i++)
		if (stall_over(&in[i], b) && stall_victim(&in[i], cut_off, b))
			victims++;
	if (victims == stalled)
		victims = 0; /* a cycle: no one to single out */
	for (size_t i = 0; i < n && k < max; i++) {
		double ack = in[i].ack_stall_s /
			     (stall_cut_off(&in[i], b) ? b->read_after_s : b->after_s),
		       read = stall_read_s(&in[i]) / b->read_after_s;

		if (!stall_over(&in[i], b) || (victims && stall_victim(&in[i], cut_off, b)))
			continue;
		/* a receiver that stopped reading said so itself, and the
		 * culprit stops before its victims; a peer cut off both ways
		 * waits on no timer: the wait was the persistence. Unacked data
		 * one way may be waiting on a retransmission timer, and a
		 * cut-off peer's victims can cross first (their data left
		 * earlier): open_ticks then. */
		stall_verdict(&out[k++], &in[i], ack > read ? ack : read,
			      stall_unread(&in[i], b) || stall_cut_off(&in[i], b) ? VERDICT_AT_ONCE
										  : VERDICT_OVER,
			      victims);
	}
	/* after the stalls, so that max leaves these out first */
	for (size_t i = 0; i < n && k < max; i++)
		if (!stall_over(&in[i], b) && in[i].ack_stall_s >= STALL_HOLD_SHARE * b->after_s)
			stall_verdict(&out[k++], &in[i], in[i].ack_stall_s / b->after_s,
				      VERDICT_HOLD, 0);
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
	 * read_after_s before it was seen */
	for (size_t j = 0; j < h->n; j++)
		if (now_ms - h->cut[j].last_ms <=
		    h->cut[j].last_ms - h->cut[j].start_ms + (int64_t)(b->read_after_s * 1000))
			h->cut[kept++] = h->cut[j];
	h->n = kept;
	for (size_t j = 0; j < h->n; j++) {
		const struct stall_input *x = NULL;

		if (h->cut[j].last_ms == now_ms)
			continue; /* cut off now: detect_stall() names its victims */
		for (size_t i = 0; i < n && !x; i++)
			if (strcmp(in[i].peer, h->cut[j].peer) == 0)
				x = &in[i];
		for (size_t i = 0; x && i < n; i++)
			if (&in[i] != x && !stall_unread(&in[i], b) &&
			    x->sender_stall_s >= in[i].ack_stall_s)
				in[i].ack_stall_s = 0;
	}
}
