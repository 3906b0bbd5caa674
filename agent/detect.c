/* SPDX-License-Identifier: MIT */
#include <stddef.h>
#include <string.h>

#include <stdio.h>

#include "detect.h"
#include "detect_handoff.h"
#include "detect_hotspot.h"
#include "detect_path.h"
#include "detect_pfc.h"
#include "detect_roce.h"
#include "detect_stall.h"
#include "name_find.h"

/* Peers with series of their own are bounded by bpf_top_peers (1000 at most). */
#define DETECT_PEERS 1024

/* Per peer: the readings of the stall, path and hand-off detectors. */
struct stall_gather {
	struct stall_input in[DETECT_PEERS];
	struct path_input path[DETECT_PEERS];
	struct handoff_input handoff[DETECT_PEERS];
	char peer[DETECT_PEERS][48];
	const char *labels[DETECT_PEERS]; /* the series' labels: one row per peer */
	size_t order[DETECT_PEERS]; /* the rows by their labels, ascending */
	size_t n;
	size_t next; /* where in order the last row found was, plus 1 */
};

/*
 * Where labels' row is in g->order, or where it would go, and whether it is
 * there. The registry walks each family's series in the order of their
 * labels, so a family's rows come as the family before's did: the place
 * after the last is tried first, then a binary search (a scan of the rows
 * made the gathering O(peers^2): most of 21 ms a tick at 1000 peers).
 */
static size_t stall_row(struct stall_gather *g, const char *labels, int *ret_found)
{
	size_t lo = 0, hi = g->n;

	if (g->next < g->n && strcmp(g->labels[g->order[g->next]], labels) == 0) {
		*ret_found = 1;
		return g->next;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(g->labels[g->order[mid]], labels);

		if (c == 0) {
			*ret_found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*ret_found = 0;
	return lo;
}

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

/* Per destination peer: RoCEv2 packets and CE marks towards it, per second. */
struct roce_gather {
	struct roce_input in[DETECT_PEERS];
	char peer[DETECT_PEERS][48];
	unsigned char seen[DETECT_PEERS]; /* it had series this tick */
	size_t n;
	size_t hint; /* name_find()'s */
};

static int gather_roce(struct series *s, void *arg)
{
	struct roce_gather *g = arg;
	char peer[48], dir[8], cls[16];
	int ce = strcmp(s->name, "fabmon_roce_ecn_ce_packets_total") == 0;
	size_t i;

	if ((!ce && strcmp(s->name, "fabmon_roce_packets_total") != 0) || !s->has_rate)
		return 0;
	/* towards the peer: the tc probe's egress, or a capture (no direction) */
	if ((label_value(s->labels, "direction", dir, sizeof(dir)) == 0 &&
	     strcmp(dir, "tx") != 0) ||
	    label_value(s->labels, "peer", peer, sizeof(peer)) < 0 || strcmp(peer, "other") == 0)
		return 0;
	if ((i = name_find(g->peer, g->n, sizeof(g->peer[0]), peer, &g->hint)) == g->n) {
		if (g->n == DETECT_PEERS)
			return 0;
		memcpy(g->peer[i], peer, sizeof(peer));
		g->in[i] = (struct roce_input){ g->peer[i], 0, 0 };
		g->n++;
	}
	g->seen[i] = 1;
	if (ce)
		g->in[i].ce += s->rate;
	else if (label_value(s->labels, "class", cls, sizeof(cls)) == 0 &&
		 (strcmp(cls, "send") == 0 || strcmp(cls, "write") == 0 ||
		  strcmp(cls, "read_response") == 0 || strcmp(cls, "ud_send") == 0))
		/* data only: a sender gets ACKs and CNPs back, and with no data
		 * towards it is no receiver to compare */
		g->in[i].packets += s->rate;
	return 0;
}

/*
 * Readies g for this tick's RoCEv2 rates (gather_roce()). Its peers persist
 * from tick to tick in the order first seen, so that finding one is a
 * compare or two (name_find()), not a scan of the rows before it: rebuilt
 * every tick, each peer's first series missed and scanned them all, which
 * at 1000 peers was most of detect_run()'s time (tests/bench/detectcost.c
 * -r).
 */
static void roce_gather_begin(struct roce_gather *g)
{
	for (size_t i = 0; i < g->n; i++) {
		g->in[i].packets = g->in[i].ce = 0;
		g->seen[i] = 0;
	}
}

/* After the tick's series: a peer with none is dropped. */
static void roce_gather_end(struct roce_gather *g)
{
	size_t kept = 0;

	for (size_t i = 0; i < g->n; i++) {
		if (!g->seen[i])
			continue;
		if (kept != i) {
			memcpy(g->peer[kept], g->peer[i], sizeof(g->peer[0]));
			g->in[kept] = g->in[i];
			g->seen[kept] = 1;
		}
		g->in[kept].peer = g->peer[kept];
		kept++;
	}
	g->n = kept;
}

static int gather_stall(struct series *s, void *arg)
{
	struct stall_gather *g = arg;
	struct stall_input *in = NULL;
	struct path_input *path = NULL;
	struct handoff_input *ho = NULL;
	size_t at;
	int found;

	/* one row per peer: a histogram's buckets carry an le label besides */
	if (strncmp(s->name, "fabmon_tcp_", 11) != 0 ||
	    strcmp(s->name, "fabmon_tcp_transfer_duration_seconds_bucket") == 0)
		return 0;
	at = stall_row(g, s->labels, &found);
	if (found) {
		in = &g->in[g->order[at]];
		path = &g->path[g->order[at]];
		ho = &g->handoff[g->order[at]];
	} else {
		if (g->n == DETECT_PEERS ||
		    label_value(s->labels, "peer", g->peer[g->n], sizeof(g->peer[g->n])) < 0 ||
		    strcmp(g->peer[g->n], "other") == 0)
			return 0;
		in = &g->in[g->n];
		memset(in, 0, sizeof(*in));
		in->peer = g->peer[g->n];
		path = &g->path[g->n];
		memset(path, 0, sizeof(*path));
		path->peer = g->peer[g->n];
		ho = &g->handoff[g->n];
		memset(ho, 0, sizeof(*ho));
		ho->peer = g->peer[g->n];
		g->labels[g->n] = s->labels;
		memmove(&g->order[at + 1], &g->order[at], (g->n - at) * sizeof(g->order[0]));
		g->order[at] = g->n++;
	}
	g->next = at + 1;
	if (strcmp(s->name, "fabmon_tcp_ack_stall_seconds") == 0)
		in->ack_stall_s = s->value;
	else if (strcmp(s->name, "fabmon_tcp_in_flight_bytes") == 0)
		in->in_flight_bytes = s->value;
	else if (strcmp(s->name, "fabmon_tcp_zero_window_connections") == 0)
		in->zero_window = s->value;
	else if (strcmp(s->name, "fabmon_tcp_sender_ack_stall_seconds") == 0)
		in->sender_stall_s = s->value;
	else if (strcmp(s->name, "fabmon_tcp_read_stall_seconds") == 0)
		in->read_stall_s = s->value;
	else if (strcmp(s->name, "fabmon_tcp_sender_read_stall_seconds") == 0)
		in->sender_read_stall_s = s->value;
	else if (strcmp(s->name, "fabmon_tcp_sender_busy_seconds") == 0)
		in->sender_busy_s = s->value;
	else if (strcmp(s->name, "fabmon_tcp_delivery_rate_bytes_per_second") == 0)
		path->rate = s->value;
	else if (strcmp(s->name, "fabmon_tcp_retransmits_total") == 0 && s->has_rate)
		path->retransmits = s->rate;
	else if (strcmp(s->name, "fabmon_tcp_acked_bytes_total") == 0 && s->has_rate)
		path->acked = s->rate;
	else if (strcmp(s->name, "fabmon_tcp_busy_seconds_total") == 0 && s->has_rate)
		path->busy = s->rate;
	else if (strcmp(s->name, "fabmon_tcp_sender_busy_rate_bytes_per_second") == 0)
		path->sender_rate = s->value;
	else if (strcmp(s->name, "fabmon_tcp_sender_fanout_peers") == 0)
		path->fanout = s->value;
	else if (strcmp(s->name, "fabmon_tcp_transfer_bytes_total") == 0 && s->has_rate)
		path->goodput = s->rate; /* bytes; over the seconds below once both are in */
	else if (strcmp(s->name, "fabmon_tcp_transfer_duration_seconds_count") == 0 && s->has_rate)
		ho->transfers = s->rate;
	else if (strcmp(s->name, "fabmon_tcp_transfer_duration_seconds_sum") == 0 && s->has_rate)
		ho->seconds = s->rate;
	else if (strcmp(s->name, "fabmon_tcp_transfer_open_seconds") == 0)
		ho->open_s = s->value;
	else if (strcmp(s->name, "fabmon_tcp_transfer_open_bytes") == 0)
		ho->open_bytes = s->value;
	else if (strcmp(s->name, "fabmon_tcp_window_limited_connections") == 0)
		ho->window_limited = s->value;
	return 0;
}

/* Ports: Ethernet priorities and links from ethtool, RDMA ports from sysfs. */
#define DETECT_PORTS 1024

struct pfc_gather {
	struct pfc_input in[DETECT_PORTS];
	size_t n;
};

static struct pfc_input *pfc_port(struct pfc_gather *g, const char *subject)
{
	struct pfc_input *p;

	for (size_t i = 0; i < g->n; i++)
		if (strcmp(g->in[i].subject, subject) == 0)
			return &g->in[i];
	if (g->n == DETECT_PORTS)
		return NULL;
	p = &g->in[g->n++];
	memset(p, 0, sizeof(*p));
	snprintf(p->subject, sizeof(p->subject), "%s", subject);
	p->paused_fraction = -1;
	p->xmit_wait_rate = -1;
	return p;
}

/* rx pause duration: pause frames received, so this port was told to stop */
static void gather_pause(struct pfc_gather *g, const struct series *s)
{
	char ifname[32], prio[8], dir[8], subject[EVENT_SUBJECT_MAX];
	struct pfc_input *p;

	if (!s->has_rate || label_value(s->labels, "direction", dir, sizeof(dir)) < 0 ||
	    strcmp(dir, "rx") != 0 ||
	    label_value(s->labels, "interface", ifname, sizeof(ifname)) < 0)
		return;
	if (label_value(s->labels, "priority", prio, sizeof(prio)) == 0)
		snprintf(subject, sizeof(subject), "interface=%s,priority=%s", ifname, prio);
	else
		snprintf(subject, sizeof(subject), "interface=%s", ifname);
	p = pfc_port(g, subject);
	if (p)
		p->paused_fraction = s->rate;
}

static int gather_pfc(struct series *s, void *arg)
{
	struct pfc_gather *g = arg;
	char dev[48], port[8], subject[EVENT_SUBJECT_MAX];
	struct pfc_input *p;

	if (strcmp(s->name, "fabmon_ethtool_pause_duration_seconds_total") == 0 ||
	    strcmp(s->name, "fabmon_ethtool_link_pause_duration_seconds_total") == 0) {
		gather_pause(g, s);
		return 0;
	}
	if (strncmp(s->name, "fabmon_rdma_port_", 17) != 0 ||
	    label_value(s->labels, "device", dev, sizeof(dev)) < 0 ||
	    label_value(s->labels, "port", port, sizeof(port)) < 0)
		return 0;
	snprintf(subject, sizeof(subject), "device=%s,port=%s", dev, port);
	if (strcmp(s->name, "fabmon_rdma_port_transmit_wait_total") == 0 && s->has_rate) {
		p = pfc_port(g, subject);
		if (p)
			p->xmit_wait_rate = s->rate;
	} else if (strcmp(s->name, "fabmon_rdma_port_transmit_bytes_total") == 0 && s->has_rate) {
		p = pfc_port(g, subject);
		if (p)
			p->tx_bytes_rate = s->rate;
	} else if (strcmp(s->name, "fabmon_rdma_port_rate_bytes") == 0) {
		p = pfc_port(g, subject);
		if (p)
			p->link_bytes = s->value;
	}
	return 0;
}

/*
 * Links: every interface with netdev, root qdisc, pause or ECN series. The
 * last tick's readings are kept beside this tick's for the backlog's growth.
 */
struct hotspot_gather {
	struct hotspot_input in[2][DETECT_PORTS];
	size_t n[2];
	int64_t ms[2];
	unsigned cur; /* in[cur] is this tick's */
};

/* The series a link's readings come from; rates add up (rx + tx drops, every
 * priority's pause, every peer's CE), gauges are one series per link. */
#define HOTSPOT_FIELD(f) offsetof(struct hotspot_input, f)
static const struct {
	const char *name;
	size_t field; /* a double in struct hotspot_input */
	const char *key, *value; /* only series with this label, if key */
} hotspot_series[] = {
	{ "fabmon_netdev_transmit_bytes_total", HOTSPOT_FIELD(tx_bytes_rate), NULL, NULL },
	{ "fabmon_netdev_receive_bytes_total", HOTSPOT_FIELD(rx_bytes_rate), NULL, NULL },
	{ "fabmon_netdev_speed_bytes", HOTSPOT_FIELD(link_bytes), NULL, NULL },
	{ "fabmon_netdev_receive_drops_total", HOTSPOT_FIELD(if_drops_rate), NULL, NULL },
	{ "fabmon_netdev_transmit_drops_total", HOTSPOT_FIELD(if_drops_rate), NULL, NULL },
	/* the root qdisc holds all the link's queue; children would count twice */
	{ "fabmon_qdisc_rate_bytes", HOTSPOT_FIELD(shaped_bytes), "parent", "root" },
	{ "fabmon_qdisc_backlog_bytes", HOTSPOT_FIELD(backlog_bytes), "parent", "root" },
	{ "fabmon_qdisc_drops_total", HOTSPOT_FIELD(qdisc_drops_rate), "parent", "root" },
	{ "fabmon_qdisc_overlimits_total", HOTSPOT_FIELD(overlimits_rate), "parent", "root" },
	/* received pause: the far end asks this link to stop */
	{ "fabmon_ethtool_pause_frames_total", HOTSPOT_FIELD(rx_pause_rate), "direction", "rx" },
	{ "fabmon_ethtool_link_pause_frames_total", HOTSPOT_FIELD(rx_pause_rate), "direction",
	  "rx" },
	{ "fabmon_flow_ecn_ce_packets_total", HOTSPOT_FIELD(ecn_ce_rate), NULL, NULL },
};

static struct hotspot_input *hotspot_link(struct hotspot_gather *g, unsigned t, const char *subject,
					  int add)
{
	struct hotspot_input *p;

	for (size_t i = 0; i < g->n[t]; i++)
		if (strcmp(g->in[t][i].subject, subject) == 0)
			return &g->in[t][i];
	if (!add || g->n[t] == DETECT_PORTS)
		return NULL;
	p = &g->in[t][g->n[t]++];
	memset(p, 0, sizeof(*p));
	snprintf(p->subject, sizeof(p->subject), "%s", subject);
	return p;
}

static int gather_hotspot(struct series *s, void *arg)
{
	struct hotspot_gather *g = arg;
	char ifname[32], want[16], subject[EVENT_SUBJECT_MAX];
	struct hotspot_input *p, *prev;
	size_t i;
	double *field;

	for (i = 0; i < sizeof(hotspot_series) / sizeof(hotspot_series[0]); i++)
		if (strcmp(s->name, hotspot_series[i].name) == 0)
			break;
	if (i == sizeof(hotspot_series) / sizeof(hotspot_series[0]) ||
	    (s->type == METRIC_COUNTER && !s->has_rate) ||
	    label_value(s->labels, "interface", ifname, sizeof(ifname)) < 0)
		return 0;
	if (hotspot_series[i].key &&
	    (label_value(s->labels, hotspot_series[i].key, want, sizeof(want)) < 0 ||
	     strcmp(want, hotspot_series[i].value) != 0))
		return 0;
	snprintf(subject, sizeof(subject), "interface=%s", ifname);
	p = hotspot_link(g, g->cur, subject, 1);
	if (!p)
		return 0;
	field = (double *)(void *)((char *)p + hotspot_series[i].field);
	*field += s->type == METRIC_COUNTER ? s->rate : s->value;
	if (field != &p->backlog_bytes)
		return 0;
	prev = hotspot_link(g, g->cur ^ 1, subject, 0);
	if (prev && g->ms[g->cur] > g->ms[g->cur ^ 1])
		p->backlog_growth = (p->backlog_bytes - prev->backlog_bytes) * 1000.0 /
				    (double)(g->ms[g->cur] - g->ms[g->cur ^ 1]);
	return 0;
}

/* Every gatherer of a tick, in one pass over the registry. */
struct tick_gather {
	struct roce_gather *roce;
	struct stall_gather *stall;
	struct pfc_gather *pfc;
	struct hotspot_gather *hotspot;
};

/* Each gatherer takes its own series and passes over the rest. One walk of
 * the registry, not one each: the walk was a fifth of detect_run()'s time
 * at 1000 peers with RoCEv2 (perf over tests/bench/detectcost.c -r). */
static int gather_series(struct series *s, void *arg)
{
	struct tick_gather *t = arg;

	(void)gather_roce(s, t->roce);
	(void)gather_stall(s, t->stall);
	(void)gather_pfc(s, t->pfc);
	return gather_hotspot(s, t->hotspot);
}

void detect_config_init(struct detect_config *d, const struct config *cfg)
{
	*d = (struct detect_config){
		.stall = { (double)cfg->stall_after_ms / 1000.0,
			   (double)cfg->stall_read_after_ms / 1000.0 },
		.pfc_paused_fraction = cfg->pfc_paused_percent / 100.0,
		.hotspot_util = cfg->hotspot_util_percent / 100.0,
		.path_window_ms = cfg->path_window_ms,
		.incast_fraction = cfg->incast_percent / 100.0,
		.straggler_fraction = cfg->straggler_percent / 100.0,
		.handoff_ratio = cfg->handoff_slow_percent / 100.0,
	};
}

size_t detect_run(const struct detect_config *cfg, struct registry *reg, struct event_verdict *out,
		  size_t max)
{
	/* large; the tick thread is the only caller */
	static struct stall_gather sg;
	static struct pfc_gather pg;
	static struct hotspot_gather hg;
	static struct path_history ph;
	static struct handoff_history hh;
	static struct roce_gather rg;
	static struct stall_history sh;
	const struct path_config pcfg = { cfg->path_window_ms, cfg->incast_fraction,
					  cfg->straggler_fraction };
	struct tick_gather tg = { &rg, &sg, &pg, &hg };
	size_t n;
	int paced = 0; /* an incast verdict this tick */

	sg.n = 0;
	sg.next = 0;
	pg.n = 0;
	roce_gather_begin(&rg);
	hg.cur ^= 1;
	hg.n[hg.cur] = 0;
	hg.ms[hg.cur] = registry_now(reg);
	(void)registry_foreach(reg, gather_series, &tg);
	roce_gather_end(&rg);
	for (size_t i = 0; i < sg.n; i++) {
		int stalled = sg.in[i].ack_stall_s >= cfg->stall.after_s;

		sg.path[i].stalled = stalled || sg.in[i].read_stall_s >= cfg->stall.read_after_s;
		/* a transfer slows the moment its receiver stops reading, and is
		 * judged at once: any read stall is the stall's, not the path's.
		 * Paths are compared over several ticks, and an all-to-all
		 * receiver that reads its senders in turn leaves one unread for
		 * a moment: from the bound (with any, t_incast's first tick over
		 * went from 0.2 to 0.39 s, one run's to 3 s). */
		sg.handoff[i].stalled = stalled || sg.in[i].read_stall_s > 0;
		/* busy while its peer does not ack is the stall's to judge,
		 * from its own bound: a rate from such a tick would name a cut
		 * link a straggler or an incast first. Under a quarter of that
		 * bound a wait is a delayed ACK's (40 ms). One it leaves unread
		 * (detect_path.h) is no straggler's either. */
		if (sg.in[i].ack_stall_s >= cfg->stall.after_s / 4)
			sg.path[i].busy = 0;
		sg.path[i].unread = sg.in[i].read_stall_s > 0;
		/* transfer bytes and seconds, both per second of the tick */
		sg.path[i].goodput = sg.handoff[i].goodput =
			sg.handoff[i].seconds > 0 ? sg.path[i].goodput / sg.handoff[i].seconds : 0;
	}
	path_history_update(&ph, sg.path, sg.n, pcfg.window_ms, registry_now(reg));
	n = detect_path(&ph, &pcfg, registry_now(reg), out, max);
	for (size_t j = 0; j < n; j++)
		paced |= out[j].kind == EVENT_INCAST;
	for (size_t i = 0; i < sg.n; i++)
		sg.in[i].paced = paced;
	/* the paths above still see such waits as the stalls they are */
	stall_aftermath(&sh, sg.in, sg.n, &cfg->stall, registry_now(reg));
	n += detect_stall(sg.in, sg.n, &cfg->stall, out + n, max - n);
	handoff_history_update(&hh, sg.handoff, sg.n, cfg->handoff_ratio, pcfg.window_ms,
			       registry_now(reg));
	n += detect_handoff(&hh, cfg->handoff_ratio,
			    path_history_active(&ph, pcfg.window_ms, registry_now(reg)),
			    pcfg.window_ms, registry_now(reg), out + n, max - n);
	n += detect_pfc(pg.in, pg.n, cfg->pfc_paused_fraction, out + n, max - n);
	n += detect_roce(rg.in, rg.n, cfg->incast_fraction, out + n, max - n);
	return n + detect_hotspot(hg.in[hg.cur], hg.n[hg.cur], cfg->hotspot_util, out + n, max - n);
}
