/* SPDX-License-Identifier: MIT */
#include <stdio.h>

#include "detect_stall.h"

size_t detect_stall(const struct stall_input *in, size_t n, double after_s,
		    struct event_verdict *out, size_t max)
{
	size_t k = 0;

	for (size_t i = 0; i < n && k < max; i++) {
		struct event_verdict *v;

		/* ack_stall_s is 0 unless data is pending, so no separate check */
		if (in[i].ack_stall_s < after_s || after_s <= 0)
			continue;
		v = &out[k++];
		v->kind = EVENT_STALL;
		snprintf(v->subject, sizeof(v->subject), "peer=%s", in[i].peer);
		v->score = in[i].ack_stall_s / after_s;
		snprintf(v->evidence, sizeof(v->evidence),
			 "{\"ack_stall_seconds\":%.3f,\"in_flight_bytes\":%.0f,"
			 "\"zero_window_connections\":%.0f}",
			 in[i].ack_stall_s, in[i].in_flight_bytes, in[i].zero_window);
	}
	return k;
}
