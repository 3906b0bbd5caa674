/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector/mesh/mesh_peer.h"

const double mesh_rtt_bounds[MESH_RTT_BUCKETS] = {
	10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3,   2.5e-3,
	5e-3,  10e-3, 25e-3, 50e-3,  100e-3, 250e-3, 500e-3, 1,
};

const char *const mesh_rtt_le[MESH_RTT_BUCKETS + 1] = {
	"1e-05", "2.5e-05", "5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005",
	"0.01",	 "0.025",   "0.05",  "0.1",    "0.25",	  "0.5",    "1",     "+Inf",
};

/* Counts the probe of fl sent at sent_ns lost; in a spike as well if the
 * peer's path stands in one and answered a probe sent after it. */
static void lost_one(struct mesh_peer *p, struct mesh_flow *fl, int64_t sent_ns)
{
	int queued = p->spike && p->last_answer_ns > sent_ns;

	fl->lost++;
	p->lost++;
	p->queued += queued;
	p->lost_queued += queued;
}

uint32_t mesh_peer_sent(struct mesh_peer *p, unsigned f, int64_t now_ns)
{
	struct mesh_flow *fl = &p->flow[f];
	uint32_t seq = fl->next_seq++;
	struct mesh_inflight *in = &fl->inflight[seq % MESH_INFLIGHT];

	if (in->used) {
		/* MESH_INFLIGHT rounds unanswered: that one is lost, a round
		 * of its own (a flow this far behind is not a moment's) */
		lost_one(p, fl, in->sent_ns);
		p->loss_rounds++;
		fl->last_loss_ns = now_ns;
	}
	*in = (struct mesh_inflight){ .seq = seq, .used = 1, .sent_ns = now_ns };
	fl->sent++;
	p->sent++;
	return seq;
}

uint32_t mesh_peer_trace_start(struct mesh_peer *p, unsigned f, int64_t now_ns, int64_t end_ns)
{
	struct mesh_path *path = &p->flow[f].path;

	(void)now_ns;
	memset(path->trace_hop, 0, sizeof(path->trace_hop));
	path->reached = 0;
	path->trace_seq = p->flow[f].next_seq++;
	path->trace_end_ns = end_ns;
	return path->trace_seq;
}

static void rtt_record(struct mesh_peer *p, struct mesh_flow *fl, int64_t rtt_ns, int64_t delay_ns)
{
	double rtt = (double)rtt_ns * 1e-9;
	unsigned b = 0;

	while (b < MESH_RTT_BUCKETS && rtt > mesh_rtt_bounds[b])
		b++;
	p->buckets[b]++;
	p->rtt_sum_ns += (uint64_t)rtt_ns;
	p->delay_sum_ns += (uint64_t)delay_ns;
	p->answered++;
	/* a flow's own figure is the network's time: its siblings share the
	 * responder's, which a loaded host makes vary by milliseconds */
	fl->recent[fl->recent_next++ % MESH_RECENT] = (float)((double)(rtt_ns - delay_ns) * 1e-9);
	fl->rtt_last = rtt;
	fl->answered++;
}

/* Moves one way's spike state with an answer's one-way time v at now_ns. */
static void spike_update(struct mesh_spike *w, int64_t v, int64_t now_ns)
{
	int64_t least, most, rise;

	if (!w->seen || now_ns - w->since_ns >= MESH_SPIKE_WINDOW_NS) {
		w->min_ns[1] = w->seen ? w->min_ns[0] : v;
		w->max_ns[1] = w->seen ? w->max_ns[0] : v;
		w->min_ns[0] = w->max_ns[0] = v;
		w->since_ns = now_ns;
		w->seen = 1;
	}
	if (v < w->min_ns[0])
		w->min_ns[0] = v;
	if (v > w->max_ns[0])
		w->max_ns[0] = v;
	least = w->min_ns[0] < w->min_ns[1] ? w->min_ns[0] : w->min_ns[1];
	most = w->max_ns[0] > w->max_ns[1] ? w->max_ns[0] : w->max_ns[1];
	rise = (most - least) / 2;
	if (rise < MESH_SPIKE_FLOOR_NS)
		rise = MESH_SPIKE_FLOOR_NS;
	if (v - least >= rise)
		w->on = 1;
	else if (v - least <= rise * 2 / 3)
		w->on = 0;
}

int mesh_peer_reply(struct mesh_peer *p, const struct mesh_msg *m, unsigned flows, int64_t rx_ns)
{
	struct mesh_flow *fl;
	struct mesh_inflight *in;
	int64_t rtt, delay;

	if (m->flow >= flows)
		return -ERANGE;
	fl = &p->flow[m->flow];
	if (m->ttl) {
		struct mesh_path *path = &fl->path;

		if (!path->trace_end_ns || m->seq != path->trace_seq || m->ttl > MESH_HOPS_MAX)
			return -ENOENT;
		if (!path->reached || m->ttl < path->reached)
			path->reached = m->ttl;
		return 0;
	}
	in = &fl->inflight[m->seq % MESH_INFLIGHT];
	if (!in->used || in->seq != m->seq || (int64_t)m->send_ns != in->sent_ns)
		return -ENOENT;
	in->used = 0;
	rtt = rx_ns > in->sent_ns ? rx_ns - in->sent_ns : 0;
	/* the responder's own time between its receive and its send; a
	 * reply that claims more than the whole round trip is clamped */
	delay = m->tx_ns > m->rx_ns ? (int64_t)(m->tx_ns - m->rx_ns) : 0;
	if (delay > rtt)
		delay = rtt;
	rtt_record(p, fl, rtt, delay);
	/* each way on its own: a full queue one way shows half the round
	 * trip's rise; without the responder's times, the network time. And
	 * the round trip over the least it ever showed: the hosts' clocks
	 * drifting apart move the ways (one up, one down), never the round
	 * trip, and a queue that stands for minutes still stands over it */
	if (p->answered == 1 || rtt - delay < p->net_least_ns)
		p->net_least_ns = rtt - delay;
	if (m->rx_ns && m->tx_ns) {
		spike_update(&p->way[0], (int64_t)m->rx_ns - in->sent_ns, rx_ns);
		spike_update(&p->way[1], rx_ns - (int64_t)m->tx_ns, rx_ns);
	} else {
		spike_update(&p->way[0], rtt - delay, rx_ns);
	}
	p->spike = (p->way[0].on || p->way[1].on) &&
		   rtt - delay - p->net_least_ns >= MESH_SPIKE_FLOOR_NS;
	p->queued += p->spike;
	p->last_answer_ns = rx_ns;
	return 0;
}

int mesh_peer_hop(struct mesh_peer *p, const struct mesh_msg *m, unsigned flows, uint32_t hop)
{
	struct mesh_path *path;

	if (m->flow >= flows || !m->ttl || m->ttl > MESH_HOPS_MAX)
		return -ENOENT;
	path = &p->flow[m->flow].path;
	if (!path->trace_end_ns || m->seq != path->trace_seq)
		return -ENOENT;
	path->trace_hop[m->ttl - 1] = hop;
	return 0;
}

/* FNV-1a over the hops: a short, stable name for a path. */
static uint32_t path_id(const struct mesh_path *path)
{
	uint32_t h = 2166136261u;

	for (unsigned i = 0; i < path->n; i++)
		for (unsigned b = 0; b < 4; b++) {
			h ^= (path->hop[i] >> (8 * b)) & 0xff;
			h *= 16777619u;
		}
	return h;
}

/* Ends a trace: the path runs to the first TTL the peer answered; without
 * one, to the last hop that answered. */
static void trace_end(struct mesh_peer *p, struct mesh_path *path)
{
	unsigned n = path->reached;

	if (n) {
		path->trace_hop[n - 1] = p->addr;
	} else {
		for (unsigned i = 0; i < MESH_HOPS_MAX; i++)
			if (path->trace_hop[i])
				n = i + 1;
	}
	memcpy(path->hop, path->trace_hop, sizeof(path->hop));
	path->n = n;
	path->id = path_id(path);
	path->trace_end_ns = 0;
}

unsigned mesh_peer_expire(struct mesh_peer *p, unsigned flows, int64_t now_ns, int64_t timeout_ns)
{
	unsigned lost = 0;

	for (unsigned f = 0; f < flows; f++) {
		struct mesh_flow *fl = &p->flow[f];

		for (unsigned i = 0; i < MESH_INFLIGHT; i++) {
			struct mesh_inflight *in = &fl->inflight[i];

			if (!in->used || now_ns - in->sent_ns < timeout_ns)
				continue;
			in->used = 0;
			lost_one(p, fl, in->sent_ns);
			lost++;
			/* a flow that starts losing may have moved: learn its hops
			 * again at once */
			if (!fl->last_loss_ns || now_ns - fl->last_loss_ns > 10 * timeout_ns)
				fl->path.next_ns = now_ns;
			fl->last_loss_ns = now_ns;
		}
		if (fl->path.trace_end_ns && now_ns >= fl->path.trace_end_ns)
			trace_end(p, &fl->path);
	}
	p->loss_rounds += lost > 0;
	return lost;
}

int mesh_peer_suspect(const struct mesh_peer *p, unsigned flows, int64_t since_ns,
		      int64_t answered_ns)
{
	if (p->last_answer_ns < answered_ns)
		return 0;
	for (unsigned f = 0; f < flows; f++)
		if (p->flow[f].last_loss_ns && p->flow[f].last_loss_ns >= since_ns)
			return 1;
	return 0;
}

int mesh_flow_crosses(const struct mesh_flow *fl, uint32_t hop)
{
	if (!hop)
		return 0;
	for (unsigned h = 0; h < fl->path.n && h < MESH_HOPS_MAX; h++)
		if (fl->path.hop[h] == hop)
			return 1;
	return 0;
}

int mesh_peer_hop_avoided(const struct mesh_peer *p, unsigned flows, uint32_t hop)
{
	for (unsigned f = 0; f < flows; f++)
		if (p->flow[f].path.n && !mesh_flow_crosses(&p->flow[f], hop))
			return 1;
	return 0;
}

/* The first hop of path that mesh_peer_hops() counts: its second where it
 * has one. */
static unsigned past_first(const struct mesh_path *path)
{
	return path->n > 1 ? 1 : 0;
}

size_t mesh_peer_hops(const struct mesh_peer *p, unsigned flows, uint32_t *hops, size_t max)
{
	size_t n = 0;

	for (unsigned f = 0; f < flows; f++) {
		const struct mesh_path *path = &p->flow[f].path;

		for (unsigned h = past_first(path); h < path->n && h < MESH_HOPS_MAX; h++) {
			size_t i = 0;

			while (i < n && hops[i] != path->hop[h])
				i++;
			if (path->hop[h] && i == n && n < max)
				hops[n++] = path->hop[h];
		}
	}
	return n;
}

double mesh_flow_rtt(const struct mesh_flow *fl)
{
	double least = fl->recent[0];

	if (fl->recent_next < MESH_RECENT)
		return 0;
	for (unsigned i = 1; i < MESH_RECENT; i++)
		if (fl->recent[i] < least)
			least = fl->recent[i];
	return least;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

uint64_t mesh_peer_differing(const struct mesh_peer *p, unsigned flows, int64_t since_ns)
{
	double rtt[MESH_FLOWS_MAX], sorted[MESH_FLOWS_MAX], median = 0;
	uint64_t differ = 0;
	unsigned n = 0;

	for (unsigned f = 0; f < flows; f++)
		if ((rtt[f] = mesh_flow_rtt(&p->flow[f])) > 0)
			sorted[n++] = rtt[f];
	if (n) {
		qsort(sorted, n, sizeof(sorted[0]), dbl_cmp);
		median = sorted[n / 2];
	}
	for (unsigned f = 0; f < flows; f++) {
		const struct mesh_flow *fl = &p->flow[f];

		if ((fl->last_loss_ns && fl->last_loss_ns >= since_ns) ||
		    (rtt[f] > 2 * median && rtt[f] > median + MESH_SLOW_MARGIN))
			differ |= 1ULL << f;
	}
	return differ;
}
