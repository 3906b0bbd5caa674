/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/detect/detect.h"
#include "agent/detect/handoff.h"
#include "agent/detect/hotspot.h"
#include "agent/detect/link.h"
#include "agent/detect/lossy.h"
#include "agent/detect/mesh.h"
#include "agent/detect/path.h"
#include "agent/detect/pfc.h"
#include "agent/detect/reconcile.h"
#include "agent/detect/roce.h"
#include "agent/detect/stall.h"
#include "agent/lib/loopback.h"
#include "agent/lib/name_find.h"
#include "agent/registry/label_text.h"
#include "collector/metric_names.h"

struct detect_config {
	struct stall_bounds stall; /* detect_stall's bounds */
	double pfc_paused_fraction; /* detect_pfc's: share of time paused */
	double hotspot_util; /* detect_hotspot's: share of capacity in use; detect_lossy's bound */
	double lossy_error_share; /* detect_lossy's: errors per packet */
	int64_t lossy_window_ms; /* over this long */
	int64_t path_window_ms; /* detect_path's: peers compared if active this recently */
	double incast_fraction; /* detect_path's: share of the others' delivery rate */
	int64_t incast_for_ms; /* for this long */
	double straggler_fraction;
	struct handoff_bounds handoff; /* detect_handoff's */
};

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

/* This host's local addresses with fabmon_tcp_unread_*: a node has a few. */
#define DETECT_LOCALS 16

struct unread_gather {
	struct unread_input in[DETECT_LOCALS];
	char local[DETECT_LOCALS][48];
	size_t n;
};

/* An unread series of local address labels' (UNREAD_*), into its row. */
enum {
	UNREAD_SECONDS,
	UNREAD_CONNECTIONS,
	UNREAD_BYTES,
	UNREAD_READING,
	UNREAD_AWAITED,
	UNREAD_NONE
};

static void gather_unread(struct unread_gather *g, const struct series *s, int kind)
{
	char local[48];
	size_t i;

	if (label_value(s->labels, "local", local, sizeof(local)) < 0)
		return;
	for (i = 0; i < g->n && strcmp(g->local[i], local) != 0; i++)
		;
	if (i == g->n) {
		if (g->n == DETECT_LOCALS)
			return;
		memcpy(g->local[i], local, sizeof(local));
		g->in[i] = (struct unread_input){ .local = g->local[i] };
		g->n++;
	}
	if (kind == UNREAD_SECONDS)
		g->in[i].unread_s = s->value;
	else if (kind == UNREAD_CONNECTIONS)
		g->in[i].connections = s->value;
	else if (kind == UNREAD_BYTES)
		g->in[i].bytes = s->value;
	else if (kind == UNREAD_READING)
		g->in[i].reading = s->value;
	else
		g->in[i].awaited_s = s->value;
}

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

/* Per destination peer: RoCEv2 packets and CE marks towards it, per second. */
struct roce_gather {
	struct roce_input in[DETECT_PEERS];
	char peer[DETECT_PEERS][48];
	unsigned char seen[DETECT_PEERS]; /* it had series this tick */
	size_t n;
	size_t hint; /* name_find()'s */
};

/* What a family's series give the RoCE gatherer. */
enum roce_kind { ROCE_NONE, ROCE_PACKETS, ROCE_CE };

static void gather_roce(struct roce_gather *g, const struct series *s, int kind)
{
	char peer[48], dir[8], cls[16];
	int ce = kind == ROCE_CE;
	size_t i;

	if (!s->has_rate)
		return;
	/* towards the peer: the tc probe's egress, or a capture (no direction) */
	if ((label_value(s->labels, "direction", dir, sizeof(dir)) == 0 &&
	     strcmp(dir, "tx") != 0) ||
	    label_value(s->labels, "peer", peer, sizeof(peer)) < 0 || strcmp(peer, "other") == 0)
		return;
	if ((i = name_find(g->peer, g->n, sizeof(g->peer[0]), peer, &g->hint)) == g->n) {
		if (g->n == DETECT_PEERS)
			return;
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

/* The double at offset in a detector's input struct (the gatherers'
 * tables name their fields by offsetof()). */
static double *reading_at(void *input, size_t offset)
{
	return (double *)(void *)((char *)input + offset);
}

/* A peer's row: which of its readings a series gives. */
enum stall_part { PART_STALL, PART_PATH, PART_HANDOFF };

#define STALL_FIELD(f) offsetof(struct stall_input, f)
#define PATH_FIELD(f) offsetof(struct path_input, f)
#define HANDOFF_FIELD(f) offsetof(struct handoff_input, f)
static const struct {
	const char *name;
	unsigned char part; /* enum stall_part */
	unsigned char rate; /* a counter's rate, once it has one; else the value */
	size_t field; /* a double in the part's struct */
} stall_series[] = {
	{ M_TCP_ACK_STALL_SECONDS, PART_STALL, 0, STALL_FIELD(ack_stall_s) },
	{ M_TCP_IN_FLIGHT_BYTES, PART_STALL, 0, STALL_FIELD(in_flight_bytes) },
	{ M_TCP_ZERO_WINDOW_CONNECTIONS, PART_STALL, 0, STALL_FIELD(zero_window) },
	{ M_TCP_SENDER_ACK_STALL_SECONDS, PART_STALL, 0, STALL_FIELD(sender_stall_s) },
	{ M_TCP_READ_STALL_SECONDS, PART_STALL, 0, STALL_FIELD(read_stall_s) },
	{ M_TCP_SENDER_READ_STALL_SECONDS, PART_STALL, 0, STALL_FIELD(sender_read_stall_s) },
	{ M_TCP_SENDER_BUSY_SECONDS, PART_STALL, 0, STALL_FIELD(sender_busy_s) },
	{ M_TCP_TRANSFER_OPEN_SECONDS, PART_STALL, 0, STALL_FIELD(open_s) },
	{ M_TCP_PROGRESS_AGE_SECONDS, PART_STALL, 0, STALL_FIELD(progress_age_s) },
	{ M_TCP_DELIVERY_RATE_BYTES_PER_SECOND, PART_PATH, 0, PATH_FIELD(rate) },
	{ M_TCP_PATH_RETRANSMITS_TOTAL, PART_PATH, 1, PATH_FIELD(retransmits) },
	{ M_TCP_ACKED_BYTES_TOTAL, PART_PATH, 1, PATH_FIELD(acked) },
	{ M_TCP_BUSY_SECONDS_TOTAL, PART_PATH, 1, PATH_FIELD(busy) },
	{ M_TCP_UPSTREAM_BUSY_RATE_BYTES_PER_SECOND, PART_PATH, 0, PATH_FIELD(upstream_rate) },
	{ M_TCP_SENDER_FANOUT_PEERS, PART_PATH, 0, PATH_FIELD(fanout) },
	{ M_TCP_WINDOW_LIMITED_CONNECTIONS, PART_PATH, 0, PATH_FIELD(window_limited) },
	/* bytes; over the seconds below once both are in (detect_run()) */
	{ M_TCP_TRANSFER_BYTES_TOTAL, PART_PATH, 1, PATH_FIELD(goodput) },
	{ M_TCP_TRANSFER_DURATION_SECONDS_COUNT, PART_HANDOFF, 1, HANDOFF_FIELD(transfers) },
	{ M_TCP_TRANSFER_DURATION_SECONDS_SUM, PART_HANDOFF, 1, HANDOFF_FIELD(seconds) },
};
#define STALL_SERIES (sizeof(stall_series) / sizeof(stall_series[0]))

/*
 * kind: an index into stall_series, or STALL_SERIES for another per-peer
 * TCP series (it makes the peer's row, and gives it nothing). Loopback
 * peers make none: their waits and transfer times are no fabric's (a local
 * scrape of this agent's /metrics, slow while the host is busy, was a
 * slow_handoff on 127.0.0.1), and a host's own trouble shows on its fabric
 * connections too.
 */
static void gather_stall(struct stall_gather *g, const struct series *s, int kind)
{
	size_t at, row;
	int found;
	void *part[3]; /* by enum stall_part */

	at = stall_row(g, s->labels, &found);
	if (found) {
		row = g->order[at];
	} else {
		row = g->n;
		if (row == DETECT_PEERS ||
		    label_value(s->labels, "peer", g->peer[row], sizeof(g->peer[row])) < 0 ||
		    strcmp(g->peer[row], "other") == 0 || loopback_text(g->peer[row]))
			return;
		g->in[row] = (struct stall_input){ .peer = g->peer[row] };
		g->path[row] = (struct path_input){ .peer = g->peer[row] };
		g->handoff[row] = (struct handoff_input){ .peer = g->peer[row] };
		g->labels[row] = s->labels;
		memmove(&g->order[at + 1], &g->order[at], (g->n - at) * sizeof(g->order[0]));
		g->order[at] = g->n++;
	}
	g->next = at + 1;
	if ((size_t)kind == STALL_SERIES || (stall_series[kind].rate && !s->has_rate))
		return;
	part[PART_STALL] = &g->in[row];
	part[PART_PATH] = &g->path[row];
	part[PART_HANDOFF] = &g->handoff[row];
	*reading_at(part[stall_series[kind].part], stall_series[kind].field) =
		stall_series[kind].rate ? s->rate : s->value;
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

/* rx pause duration: pause frames received, so this port was told to stop;
 * or, with no direction, the time captured pause frames asked (pcap) */
static void gather_pause(struct pfc_gather *g, const struct series *s)
{
	char ifname[32], prio[8], dir[8], subject[EVENT_SUBJECT_MAX];
	struct pfc_input *p;

	if (!s->has_rate ||
	    (label_value(s->labels, "direction", dir, sizeof(dir)) == 0 &&
	     strcmp(dir, "rx") != 0) ||
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

/* What a family's series give the PFC gatherer. */
enum pfc_kind { PFC_NONE, PFC_PAUSE, PFC_WAIT, PFC_TX_BYTES, PFC_LINK_BYTES };

static void gather_pfc(struct pfc_gather *g, const struct series *s, int kind)
{
	char dev[48], port[8], subject[EVENT_SUBJECT_MAX];
	struct pfc_input *p;

	if (kind == PFC_PAUSE) {
		gather_pause(g, s);
		return;
	}
	if ((kind != PFC_LINK_BYTES && !s->has_rate) ||
	    label_value(s->labels, "device", dev, sizeof(dev)) < 0 ||
	    label_value(s->labels, "port", port, sizeof(port)) < 0)
		return;
	snprintf(subject, sizeof(subject), "device=%s,port=%s", dev, port);
	p = pfc_port(g, subject);
	if (!p)
		return;
	if (kind == PFC_WAIT)
		p->xmit_wait_rate = s->rate;
	else if (kind == PFC_TX_BYTES)
		p->tx_bytes_rate = s->rate;
	else
		p->link_bytes = s->value;
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
	{ M_NETDEV_TRANSMIT_BYTES_TOTAL, HOTSPOT_FIELD(tx_bytes_rate), NULL, NULL },
	{ M_NETDEV_RECEIVE_BYTES_TOTAL, HOTSPOT_FIELD(rx_bytes_rate), NULL, NULL },
	{ M_NETDEV_SPEED_BYTES, HOTSPOT_FIELD(link_bytes), NULL, NULL },
	{ M_NETDEV_RECEIVE_DROPS_TOTAL, HOTSPOT_FIELD(if_drops_rate), NULL, NULL },
	{ M_NETDEV_TRANSMIT_DROPS_TOTAL, HOTSPOT_FIELD(if_drops_rate), NULL, NULL },
	/* the root qdisc holds all the link's queue; children would count twice */
	{ M_QDISC_RATE_BYTES, HOTSPOT_FIELD(shaped_bytes), "parent", "root" },
	{ M_QDISC_BACKLOG_BYTES, HOTSPOT_FIELD(backlog_bytes), "parent", "root" },
	{ M_QDISC_DROPS_TOTAL, HOTSPOT_FIELD(qdisc_drops_rate), "parent", "root" },
	{ M_QDISC_OVERLIMITS_TOTAL, HOTSPOT_FIELD(overlimits_rate), "parent", "root" },
	/* received pause: the far end asks this link to stop */
	{ M_ETHTOOL_PAUSE_FRAMES_TOTAL, HOTSPOT_FIELD(rx_pause_rate), "direction", "rx" },
	{ M_ETHTOOL_LINK_PAUSE_FRAMES_TOTAL, HOTSPOT_FIELD(rx_pause_rate), "direction", "rx" },
	{ M_FLOW_ECN_CE_PACKETS_TOTAL, HOTSPOT_FIELD(ecn_ce_rate), NULL, NULL },
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

#define HOTSPOT_SERIES (sizeof(hotspot_series) / sizeof(hotspot_series[0]))

/* i: the series' index in hotspot_series */
static void gather_hotspot(struct hotspot_gather *g, const struct series *s, size_t i)
{
	char ifname[32], want[16], subject[EVENT_SUBJECT_MAX];
	struct hotspot_input *p, *prev;
	double *field;

	if ((s->type == METRIC_COUNTER && !s->has_rate) ||
	    label_value(s->labels, "interface", ifname, sizeof(ifname)) < 0)
		return;
	if (hotspot_series[i].key &&
	    (label_value(s->labels, hotspot_series[i].key, want, sizeof(want)) < 0 ||
	     strcmp(want, hotspot_series[i].value) != 0))
		return;
	snprintf(subject, sizeof(subject), "interface=%s", ifname);
	p = hotspot_link(g, g->cur, subject, 1);
	if (!p)
		return;
	field = reading_at(p, hotspot_series[i].field);
	*field += s->type == METRIC_COUNTER ? s->rate : s->value;
	if (field != &p->backlog_bytes)
		return;
	prev = hotspot_link(g, g->cur ^ 1, subject, 0);
	if (prev && g->ms[g->cur] > g->ms[g->cur ^ 1])
		p->backlog_growth = (p->backlog_bytes - prev->backlog_bytes) * 1000.0 /
				    (double)(g->ms[g->cur] - g->ms[g->cur ^ 1]);
}

/* Each interface's operational state this tick (link_input's bytes come
 * from the hotspot's readings once the walk is done). */
struct link_gather {
	struct link_input in[LINK_PORTS];
	size_t n;
};

static void gather_link(struct link_gather *g, const struct series *s)
{
	char ifname[32];

	if (g->n == LINK_PORTS || label_value(s->labels, "interface", ifname, sizeof(ifname)) < 0)
		return;
	snprintf(g->in[g->n].subject, sizeof(g->in[g->n].subject), "interface=%s", ifname);
	g->in[g->n].up = s->value > 0;
	g->in[g->n++].bytes_rate = 0;
}

static void link_traffic(struct link_gather *g, struct hotspot_gather *hg)
{
	for (size_t i = 0; i < g->n; i++) {
		const struct hotspot_input *p = hotspot_link(hg, hg->cur, g->in[i].subject, 0);

		if (p)
			g->in[i].bytes_rate = p->tx_bytes_rate + p->rx_bytes_rate;
	}
}

/*
 * Ports' error counters and the packets beside them: an interface's
 * (ethtool's FCS and symbol errors, netdev's packets) or an RDMA port's
 * (sysfs counters and hw_counters). Errors add up over the families.
 */
struct lossy_gather {
	struct lossy_input in[DETECT_PORTS];
	size_t n;
};

#define LOSSY_FIELD(f) offsetof(struct lossy_input, f)
static const struct {
	const char *name;
	size_t field; /* a double in struct lossy_input */
} lossy_series[] = {
	{ M_ETHTOOL_RX_PHY_ERRORS_TOTAL, LOSSY_FIELD(errors) },
	{ M_NETDEV_RECEIVE_PACKETS_TOTAL, LOSSY_FIELD(packets) },
	{ M_NETDEV_TRANSMIT_PACKETS_TOTAL, LOSSY_FIELD(packets) },
	{ M_RDMA_PORT_SYMBOL_ERRORS_TOTAL, LOSSY_FIELD(errors) },
	{ M_RDMA_PORT_RECEIVE_ERRORS_TOTAL, LOSSY_FIELD(errors) },
	{ M_RDMA_PORT_LINK_ERROR_RECOVERIES_TOTAL, LOSSY_FIELD(errors) },
	/* the transport's: loss it had to recover from */
	{ M_RDMA_OUT_OF_SEQUENCE_PACKETS_TOTAL, LOSSY_FIELD(errors) },
	{ M_RDMA_PACKET_SEQUENCE_ERRORS_TOTAL, LOSSY_FIELD(errors) },
	{ M_RDMA_LOCAL_ACK_TIMEOUTS_TOTAL, LOSSY_FIELD(errors) },
	{ M_RDMA_PORT_RECEIVE_PACKETS_TOTAL, LOSSY_FIELD(packets) },
	{ M_RDMA_PORT_TRANSMIT_PACKETS_TOTAL, LOSSY_FIELD(packets) },
};
#define LOSSY_SERIES (sizeof(lossy_series) / sizeof(lossy_series[0]))

/* i: the series' index in lossy_series */
static void gather_lossy(struct lossy_gather *g, const struct series *s, size_t i)
{
	char ifname[32], dev[48], port[8], subject[EVENT_SUBJECT_MAX];
	struct lossy_input *p = NULL;

	if (!s->has_rate)
		return;
	if (label_value(s->labels, "interface", ifname, sizeof(ifname)) == 0)
		snprintf(subject, sizeof(subject), "interface=%s", ifname);
	else if (label_value(s->labels, "device", dev, sizeof(dev)) == 0 &&
		 label_value(s->labels, "port", port, sizeof(port)) == 0)
		snprintf(subject, sizeof(subject), "device=%s,port=%s", dev, port);
	else
		return;
	for (size_t j = 0; j < g->n && !p; j++)
		if (strcmp(g->in[j].subject, subject) == 0)
			p = &g->in[j];
	if (!p) {
		if (g->n == DETECT_PORTS)
			return;
		p = &g->in[g->n++];
		memset(p, 0, sizeof(*p));
		memcpy(p->subject, subject, sizeof(subject));
		p->util = -1;
	}
	*reading_at(p, lossy_series[i].field) += s->rate;
}

/* Each port's utilisation from the links' (interfaces) and the PFC
 * gatherer's RDMA ports, where their capacity is known. */
static void lossy_util(struct lossy_gather *g, const struct hotspot_input *links, size_t nlinks,
		       const struct pfc_gather *pg)
{
	for (size_t i = 0; i < g->n; i++) {
		struct lossy_input *p = &g->in[i];

		for (size_t j = 0; j < nlinks; j++)
			if (strcmp(links[j].subject, p->subject) == 0)
				p->util = hotspot_util(&links[j]);
		for (size_t j = 0; j < pg->n; j++)
			if (strcmp(pg->in[j].subject, p->subject) == 0 && pg->in[j].link_bytes > 0)
				p->util = pg->in[j].tx_bytes_rate / pg->in[j].link_bytes;
	}
}

/*
 * What a family's series are to each gatherer. The registry walks series
 * by family, every series of one under the same name pointer (struct
 * series), so this is worked out once a family: compared for every series,
 * the names' strcmp()s were 38 % of detect_run()'s instructions at 1000
 * peers with RoCEv2 (callgrind over tests/bench/detectcost.c -r).
 */
struct series_kind {
	const char *name; /* the family these are for; NULL before the first */
	int roce; /* enum roce_kind */
	int stall; /* gather_stall()'s kind; -1 for none */
	int pfc; /* enum pfc_kind */
	int hotspot; /* index in hotspot_series; -1 for none */
	int lossy; /* index in lossy_series; -1 for none */
	int cpu_pressure; /* this host's CPU waiting time */
	int link; /* an interface's operational state */
	int mesh; /* a family detect_mesh reads */
	int unread; /* UNREAD_* */
};

static void series_kind_of(struct series_kind *k, const char *name)
{
	int i;

	k->name = name;
	k->roce = strcmp(name, M_ROCE_PACKETS_TOTAL) == 0	   ? ROCE_PACKETS
		  : strcmp(name, M_ROCE_ECN_CE_PACKETS_TOTAL) == 0 ? ROCE_CE
								   : ROCE_NONE;
	/* one row per peer: a histogram's buckets carry an le label besides */
	k->stall = -1;
	if (strncmp(name, M_TCP_PREFIX, sizeof(M_TCP_PREFIX) - 1) == 0 &&
	    strcmp(name, M_TCP_TRANSFER_DURATION_SECONDS_BUCKET) != 0)
		for (k->stall = 0; (size_t)k->stall < STALL_SERIES; k->stall++)
			if (strcmp(name, stall_series[k->stall].name) == 0)
				break;
	if (strcmp(name, M_ETHTOOL_PAUSE_DURATION_SECONDS_TOTAL) == 0 ||
	    strcmp(name, M_ETHTOOL_LINK_PAUSE_DURATION_SECONDS_TOTAL) == 0 ||
	    strcmp(name, M_PCAP_PAUSE_DURATION_SECONDS_TOTAL) == 0 ||
	    strcmp(name, M_PCAP_LINK_PAUSE_DURATION_SECONDS_TOTAL) == 0)
		k->pfc = PFC_PAUSE;
	else if (strcmp(name, M_RDMA_PORT_TRANSMIT_WAIT_TOTAL) == 0)
		k->pfc = PFC_WAIT;
	else if (strcmp(name, M_RDMA_PORT_TRANSMIT_BYTES_TOTAL) == 0)
		k->pfc = PFC_TX_BYTES;
	else if (strcmp(name, M_RDMA_PORT_RATE_BYTES) == 0)
		k->pfc = PFC_LINK_BYTES;
	else
		k->pfc = PFC_NONE;
	for (i = 0; (size_t)i < HOTSPOT_SERIES && strcmp(name, hotspot_series[i].name) != 0; i++)
		;
	k->hotspot = (size_t)i < HOTSPOT_SERIES ? i : -1;
	for (i = 0; (size_t)i < LOSSY_SERIES && strcmp(name, lossy_series[i].name) != 0; i++)
		;
	k->lossy = (size_t)i < LOSSY_SERIES ? i : -1;
	k->cpu_pressure = strcmp(name, M_PRESSURE_CPU_WAITING_SECONDS_TOTAL) == 0;
	k->link = strcmp(name, M_NETDEV_UP) == 0;
	k->mesh = mesh_gather_wants(name);
	k->unread = strcmp(name, M_TCP_UNREAD_SECONDS) == 0	   ? UNREAD_SECONDS
		    : strcmp(name, M_TCP_UNREAD_CONNECTIONS) == 0  ? UNREAD_CONNECTIONS
		    : strcmp(name, M_TCP_UNREAD_BYTES) == 0	   ? UNREAD_BYTES
		    : strcmp(name, M_TCP_READING_CONNECTIONS) == 0 ? UNREAD_READING
		    : strcmp(name, M_TCP_AWAITED_SECONDS) == 0	   ? UNREAD_AWAITED
								   : UNREAD_NONE;
}

/* Every gatherer of a tick, in one pass over the registry. */
struct tick_gather {
	struct roce_gather *roce;
	struct stall_gather *stall;
	struct pfc_gather *pfc;
	struct hotspot_gather *hotspot;
	struct lossy_gather *lossy;
	struct link_gather *link;
	double cpu_waiting; /* share of the tick a task here waited for a CPU; NAN: unknown */
	struct mesh_gather *mesh;
	struct unread_gather *unread;
	struct series_kind kind; /* of the last series' family */
};

/* Each gatherer takes its own series and passes over the rest. One walk of
 * the registry, not one each: the walk was a fifth of detect_run()'s time
 * at 1000 peers with RoCEv2 (perf over tests/bench/detectcost.c -r). */
static int gather_series(struct series *s, void *arg)
{
	struct tick_gather *t = arg;

	if (s->name != t->kind.name)
		series_kind_of(&t->kind, s->name);
	if (t->kind.roce != ROCE_NONE)
		gather_roce(t->roce, s, t->kind.roce);
	if (t->kind.stall >= 0)
		gather_stall(t->stall, s, t->kind.stall);
	if (t->kind.pfc != PFC_NONE)
		gather_pfc(t->pfc, s, t->kind.pfc);
	if (t->kind.hotspot >= 0)
		gather_hotspot(t->hotspot, s, (size_t)t->kind.hotspot);
	if (t->kind.lossy >= 0)
		gather_lossy(t->lossy, s, (size_t)t->kind.lossy);
	if (t->kind.link)
		gather_link(t->link, s);
	if (t->kind.cpu_pressure && s->has_rate)
		t->cpu_waiting = s->rate;
	if (t->kind.mesh)
		mesh_gather_series(t->mesh, s);
	if (t->kind.unread != UNREAD_NONE)
		gather_unread(t->unread, s, t->kind.unread);
	return 0;
}

/*
 * Adds this host's CPU waiting share to a host_stall's evidence (none when
 * unknown): where the stalled application runs here (another namespace of
 * this host), a high share says the host starved it; a low one that it
 * stopped on its own (paused, hung).
 */
static void evidence_add_cpu(struct event_verdict *v, double share)
{
	size_t len = strlen(v->evidence);
	char add[64];
	int n;

	if (isnan(share) || len == 0 || v->evidence[len - 1] != '}')
		return;
	n = snprintf(add, sizeof(add), ",\"host_cpu_waiting_share\":%.2f}", share);
	/* a full evidence keeps what it has */
	if (n > 0 && len - 1 + (size_t)n < sizeof(v->evidence))
		memcpy(v->evidence + len - 1, add, (size_t)n + 1);
}

/* The detectors' settings from the agent's configuration. */
static void detect_config_init(struct detect_config *d, const struct config *cfg)
{
	*d = (struct detect_config){
		.stall = { (double)cfg->stall_after_ms / 1000.0,
			   (double)cfg->host_stall_after_ms / 1000.0 },
		.pfc_paused_fraction = cfg->pfc_paused_percent / 100.0,
		.hotspot_util = cfg->hotspot_util_percent / 100.0,
		.lossy_error_share = cfg->lossy_link_ppm / 1e6,
		.lossy_window_ms = cfg->lossy_link_for_ms,
		.path_window_ms = cfg->path_window_ms,
		.incast_fraction = cfg->incast_percent / 100.0,
		.incast_for_ms = cfg->incast_for_ms,
		.straggler_fraction = cfg->straggler_percent / 100.0,
		.handoff = { .ratio = cfg->handoff_slow_percent / 100.0,
			     .extra_s = (double)cfg->handoff_slow_extra_ms / 1000.0 },
	};
}

/* Every detector's state from tick to tick, and each tick's gathered input
 * (large: on the heap, not a stack). */
struct detect {
	struct detect_config cfg;
	struct stall_gather sg;
	struct pfc_gather pg;
	struct hotspot_gather hg;
	struct path_history ph;
	struct handoff_history hh;
	struct roce_gather rg;
	struct stall_history sh;
	struct lossy_gather lg;
	struct lossy_history lh;
	struct mesh_gather mg;
	struct mesh_history mh;
	struct link_gather kg;
	struct link_history kh;
	struct unread_gather ug;
	struct unread_history uh;
};

int detect_new(const struct config *cfg, struct detect **ret)
{
	struct detect *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	detect_configure(d, cfg);
	*ret = d;
	return 0;
}

void detect_configure(struct detect *d, const struct config *cfg)
{
	detect_config_init(&d->cfg, cfg);
	d->mh.flows = cfg->mesh.flows;
	d->mh.answer_wait_ms = mesh_answer_wait_ms(cfg->mesh.interval_ms);
}

void detect_free(struct detect *d)
{
	if (d)
		mesh_history_free(&d->mh);
	free(d);
}

size_t detect_run(struct detect *d, struct registry *reg, struct event_verdict *out, size_t max)
{
	const struct detect_config *cfg = &d->cfg;
	struct stall_gather *sg = &d->sg;
	struct pfc_gather *pg = &d->pg;
	struct hotspot_gather *hg = &d->hg;
	struct roce_gather *rg = &d->rg;
	struct lossy_gather *lg = &d->lg;
	const struct lossy_bounds lb = { cfg->lossy_error_share, cfg->hotspot_util,
					 cfg->lossy_window_ms };
	const struct path_config pcfg = { cfg->path_window_ms, cfg->incast_fraction,
					  cfg->incast_for_ms, cfg->straggler_fraction };
	struct tick_gather tg = {
		rg,	sg,
		pg,	hg,
		lg,	&d->kg,
		NAN,	&d->mg,
		&d->ug, { NULL, ROCE_NONE, -1, PFC_NONE, -1, -1, 0, 0, 0, UNREAD_NONE }
	};
	size_t n, k;
	int paced = 0; /* an incast verdict this tick */

	sg->n = 0;
	sg->next = 0;
	pg->n = 0;
	lg->n = 0;
	d->kg.n = 0;
	d->ug.n = 0;
	mesh_gather_begin(&d->mg);
	roce_gather_begin(rg);
	hg->cur ^= 1;
	hg->n[hg->cur] = 0;
	hg->ms[hg->cur] = registry_now(reg);
	(void)registry_foreach(reg, gather_series, &tg);
	roce_gather_end(rg);
	lossy_util(lg, hg->in[hg->cur], hg->n[hg->cur], pg);
	link_traffic(&d->kg, hg);
	mesh_history_update(&d->mh, &d->mg, registry_now(reg));
	for (size_t i = 0; i < sg->n; i++) {
		int stalled = sg->in[i].ack_stall_s >= cfg->stall.after_s;

		sg->in[i].reached = mesh_answered_since(
			&d->mh, sg->in[i].peer,
			registry_now(reg) - (int64_t)(sg->in[i].ack_stall_s * 500));

		/* a reader idle for as long as the network's stall bound leaves
		 * its path nothing to measure, then a burst */
		sg->path[i].stalled = stalled || sg->in[i].read_stall_s >= cfg->stall.after_s;
		/* a transfer slows the moment its receiver stops reading, and is
		 * judged at once: any read stall is the host's, not the path's.
		 * Paths are compared over several ticks, and an all-to-all
		 * receiver that reads its senders in turn leaves one unread for
		 * a moment: from the bound (with any, t_incast's first tick over
		 * went from 0.2 to 0.39 s, one run's to 3 s). */
		sg->handoff[i].stalled = stalled || sg->in[i].read_stall_s > 0;
		/* nor while probes to it were lost at random in the mesh's loss
		 * window: a lossy path slows its transfers too, and lossy_link,
		 * once the losses pass its bound, names the link to mend. Asked
		 * only of a tick with transfers, the one that would give a
		 * sample: the window is longer than a stall's aftermath, and a
		 * peer without transfers needs no hand-off entry */
		if (sg->handoff[i].transfers > 0 && !sg->handoff[i].stalled)
			sg->handoff[i].stalled = mesh_lost_since(
				&d->mh, sg->in[i].peer, registry_now(reg) - MESH_LOSS_WINDOW_MS);
		/* busy while its peer does not ack is the stall's to judge,
		 * from its own bound: a rate from such a tick would name a cut
		 * link a straggler or an incast first. Under a quarter of that
		 * bound a wait is a delayed ACK's (40 ms). One it leaves unread
		 * (agent/detect/path.h) is no straggler's either. */
		if (sg->in[i].ack_stall_s >= cfg->stall.after_s / 4)
			sg->path[i].busy = 0;
		sg->path[i].unread = sg->in[i].read_stall_s > 0;
		/* transfer bytes and seconds, both per second of the tick */
		sg->path[i].goodput = sg->handoff[i].goodput =
			sg->handoff[i].seconds > 0 ? sg->path[i].goodput / sg->handoff[i].seconds
						   : 0;
	}
	path_history_update(&d->ph, sg->path, sg->n, pcfg.window_ms, registry_now(reg));
	n = detect_path(&d->ph, &pcfg, registry_now(reg), out, max);
	for (size_t j = 0; j < n; j++)
		paced |= out[j].kind == EVENT_INCAST;
	for (size_t i = 0; i < sg->n; i++)
		sg->in[i].paced = paced;
	/* the paths above still see such waits as the stalls they are */
	stall_aftermath(&d->sh, sg->in, sg->n, &cfg->stall, registry_now(reg));
	k = detect_stall(sg->in, sg->n, &cfg->stall, out + n, max - n);
	k += detect_unread(d->ug.in, d->ug.n, sg->in, sg->n, &cfg->stall, &d->uh, out + n + k,
			   max - n - k);
	for (size_t j = n; j < n + k; j++)
		if (out[j].kind == EVENT_HOST_STALL)
			evidence_add_cpu(&out[j], tg.cpu_waiting);
	n += k;
	handoff_history_update(&d->hh, sg->handoff, sg->n, &cfg->handoff, pcfg.window_ms,
			       registry_now(reg));
	n += detect_handoff(&d->hh, &cfg->handoff,
			    path_history_active(&d->ph, pcfg.window_ms, registry_now(reg)),
			    pcfg.window_ms, registry_now(reg), out + n, max - n);
	n += detect_pfc(pg->in, pg->n, cfg->pfc_paused_fraction, out + n, max - n);
	n += detect_roce(rg->in, rg->n, cfg->incast_fraction, out + n, max - n);
	lossy_history_update(&d->lh, lg->in, lg->n, lb.window_ms, registry_now(reg));
	n += detect_lossy(&d->lh, &lb, registry_now(reg), out + n, max - n);
	link_history_update(&d->kh, d->kg.in, d->kg.n, pcfg.window_ms, registry_now(reg));
	n += detect_link(&d->kh, registry_now(reg), out + n, max - n);
	n += detect_mesh(&d->mh, &d->mg, registry_now(reg), out + n, max - n);
	n += detect_hotspot(hg->in[hg->cur], hg->n[hg->cur], cfg->hotspot_util, out + n, max - n);
	return reconcile(&d->kh, &d->mh, &d->mg, out, n, registry_now(reg));
}
