/* SPDX-License-Identifier: MIT */
/*
 * pcap: what libpcap sees on two kinds of interface.
 *
 * Mirror ports (pcap_interfaces): a switch copies fabric traffic there (SPAN),
 * RoCEv2 that real RDMA NICs keep from the kernel among it. A kernel filter
 * passes only UDP 4791 and LLDP; each packet is counted per flow and per
 * queue pair by the same accounting as the tc probe (collector/pcap/capture.h)
 * and exported in the same families with source="pcap". A capture has no
 * direction: packets count towards their destination.
 *
 * Fabric interfaces (lldp_interfaces; by default the physical NICs that
 * `interfaces` selects): only LLDP, so that each NIC names the switch port
 * it is cabled to, as fabmon_lldp_neighbor_info, forgotten after the TTL
 * the neighbour gave.
 *
 * A thread of the collector's own drains the handles as packets come (a
 * mirror port can carry hundreds of thousands a second, more than a kernel
 * buffer holds for a tick); the tick reads the counts under a lock. Packets
 * the kernel buffer could not hold are counted from pcap_stats(), not lost
 * silently.
 */
#include <errno.h>
#include <limits.h>
#include <linux/if_packet.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <net/if.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include "collector/collector.h"
#include "collector/flow_series.h"
#include "collector/pcap/capture.h"
#include "collector/pcap/lldp.h"
#include "collector/pcap/pause_series.h"
#include "collector/sysfs.h"

#define PCAP_HANDLES_MAX 64
/* Whole frames: an LLDPDU runs to 1500 bytes; RoCEv2 needs only its first
 * 128 (Ethernet, two tags, IPv6, UDP, BTH, AETH), but the kernel filter
 * passes nothing else, and the capture thread keeps up with full frames. */
#define PCAP_SNAPLEN 1518
#define PCAP_MIRROR_BUFFER (32 << 20)
#define PCAP_LLDP_BUFFER (256 << 10)
/* Packets one pcap_dispatch() takes, with the lock held: the tick waits
 * for at most one batch. */
#define PCAP_BATCH 512
/* How long the capture thread sleeps in poll() with nothing to read: how
 * soon it sees that it must stop. */
#define PCAP_POLL_MS 100
/* IEEE 802.1AB-2016 7.1: the nearest-bridge group address LLDP is sent to;
 * NICs filter multicast, so the capture joins it. */
static const unsigned char lldp_group[6] = { 0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e };
/* RoCEv2 (IBTA A17: UDP 4791), tagged or not, LLDP (ethertype 0x88cc), and
 * PAUSE and PFC frames (MAC Control, 0x8808) where the mirror passes them. */
#define PCAP_MIRROR_FILTER                                                                         \
	"udp dst port 4791 or ether proto 0x88cc or ether proto 0x8808 or (vlan and "              \
	"(udp dst port 4791 or (vlan and udp dst port 4791)))"
#define PCAP_LLDP_FILTER "ether proto 0x88cc"

struct handle {
	pcap_t *p;
	char ifname[IF_NAMESIZE];
	unsigned ifindex;
	int linktype;
	int mirror;
	uint64_t received, dropped, ifdropped; /* pcap_stats: monotonic */
	struct capture_pause pause; /* the PAUSE and PFC frames it captured */
	unsigned link_mbps; /* what they are timed at (link_mbps()); 0 unknown as yet */
	unsigned last_recv, last_drop, last_ifdrop; /* as pcap_stats last gave them */
};

/* A neighbour heard on an interface. */
struct neighbor {
	char ifname[IF_NAMESIZE];
	struct lldp_neighbor n;
	int64_t expires_ms;
};

struct pcap_state {
	struct handle h[PCAP_HANDLES_MAX];
	size_t n;
	struct capture *cap;
	struct flow_series *series;
	struct neighbor nb[PCAP_HANDLES_MAX];
	size_t nnb;
	uint64_t lldp_bad; /* LLDP frames that did not parse */
	int64_t rx_ms; /* when the capture thread last woke: LLDP TTLs count from it */
	struct handle *cur; /* the handle being drained */
	/* everything above is the capture thread's while it holds lock */
	pthread_mutex_t lock;
	pthread_t thread;
	int running;
	atomic_int stop;
};

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A physical NIC has a device behind it in sysfs; veth, bridges, lo do not. */
static int is_physical(const struct collector_env *env, const char *ifname)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/class/net/%s/device", env->sysfs_root, ifname);
	return stat(path, &st) == 0;
}

static void why_add(char *why, size_t len, const char *ifname, const char *reason)
{
	size_t used = strlen(why);

	if (used < len)
		snprintf(why + used, len - used, "%spcap: %s: %s", used ? "; " : "", ifname,
			 reason);
}

/*
 * The speed PAUSE and PFC frames captured on ifname are timed at: the
 * configured pcap_link_speed, else the interface's own (sysfs, Mb/s), which
 * on a mirror port is the port's own and may not be the mirrored one's.
 * 0 where neither is known (the frames are then counted, not timed).
 */
static unsigned link_mbps(const struct collector_env *env, const char *ifname)
{
	char path[PATH_MAX];
	uint64_t mbps;

	if (env->pcap_link_mbps)
		return env->pcap_link_mbps;
	snprintf(path, sizeof(path), "class/net/%s/speed", ifname);
	/* an interface with no link, or no speed to give, reads -1 or fails */
	return sysfs_read_u64(env->sysfs_root, path, &mbps) == 0 && mbps <= UINT32_MAX
		       ? (unsigned)mbps
		       : 0;
}

/* Opens a non-blocking capture of ifname; 0 or -errno with why. */
static int handle_open(struct handle *h, const char *ifname, unsigned ifindex, int mirror,
		       char *why, size_t why_len)
{
	char errbuf[PCAP_ERRBUF_SIZE];
	struct bpf_program prog;
	struct packet_mreq mr;
	int r;

	memset(h, 0, sizeof(*h));
	snprintf(h->ifname, sizeof(h->ifname), "%s", ifname);
	h->ifindex = ifindex;
	h->mirror = mirror;
	h->p = pcap_create(ifname, errbuf);
	if (!h->p) {
		why_add(why, why_len, ifname, errbuf);
		return -ENODEV;
	}
	(void)pcap_set_snaplen(h->p, PCAP_SNAPLEN);
	/* a mirror port receives frames addressed to others: that is its job */
	(void)pcap_set_promisc(h->p, mirror);
	(void)pcap_set_buffer_size(h->p, mirror ? PCAP_MIRROR_BUFFER : PCAP_LLDP_BUFFER);
	(void)pcap_set_timeout(h->p, 100);
	r = pcap_activate(h->p);
	if (r < 0) {
		why_add(why, why_len, ifname, pcap_geterr(h->p));
		r = r == PCAP_ERROR_PERM_DENIED ? -EPERM : -ENODEV;
		goto fail;
	}
	h->linktype = pcap_datalink(h->p);
	if (pcap_compile(h->p, &prog, mirror ? PCAP_MIRROR_FILTER : PCAP_LLDP_FILTER, 1,
			 PCAP_NETMASK_UNKNOWN) < 0 ||
	    pcap_setfilter(h->p, &prog) < 0) {
		why_add(why, why_len, ifname, pcap_geterr(h->p));
		r = -EINVAL;
		goto fail;
	}
	pcap_freecode(&prog);
	if (pcap_setnonblock(h->p, 1, errbuf) < 0) {
		why_add(why, why_len, ifname, errbuf);
		r = -EINVAL;
		goto fail;
	}
	/* packet(7): PACKET_ADD_MEMBERSHIP lets the LLDP group through the NIC */
	memset(&mr, 0, sizeof(mr));
	mr.mr_ifindex = (int)ifindex;
	mr.mr_type = PACKET_MR_MULTICAST;
	mr.mr_alen = sizeof(lldp_group);
	memcpy(mr.mr_address, lldp_group, sizeof(lldp_group));
	(void)setsockopt(pcap_fileno(h->p), SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr));
	return 0;
fail:
	pcap_close(h->p);
	h->p = NULL;
	return r;
}

static void pcap_collector_fini(void *state)
{
	struct pcap_state *st = state;

	if (!st)
		return;
	if (st->running) {
		atomic_store(&st->stop, 1);
		pthread_join(st->thread, NULL);
	}
	pthread_mutex_destroy(&st->lock);
	for (size_t i = 0; i < st->n; i++)
		pcap_close(st->h[i].p);
	capture_free(st->cap);
	flow_series_free(st->series);
	free(st);
}

static void *capture_loop(void *arg);

static int pcap_collector_init(const struct collector_env *env, void **ret_state, char *why,
			       size_t why_len)
{
	struct if_nameindex *ifs = if_nameindex(), *i;
	struct pcap_state *st = calloc(1, sizeof(*st));
	int r = -ENOENT, last_err = 0;

	why[0] = '\0';
	if (st)
		pthread_mutex_init(&st->lock, NULL);
	if (!ifs || !st) {
		r = -ENOMEM;
		goto out;
	}
	st->cap = capture_new(env->bpf_max_flows, env->roce_pmtu, 0);
	st->series = flow_series_new(env->bpf_max_flows, env->bpf_top_peers);
	if (!st->cap || !st->series) {
		r = -ENOMEM;
		goto out;
	}
	for (i = ifs; i->if_index && st->n < PCAP_HANDLES_MAX; i++) {
		int mirror = env->pcap_interfaces &&
			     regexec(env->pcap_interfaces, i->if_name, 0, NULL, 0) == 0;
		int lldp = env->lldp_interfaces
				   ? regexec(env->lldp_interfaces, i->if_name, 0, NULL, 0) == 0
				   : collector_want_interface(env, i->if_name) &&
					     is_physical(env, i->if_name);
		int e;

		if (!mirror && !lldp)
			continue;
		e = handle_open(&st->h[st->n], i->if_name, i->if_index, mirror, why, why_len);
		if (e < 0)
			last_err = e;
		else
			st->n++;
	}
	if (st->n && pthread_create(&st->thread, NULL, capture_loop, st) != 0) {
		snprintf(why, why_len, "pcap: unable to start the capture thread");
		r = -ENOMEM;
	} else if (st->n) {
		size_t used = strlen(why);

		st->running = 1;

		/* for doctor: where it listens (after any interface that failed) */
		for (size_t k = 0; k < st->n && used < why_len; k++, used = strlen(why))
			snprintf(why + used, why_len - used, "%spcap: %s on %s", used ? "; " : "",
				 st->h[k].mirror ? "mirror capture" : "LLDP", st->h[k].ifname);
		*ret_state = st;
		st = NULL;
		r = 0;
	} else if (last_err) {
		r = last_err;
	} else {
		snprintf(why, why_len,
			 "pcap: no interface to capture on (pcap_interfaces selects mirror ports, "
			 "lldp_interfaces where LLDP is heard; by default the physical NICs)");
	}
out:
	if (ifs)
		if_freenameindex(ifs);
	pcap_collector_fini(st);
	return r;
}

/* Remembers (or, at TTL 0, forgets) what an LLDPDU on the current handle says. */
static void lldp_heard(struct pcap_state *st, const struct packet *pkt)
{
	struct lldp_neighbor n;
	const char *why;
	size_t i;

	if (lldp_parse(pkt->lldp, pkt->lldp_len, &n, &why) < 0) {
		st->lldp_bad++;
		return;
	}
	/* one neighbour an interface: the far end of the cable */
	for (i = 0; i < st->nnb; i++)
		if (strcmp(st->nb[i].ifname, st->cur->ifname) == 0)
			break;
	if (i == st->nnb) {
		if (st->nnb == PCAP_HANDLES_MAX)
			return;
		st->nnb++;
	}
	snprintf(st->nb[i].ifname, sizeof(st->nb[i].ifname), "%s", st->cur->ifname);
	st->nb[i].n = n;
	st->nb[i].expires_ms = st->rx_ms + (int64_t)n.ttl * 1000;
}

static void on_packet(u_char *arg, const struct pcap_pkthdr *h, const u_char *data)
{
	struct pcap_state *st = (struct pcap_state *)(void *)arg;
	uint64_t ts = (uint64_t)h->ts.tv_sec * 1000000000ULL + (uint64_t)h->ts.tv_usec * 1000ULL;
	struct packet pkt;
	const char *why;

	if (capture_packet(st->cap, st->cur->ifindex, st->cur->linktype, data, h->caplen, h->len,
			   ts, &pkt, &why) != 0)
		return;
	if (pkt.kind == PACKET_LLDP)
		lldp_heard(st, &pkt);
	else if (pkt.kind == PACKET_PAUSE)
		capture_pause_add(&st->cur->pause, &pkt, ts, st->cur->link_mbps);
}

/*
 * The capture thread: waits for any handle to have packets, then takes them
 * a batch at a time, each batch under the lock.
 */
static void *capture_loop(void *arg)
{
	struct pcap_state *st = arg;
	struct pollfd pfd[PCAP_HANDLES_MAX];

	for (size_t i = 0; i < st->n; i++)
		pfd[i] = (struct pollfd){ .fd = pcap_get_selectable_fd(st->h[i].p),
					  .events = POLLIN };
	while (!atomic_load(&st->stop)) {
		if (poll(pfd, st->n, PCAP_POLL_MS) < 0 && errno != EINTR)
			break;
		for (size_t i = 0; i < st->n; i++) {
			int got;

			do {
				pthread_mutex_lock(&st->lock);
				st->rx_ms = wall_ms();
				st->cur = &st->h[i];
				got = pcap_dispatch(st->cur->p, PCAP_BATCH, on_packet,
						    (u_char *)(void *)st);
				pthread_mutex_unlock(&st->lock);
			} while (got == PCAP_BATCH && !atomic_load(&st->stop));
		}
	}
	return NULL;
}

/* pcap_stats() counts in unsigned ints that wrap; keeps monotonic totals. */
static void handle_stats(struct handle *h)
{
	struct pcap_stat ps;

	if (pcap_stats(h->p, &ps) < 0)
		return;
	h->received += (unsigned)(ps.ps_recv - h->last_recv);
	h->dropped += (unsigned)(ps.ps_drop - h->last_drop);
	h->ifdropped += (unsigned)(ps.ps_ifdrop - h->last_ifdrop);
	h->last_recv = ps.ps_recv;
	h->last_drop = ps.ps_drop;
	h->last_ifdrop = ps.ps_ifdrop;
}

/* Feeds the capture's flows and QPs to the series; forgets idle ones. */
struct feed {
	struct pcap_state *st;
	int64_t idle_ns, now_ns;
	uint64_t (*add)(struct flow_series *fs, const void *key, const void *val, int64_t now_ms);
};

static int feed_entry(const void *key, void *val, void *arg)
{
	const struct feed *f = arg;

	return f->now_ns - (int64_t)f->add(f->st->series, key, val, f->now_ns / 1000000) <=
	       f->idle_ns;
}

static void emit_handles(struct pcap_state *st, const struct collector_env *env,
			 struct sample_sink *out, uint64_t now_ns)
{
	static const struct metric_desc recv = {
		.name = "fabmon_pcap_received_packets_total",
		.help = "Packets the capture's kernel filter passed on the interface (pcap_stats).",
		.type = METRIC_COUNTER
	};
	static const struct metric_desc drop = {
		.name = "fabmon_pcap_dropped_packets_total",
		.help = "Packets the capture lost: reason=\"buffer\", no room in its kernel buffer "
			"between two ticks; reason=\"interface\", dropped by the NIC or driver "
			"(pcap_stats).",
		.type = METRIC_COUNTER
	};
	static const struct metric_desc info = {
		.name = "fabmon_pcap_capture_info",
		.help = "An interface fabmon captures on: mode=\"mirror\" (RoCEv2 and LLDP) or "
			"\"lldp\" (LLDP only).",
		.type = METRIC_GAUGE
	};

	for (size_t i = 0; i < st->n; i++) {
		struct handle *h = &st->h[i];
		struct label l[2] = { { "interface", h->ifname } };

		handle_stats(h);
		/* a mirror's, until it is known: a link down at start has none
		 * (an LLDP handle's filter passes no pause frame to time) */
		if (h->mirror && !h->link_mbps)
			h->link_mbps = link_mbps(env, h->ifname);
		(void)sample_counter(out, &recv, l, 1, h->received);
		l[1] = (struct label){ "reason", "buffer" };
		(void)sample_counter(out, &drop, l, 2, h->dropped);
		l[1] = (struct label){ "reason", "interface" };
		(void)sample_counter(out, &drop, l, 2, h->ifdropped);
		l[1] = (struct label){ "mode", h->mirror ? "mirror" : "lldp" };
		(void)sample_gauge(out, &info, l, 2, 1);
		pause_series_emit(&h->pause, h->ifname, now_ns, out);
	}
}

static void emit_neighbors(struct pcap_state *st, struct sample_sink *out, int64_t now_ms)
{
	static const struct metric_desc info = {
		.name = "fabmon_lldp_neighbor_info",
		.help = "The switch port (or host) at the far end of the interface, as its LLDP "
			"frames say; gone after the TTL it gave. Join on interface to name link "
			"series by switch port.",
		.type = METRIC_GAUGE
	};
	static const struct metric_desc bad = {
		.name = "fabmon_lldp_malformed_frames_total",
		.help = "LLDP frames that did not parse (IEEE 802.1AB-2016).",
		.type = METRIC_COUNTER
	};
	size_t kept = 0;

	for (size_t i = 0; i < st->nnb; i++) {
		const struct neighbor *nb = &st->nb[i];
		struct label l[] = {
			{ "interface", nb->ifname },
			{ "chassis_id", nb->n.chassis_id },
			{ "port_id", nb->n.port_id },
			{ "system_name", nb->n.system_name },
			{ "port_description", nb->n.port_description },
			{ "management_address", nb->n.mgmt_address },
		};

		if (now_ms >= nb->expires_ms)
			continue;
		(void)sample_gauge(out, &info, l, sizeof(l) / sizeof(l[0]), 1);
		st->nb[kept++] = *nb;
	}
	st->nnb = kept;
	(void)sample_counter(out, &bad, NULL, 0, st->lldp_bad);
}

static void emit_totals(struct pcap_state *st, struct sample_sink *out)
{
	static const struct metric_desc unparsed = {
		.name = "fabmon_pcap_unparsed_packets_total",
		.help = "Captured packets that were not IPv4/IPv6 TCP/UDP, LLDP, PAUSE or PFC, or were "
			"cut short.",
		.type = METRIC_COUNTER
	};
	static const struct metric_desc roce_unparsed = {
		.name = "fabmon_pcap_roce_unparsed_packets_total",
		.help = "Captured UDP port 4791 packets cut before their BTH, AETH or RETH.",
		.type = METRIC_COUNTER
	};
	static const struct metric_desc full = {
		.name = "fabmon_pcap_uncounted_packets_total",
		.help = "Captured packets not counted per flow or per queue pair because the table "
			"was full (bpf_max_flows entries).",
		.type = METRIC_COUNTER
	};
	const struct capture_stats *s = capture_stats(st->cap);

	(void)sample_counter(out, &unparsed, NULL, 0, s->unparsed);
	(void)sample_counter(out, &roce_unparsed, NULL, 0, s->roce_cut_bth + s->roce_cut_after_bth);
	(void)sample_counter(out, &full, NULL, 0, s->flows_full + s->qps_full);
}

static int pcap_collector_sample(void *state, const struct collector_env *env,
				 struct sample_sink *out)
{
	struct pcap_state *st = state;
	struct timespec ts;
	struct feed f = { st, env->bpf_flow_idle_ms * 1000000, 0, flow_series_add_flow };
	int64_t now_ms;

	/* packet timestamps are wall-clock: idle is judged on the same clock */
	clock_gettime(CLOCK_REALTIME, &ts);
	f.now_ns = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	now_ms = f.now_ns / 1000000;
	pthread_mutex_lock(&st->lock);
	kmap_sweep(capture_flows(st->cap), feed_entry, &f);
	f.add = flow_series_add_qp;
	kmap_sweep(capture_qps(st->cap), feed_entry, &f);
	flow_series_end_tick(st->series, now_ms, env->bpf_flow_idle_ms);
	flow_series_emit(st->series, out, NULL, "pcap", 0);
	emit_handles(st, env, out, (uint64_t)f.now_ns);
	emit_neighbors(st, out, now_ms);
	emit_totals(st, out);
	pthread_mutex_unlock(&st->lock);
	return 0;
}

const struct collector_ops pcap_collector = {
	.name = "pcap",
	.init = pcap_collector_init,
	.sample = pcap_collector_sample,
	.fini = pcap_collector_fini,
};
