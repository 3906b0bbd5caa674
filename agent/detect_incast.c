/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detect_incast.h"

#define INCAST_PEERS_MAX 1024
#define INCAST_PEERS_MIN 3 /* with two, neither is "the rest" */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* A peer with an RTT, not this host's loopback (scrapes, local services). */
static int fabric_peer(const struct incast_input *p)
{
	return p->srtt_s > 0 && strncmp(p->peer, "127.", 4) != 0 && strcmp(p->peer, "::1") != 0;
}

size_t detect_incast(const struct incast_input *in, size_t n, double rtt_factor, double rtt_floor_s,
		     struct event_verdict *out, size_t max)
{
	double rtts[INCAST_PEERS_MAX], median;
	size_t m = 0, k = 0;

	for (size_t i = 0; i < n && m < INCAST_PEERS_MAX; i++)
		if (fabric_peer(&in[i]))
			rtts[m++] = in[i].srtt_s;
	if (m < INCAST_PEERS_MIN || rtt_factor <= 0)
		return 0;
	qsort(rtts, m, sizeof(rtts[0]), cmp_double);
	median = m % 2 ? rtts[m / 2] : (rtts[m / 2 - 1] + rtts[m / 2]) / 2;
	if (median <= 0)
		return 0;
	for (size_t i = 0; i < n && k < max; i++) {
		const struct incast_input *p = &in[i];

		if (!fabric_peer(p) || p->srtt_s < rtt_factor * median ||
		    p->srtt_s - median < rtt_floor_s)
			continue;
		out[k].kind = EVENT_INCAST;
		snprintf(out[k].subject, sizeof(out[k].subject), "peer=%s", p->peer);
		out[k].score = p->srtt_s / median / rtt_factor;
		snprintf(out[k].evidence, sizeof(out[k].evidence),
			 "{\"srtt_seconds\":%.6f,\"median_srtt_seconds\":%.6f,\"peers\":%zu,"
			 "\"retransmits_per_second\":%.1f}",
			 p->srtt_s, median, m, p->retransmits_per_s);
		k++;
	}
	return k;
}
