/* SPDX-License-Identifier: MIT */
#include <stdio.h>

#include "detect_stall.h"

/* Whether stalled peer p is a victim of another stalled peer (header). */
static int stall_victim(const struct stall_input *p, int cut_off_seen, double after_s)
{
	int sending_stalled = p->sender_stall_s >= after_s;

	if (p->zero_window > 0)
		return sending_stalled;
	return cut_off_seen && !sending_stalled;
}

size_t detect_stall(const struct stall_input *in, size_t n, double after_s,
		    struct event_verdict *out, size_t max)
{
	size_t k = 0, stalled = 0, victims = 0;
	int cut_off = 0;

	if (after_s <= 0)
		return 0;
	/* ack_stall_s is 0 unless data is pending, so no separate check */
	for (size_t i = 0; i < n; i++) {
		if (in[i].ack_stall_s < after_s)
			continue;
		stalled++;
		if (in[i].zero_window == 0 && in[i].sender_stall_s >= after_s)
			cut_off = 1;
	}
	for (size_t i = 0; i < n; i++)
		if (in[i].ack_stall_s >= after_s && stall_victim(&in[i], cut_off, after_s))
			victims++;
	if (victims == stalled)
		victims = 0; /* a cycle: no one to single out */
	for (size_t i = 0; i < n && k < max; i++) {
		struct event_verdict *v;

		if (in[i].ack_stall_s < after_s ||
		    (victims && stall_victim(&in[i], cut_off, after_s)))
			continue;
		v = &out[k++];
		v->kind = EVENT_STALL;
		snprintf(v->subject, sizeof(v->subject), "peer=%s", in[i].peer);
		v->score = in[i].ack_stall_s / after_s;
		/* behind a closed window the receiver said it stopped, and the
		 * culprit's window closes before its victims': the wait was the
		 * persistence. Unacked data may be waiting on a retransmission
		 * timer, and a cut-off peer's victims can cross first (their
		 * data left earlier): open_ticks then. */
		v->at_once = in[i].zero_window > 0;
		snprintf(v->evidence, sizeof(v->evidence),
			 "{\"ack_stall_seconds\":%.3f,\"in_flight_bytes\":%.0f,"
			 "\"zero_window_connections\":%.0f,\"victims\":%zu}",
			 in[i].ack_stall_s, in[i].in_flight_bytes, in[i].zero_window, victims);
	}
	return k;
}
