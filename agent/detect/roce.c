/* SPDX-License-Identifier: MIT */
#include <stdio.h>

#include "agent/detect/roce.h"
#include "agent/detect/window.h"

/* Peers compared at most (the registry's named peers are bounded lower). */
#define ROCE_PEERS_MAX 1024
/* The others' median is at least this, so that none of them congested still
 * gives a finite score. */
#define ROCE_CE_FLOOR 1e-4

size_t detect_roce(const struct roce_input *in, size_t n, double incast_fraction,
		   struct event_verdict *out, size_t max)
{
	/* 16 KiB on the tick thread's stack */
	double share[ROCE_PEERS_MAX], others[ROCE_PEERS_MAX];
	size_t k = 0, active = 0;

	if (n > ROCE_PEERS_MAX)
		n = ROCE_PEERS_MAX;
	for (size_t i = 0; i < n; i++) {
		share[i] = in[i].packets >= ROCE_MIN_PACKETS ? in[i].ce / in[i].packets : -1;
		active += share[i] >= 0;
	}
	if (active < 3)
		return 0;
	for (size_t i = 0; i < n && k < max; i++) {
		unsigned m = 0;
		double mid, score;

		if (share[i] < ROCE_MIN_CE_FRACTION)
			continue;
		for (size_t j = 0; j < n; j++)
			if (j != i && share[j] >= 0)
				others[m++] = share[j];
		mid = quantile_of(others, m, 0.5);
		if (mid >= incast_fraction * share[i])
			continue;
		score = incast_fraction * share[i] / (mid > ROCE_CE_FLOOR ? mid : ROCE_CE_FLOOR);
		out[k].kind = EVENT_INCAST;
		snprintf(out[k].subject, sizeof(out[k].subject), "peer=%s", in[i].peer);
		out[k].score = score;
		out[k].weight = VERDICT_OVER;
		snprintf(out[k].evidence, sizeof(out[k].evidence),
			 "{\"ecn_ce_share\":%.4f,\"others_median_ecn_ce_share\":%.4f,"
			 "\"roce_packets_per_second\":%.0f,\"peers\":%zu}",
			 share[i], mid, in[i].packets, active);
		k++;
	}
	return k;
}
