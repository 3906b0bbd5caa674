/* SPDX-License-Identifier: MIT */
#include <stdio.h>

#include "agent/detect/pfc.h"

/* A port sending under this share of its link rate while it has data waiting
 * is held, not merely busy. */
#define PFC_FROZEN_SHARE 0.01

size_t detect_pfc(const struct pfc_input *in, size_t n, double paused_bound,
		  struct event_verdict *out, size_t max)
{
	size_t k = 0;

	for (size_t i = 0; i < n && k < max; i++) {
		const struct pfc_input *p = &in[i];
		double score = 0;

		if (p->paused_fraction >= 0 && paused_bound > 0 &&
		    p->paused_fraction >= paused_bound)
			score = p->paused_fraction / paused_bound;
		else if (p->xmit_wait_rate > 0 && p->link_bytes > 0 &&
			 p->tx_bytes_rate < PFC_FROZEN_SHARE * p->link_bytes)
			score = 2.0 - p->tx_bytes_rate / (PFC_FROZEN_SHARE * p->link_bytes);
		if (score < 1.0)
			continue;
		out[k].kind = EVENT_PFC_STORM;
		snprintf(out[k].subject, sizeof(out[k].subject), "%s", p->subject);
		out[k].score = score;
		out[k].weight = VERDICT_OVER;
		/* an Ethernet port knows its pause time, an RDMA port its waits */
		if (p->paused_fraction >= 0)
			snprintf(out[k].evidence, sizeof(out[k].evidence),
				 "{\"paused_fraction\":%.3f}", p->paused_fraction);
		else
			snprintf(out[k].evidence, sizeof(out[k].evidence),
				 "{\"xmit_wait_per_second\":%.0f,\"tx_bytes_per_second\":%.0f,"
				 "\"link_bytes_per_second\":%.0f}",
				 p->xmit_wait_rate, p->tx_bytes_rate, p->link_bytes);
		k++;
	}
	return k;
}
