/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>

#include "agent/detect/hotspot.h"

/* A standing queue that holds this long of the link's transmit capacity
 * delays every packet that joins it: congestion, not a passing burst. */
#define HOTSPOT_QUEUE_DELAY_S 0.001

/* The smaller of the two capacities that are known; 0 if neither is. */
static double hotspot_tx_capacity(const struct hotspot_input *p)
{
	if (p->link_bytes > 0 && p->shaped_bytes > 0)
		return p->link_bytes < p->shaped_bytes ? p->link_bytes : p->shaped_bytes;
	return p->link_bytes > 0 ? p->link_bytes : p->shaped_bytes;
}

double hotspot_util(const struct hotspot_input *p)
{
	double tx_capacity = hotspot_tx_capacity(p), util = -1;

	if (tx_capacity > 0)
		util = p->tx_bytes_rate / tx_capacity;
	if (p->link_bytes > 0 && p->rx_bytes_rate / p->link_bytes > util)
		util = p->rx_bytes_rate / p->link_bytes;
	return util;
}

static int hotspot_congested(const struct hotspot_input *p, double tx_capacity)
{
	return p->qdisc_drops_rate > 0 || p->overlimits_rate > 0 || p->if_drops_rate > 0 ||
	       p->rx_pause_rate > 0 || p->ecn_ce_rate > 0 || p->backlog_growth > 0 ||
	       (tx_capacity > 0 && p->backlog_bytes >= HOTSPOT_QUEUE_DELAY_S * tx_capacity);
}

/*
 * Appends a field to the JSON text in buf (len bytes, used so far) if it fits
 * whole; one that does not is left out, so the evidence stays valid JSON.
 * Returns the new length.
 */
__attribute__((format(printf, 4, 5))) static size_t
hotspot_json_add(char *buf, size_t len, size_t used, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
	if (r < 0 || (size_t)r >= len - used) {
		buf[used] = '\0';
		return used;
	}
	return used + (size_t)r;
}

/* The readings: the load always, congestion signals where present. */
static void hotspot_evidence(const struct hotspot_input *p, double util, double tx_capacity,
			     char *buf, size_t len)
{
	const struct {
		const char *key;
		double value;
	} signals[] = {
		{ "backlog_bytes", p->backlog_bytes },
		{ "backlog_growth_bytes_per_second", p->backlog_growth },
		{ "overlimits_per_second", p->overlimits_rate },
		{ "qdisc_drops_per_second", p->qdisc_drops_rate },
		{ "interface_drops_per_second", p->if_drops_rate },
		{ "rx_pause_frames_per_second", p->rx_pause_rate },
		{ "ecn_ce_packets_per_second", p->ecn_ce_rate },
	};
	/* the fields leave room for the closing brace */
	size_t used = hotspot_json_add(buf, len - 1, 0,
				       "{\"utilisation\":%.3f,\"tx_bytes_per_second\":%.0f,"
				       "\"rx_bytes_per_second\":%.0f,"
				       "\"tx_capacity_bytes_per_second\":%.0f",
				       util, p->tx_bytes_rate, p->rx_bytes_rate, tx_capacity);

	for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
		if (signals[i].value > 0)
			used = hotspot_json_add(buf, len - 1, used, ",\"%s\":%.0f", signals[i].key,
						signals[i].value);
	(void)hotspot_json_add(buf, len, used, "}");
}

size_t detect_hotspot(const struct hotspot_input *in, size_t n, double util_bound,
		      struct event_verdict *out, size_t max)
{
	size_t k = 0;

	if (util_bound <= 0)
		return 0;
	for (size_t i = 0; i < n && k < max; i++) {
		const struct hotspot_input *p = &in[i];
		double tx_capacity = hotspot_tx_capacity(p), util = hotspot_util(p);

		if (util < HOTSPOT_HOLD_SHARE * util_bound || !hotspot_congested(p, tx_capacity))
			continue;
		out[k].kind = EVENT_HOTSPOT;
		snprintf(out[k].subject, sizeof(out[k].subject), "%s", p->subject);
		out[k].score = util / util_bound;
		out[k].weight = util < util_bound ? VERDICT_HOLD : VERDICT_OVER;
		hotspot_evidence(p, util, tx_capacity, out[k].evidence, sizeof(out[k].evidence));
		k++;
	}
	return k;
}
