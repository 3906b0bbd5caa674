/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "detect.h"
#include "detect_stall.h"

/* Peers with series of their own are bounded by bpf_top_peers (1000 at most). */
#define DETECT_PEERS 1024

struct stall_gather {
	struct stall_input in[DETECT_PEERS];
	char peer[DETECT_PEERS][48];
	const char *labels[DETECT_PEERS]; /* the series' labels: one row per peer */
	size_t n;
};

/* The value of key in Prometheus label text (key="value",...), into buf. */
static int label_value(const char *labels, const char *key, char *buf, size_t len)
{
	size_t kl = strlen(key);

	for (const char *p = labels; p && *p; p = strchr(p, ','), p = p ? p + 1 : NULL) {
		const char *end;

		if (strncmp(p, key, kl) != 0 || strncmp(p + kl, "=\"", 2) != 0)
			continue;
		p += kl + 2;
		end = strchr(p, '"');
		if (!end || (size_t)(end - p) >= len)
			return -1;
		memcpy(buf, p, (size_t)(end - p));
		buf[end - p] = '\0';
		return 0;
	}
	return -1;
}

static int gather_stall(struct series *s, void *arg)
{
	struct stall_gather *g = arg;
	struct stall_input *in = NULL;
	size_t i;

	if (strncmp(s->name, "fabmon_tcp_", 11) != 0)
		return 0;
	for (i = 0; i < g->n; i++)
		if (strcmp(g->labels[i], s->labels) == 0)
			in = &g->in[i];
	if (!in) {
		if (g->n == DETECT_PEERS ||
		    label_value(s->labels, "peer", g->peer[g->n], sizeof(g->peer[g->n])) < 0 ||
		    strcmp(g->peer[g->n], "other") == 0)
			return 0;
		in = &g->in[g->n];
		memset(in, 0, sizeof(*in));
		in->peer = g->peer[g->n];
		g->labels[g->n++] = s->labels;
	}
	if (strcmp(s->name, "fabmon_tcp_ack_stall_seconds") == 0)
		in->ack_stall_s = s->value;
	else if (strcmp(s->name, "fabmon_tcp_in_flight_bytes") == 0)
		in->in_flight_bytes = s->value;
	else if (strcmp(s->name, "fabmon_tcp_zero_window_connections") == 0)
		in->zero_window = s->value;
	return 0;
}

size_t detect_run(const struct detect_config *cfg, struct registry *reg, struct event_verdict *out,
		  size_t max)
{
	static struct stall_gather g; /* large; the tick thread is the only caller */

	g.n = 0;
	(void)registry_foreach(reg, gather_stall, &g);
	return detect_stall(g.in, g.n, cfg->stall_after_s, out, max);
}
