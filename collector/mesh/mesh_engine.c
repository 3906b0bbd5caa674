/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collector/mesh/mesh_engine.h"
#include "collector/mesh/mesh_allow.h"
#include "collector/mesh/mesh_knock.h"
#include "collector/mesh/mesh_targets.h"

#define NS_PER_MS 1000000LL
#define NS_PER_S 1000000000LL
/* the target file is looked at this often for a change */
#define TARGETS_CHECK_NS NS_PER_S
/* a list with names that did not resolve is read again this often */
#define TARGETS_RETRY_NS (30 * NS_PER_S)
/* a peer's interface is looked up again when the kernel says a route or
 * address changed (a failover to another port, a second NIC: the peer's
 * series and its share of the own-link verdict move with it), at most once
 * a second (a routing daemon may change routes by the thousand), and this
 * often whatever it says (a missed notice) */
#define ROUTES_CHECK_NS (10 * NS_PER_S)
#define ROUTES_GAP_NS NS_PER_S
/* datagrams one recvmmsg() reads: a socket gets one batch a turn, so that
 * a flood waits for the next turn and cannot starve the sender's schedule */
#define READ_BATCH 64
/* control data of one datagram: a receive timestamp, and IP_PKTINFO or an
 * ICMP error with its offender */
#define CTL_LEN 256
#define OWN_MAX 64
/* first traces are spread over this long: a router answers TTL expiry at
 * 1000 a second with a burst of 50 (Linux's icmp_msgs_per_sec), and every
 * flow of every peer traced at once would find most hops silent */
#define FIRST_TRACES_NS (5 * NS_PER_S)
/* rounds due within this share of an interval go with the ones due now:
 * a thousand peers do not wake the engine, and walk its table, a thousand
 * times a second (their rounds are jittered by a tenth) */
#define ROUND_QUANTUM_DIV 50
/* hops under suspicion at once (suspect_hops_note()): a fault's few */
#define SUSPECT_HOPS 16
/* local interfaces whose losses are kept (suspect_iface_note()): a host's
 * fabric ports */
#define SUSPECT_IFACES 16
/* MESH_KNOCK_TIMEOUT_S, short so that a cut path shows before its peer has
 * been silent 3 s (knocked at the round after the first it lost whole) */
#define KNOCK_TIMEOUT_NS ((int64_t)(MESH_KNOCK_TIMEOUT_S * NS_PER_S))
/* the hops of the last peer that lost kept per interface: 8 flows over 2-4
 * spines cross 10 or so */
#define SUSPECT_IFACE_HOPS 32
/* Peers of the same interface probed faster with one that lost, so that
 * the detector learns at once whether the loss is on this host's own link
 * (they lose as well) or on that peer's path (they stay clean): enough
 * that their clean probes outweigh the lossy peer's (agent/detect/mesh.c,
 * own_link_untested()), few enough that a chance loss in a large cluster
 * costs little (3 peers' flows, 8 times as often, for MESH_SUSPECT_NS). */
#define SUSPECT_SIBLINGS 3

/* The buffers of one recvmmsg(), kept in the engine: nothing is allocated
 * per datagram. */
struct mesh_rx {
	struct mmsghdr mm[READ_BATCH];
	struct iovec iov[READ_BATCH];
	struct sockaddr_in addr[READ_BATCH];
	/* one byte more than a datagram: an oversized one shows as such */
	uint8_t buf[READ_BATCH][MESH_WIRE_LEN + 1];
	union {
		char buf[CTL_LEN];
		struct cmsghdr align;
	} ctl[READ_BATCH];
};

struct mesh_engine {
	struct mesh_conf conf;
	unsigned flows;
	struct in_addr bind_addr;
	unsigned port;
	int respond;
	int resp_fd, wake_fd;
	int flow_fd[MESH_FLOWS_MAX];
	unsigned flow_port[MESH_FLOWS_MAX];
	pthread_t thread;
	int running, stop;
	pthread_mutex_t lock;
	struct mesh_targets targets;
	struct stat targets_st;
	int64_t targets_check_ns, targets_retry_ns;
	int64_t routes_check_ns, routes_last_ns;
	int route_fd; /* rtnetlink, its route and address groups; -1: polled only */
	struct mesh_cidr allow[MESH_CIDRS_MAX];
	size_t n_allow;
	struct {
		uint32_t addr;
		char ifname[IF_NAMESIZE];
	} own[OWN_MAX];
	size_t n_own;
	struct mesh_responder resp;
	struct mesh_peer *peers;
	size_t n_peers;
	int64_t next_due; /* the earliest peer's next_ns; 0: walk the table */
	struct mesh_rx rx;
	struct mesh_engine_stats st;
	double budget;
	int64_t budget_ns;
	/* hops a flow that lost crosses and some sibling avoids, and when */
	struct {
		uint32_t addr;
		int64_t at_ns;
	} suspect_hop[SUSPECT_HOPS];
	/* per local interface, the last peer that lost, its paths' hops and
	 * when, and when a second peer whose paths share none of them lost
	 * within MESH_SUSPECT_NS of it (0: not yet); and the interface's peers
	 * that follow the last in the table, probed faster with it */
	struct {
		char ifname[IF_NAMESIZE];
		uint32_t peer;
		uint32_t hop[SUSPECT_IFACE_HOPS];
		size_t nhop;
		int64_t at_ns, spread_ns;
		uint32_t sibling[SUSPECT_SIBLINGS];
		unsigned nsibling;
	} suspect_iface[SUSPECT_IFACES];
	struct mesh_knocks knocks;
	unsigned seed;
	char news[512];
	char skipped[400]; /* the last load's targets left out, "" if none */
};

static int64_t now_ns(void)
{
	struct timespec ts;

	/* CLOCK_REALTIME: the clock of the kernel's software timestamps */
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* d scaled by a random factor in [0.9, 1.1): peers probed in step would
 * meet in the same queues at once */
static int64_t jitter(struct mesh_engine *e, int64_t d)
{
	return d - d / 10 + (int64_t)((double)rand_r(&e->seed) / RAND_MAX * (double)(d / 5));
}

/* A UDP socket bound to addr:port, non-blocking, with receive timestamps
 * and, with recverr, ICMP errors queued (a flow's, for its path probes; a
 * responder has no use for the errors its replies draw). Returns the fd or
 * -errno. */
static int udp_open(struct in_addr addr, unsigned port, unsigned dscp, int recverr)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr = addr,
				  .sin_port = htons(port) };
	int one = 1, tos = (int)dscp << 2, r = 0, rcvbuf = 1 << 20;
	int ts = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	/* without software timestamps the receive time is read after the fact
	 * (ts_or_now()): a kernel without them is no reason to stop */
	(void)setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &ts, sizeof(ts));
	/* a round's replies from many peers come in a burst (the kernel caps
	 * this at net.core.rmem_max) */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (setsockopt(fd, IPPROTO_IP, IP_RECVERR, &recverr, sizeof(recverr)) < 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

/* A socket the kernel tells of IPv4 route and address changes, or -1 (no
 * privilege is needed; without it routes are only polled). */
static int route_watch_open(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK,
				  .nl_groups = RTMGRP_IPV4_ROUTE | RTMGRP_IPV4_IFADDR };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void own_addresses(struct mesh_engine *e)
{
	struct ifaddrs *ifa = NULL;

	e->n_own = 0;
	if (getifaddrs(&ifa) < 0)
		return;
	for (struct ifaddrs *i = ifa; i && e->n_own < OWN_MAX; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		e->own[e->n_own].addr = ntohl(
			((const struct sockaddr_in *)(const void *)i->ifa_addr)->sin_addr.s_addr);
		snprintf(e->own[e->n_own++].ifname, IF_NAMESIZE, "%s", i->ifa_name);
	}
	freeifaddrs(ifa);
}

/* The own address addr's index, or -1. */
static int own_index(const struct mesh_engine *e, uint32_t addr)
{
	for (size_t i = 0; i < e->n_own; i++)
		if (e->own[i].addr == addr)
			return (int)i;
	return -1;
}

static int is_own(const struct mesh_engine *e, uint32_t addr)
{
	return own_index(e, addr) >= 0;
}

/* The local interface the kernel routes addr by, into ifname ("" when it
 * has no route): connecting a UDP socket looks the route up and picks a
 * source address, which Linux takes from the outgoing interface where it
 * has one. fd: an unconnected UDP socket, or -1 (no lookup). */
static void route_ifname(const struct mesh_engine *e, int fd, uint32_t addr, char *ifname)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(9) }, from;
	socklen_t len = sizeof(from);
	int i;

	ifname[0] = '\0';
	to.sin_addr.s_addr = htonl(addr);
	if (fd < 0 || connect(fd, (const struct sockaddr *)&to, sizeof(to)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&from, &len) < 0)
		return;
	i = own_index(e, ntohl(from.sin_addr.s_addr));
	if (i >= 0)
		snprintf(ifname, IF_NAMESIZE, "%s", e->own[i].ifname);
}

/* "A.B.C.D:PORT" or ":PORT" (config.c checked the form; the probes are
 * IPv4 only). Returns 0 or -EINVAL. */
static int listen_parse(const char *text, struct in_addr *ret_addr, unsigned *ret_port)
{
	const char *colon = strrchr(text, ':');
	char host[INET_ADDRSTRLEN] = "";
	unsigned long port;
	char *end;

	if (!colon || (size_t)(colon - text) >= sizeof(host))
		return -EINVAL;
	memcpy(host, text, (size_t)(colon - text));
	host[colon - text] = '\0';
	port = strtoul(colon + 1, &end, 10);
	if (*end || port > 65535 || (host[0] && inet_pton(AF_INET, host, ret_addr) != 1))
		return -EINVAL;
	*ret_port = (unsigned)port;
	return 0;
}

int mesh_engine_new(const struct mesh_conf *conf, int respond, struct mesh_engine **ret, char *why,
		    size_t why_len)
{
	struct mesh_engine *e = calloc(1, sizeof(*e));
	int r = e ? 0 : -ENOMEM;

	if (r < 0)
		goto fail;
	e->conf = *conf;
	e->flows = conf->flows ? conf->flows : 1;
	e->respond = respond;
	e->resp_fd = e->wake_fd = e->route_fd = -1;
	for (unsigned f = 0; f < MESH_FLOWS_MAX; f++)
		e->flow_fd[f] = -1;
	e->seed = (unsigned)now_ns() ^ (unsigned)getpid();
	pthread_mutex_init(&e->lock, NULL);
	mesh_responder_init(&e->resp, conf->source_pps);
	r = listen_parse(conf->listen, &e->bind_addr, &e->port);
	if (r < 0) {
		snprintf(why, why_len, "mesh: mesh_listen '%s' is not IPV4:PORT", conf->listen);
		goto fail;
	}
	r = mesh_allow_parse(conf->allow, e->allow, MESH_CIDRS_MAX, why, why_len);
	if (r < 0)
		goto fail;
	e->n_allow = (size_t)r;
	e->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (e->wake_fd < 0) {
		r = -errno;
		snprintf(why, why_len, "mesh: eventfd: %s", strerror(-r));
		goto fail;
	}
	if (respond) {
		struct sockaddr_in sa;
		socklen_t len = sizeof(sa);

		r = e->resp_fd = udp_open(e->bind_addr, e->port, conf->dscp, 0);
		/* port 0 (tests) takes any free one: the port probes go to */
		if (r >= 0 && getsockname(r, (struct sockaddr *)&sa, &len) == 0)
			e->port = ntohs(sa.sin_port);
		if (r < 0) {
			snprintf(why, why_len, "mesh: unable to bind the responder to '%s': %s",
				 conf->listen, strerror(-r));
			goto fail;
		}
	}
	for (unsigned f = 0; f < e->flows; f++) {
		struct sockaddr_in sa;
		socklen_t len = sizeof(sa);

		r = e->flow_fd[f] = udp_open(e->bind_addr, 0, conf->dscp, 1);
		if (r < 0 || getsockname(r, (struct sockaddr *)&sa, &len) < 0) {
			r = r < 0 ? r : -errno;
			snprintf(why, why_len, "mesh: unable to open flow %u's socket: %s", f,
				 strerror(-r));
			goto fail;
		}
		e->flow_port[f] = ntohs(sa.sin_port);
	}
	own_addresses(e);
	e->route_fd = route_watch_open();
	e->budget = conf->pps;
	e->budget_ns = now_ns();
	*ret = e;
	return 0;
fail:
	mesh_engine_free(e);
	return r;
}

/* Builds the peer table for addrs (sorted), keeping what is known of the
 * peers already there. */
static void peers_free(struct mesh_peer *peers, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(peers[i].flow);
	free(peers);
}

static int peers_replace(struct mesh_engine *e, const uint32_t *addrs, size_t n, int64_t now)
{
	struct mesh_peer *np = n ? calloc(n, sizeof(*np)) : NULL;
	/* from[k]: 1 + the index of new peer k in the old table; 0: a new peer */
	size_t *from = n ? calloc(n, sizeof(*from)) : NULL;
	size_t j = 0, k = 0;
	int64_t interval_ns = e->conf.interval_ms * NS_PER_MS;
	int r = 0, route_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (n && (!np || !from)) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n && r == 0; i++) {
		if (is_own(e, addrs[i]))
			continue;
		while (j < e->n_peers && e->peers[j].addr < addrs[i])
			j++;
		if (j < e->n_peers && e->peers[j].addr == addrs[i]) {
			from[k] = j + 1;
			np[k++] = e->peers[j];
			continue;
		}
		np[k].flow = calloc(e->flows, sizeof(struct mesh_flow));
		if (!np[k].flow) {
			r = -ENOMEM;
			break;
		}
		np[k].addr = addrs[i];
		route_ifname(e, route_fd, addrs[i], np[k].ifname);
		/* spread the first rounds over an interval */
		np[k].next_ns = now + (int64_t)((double)rand_r(&e->seed) / RAND_MAX * interval_ns);
		for (unsigned f = 0; f < e->flows; f++)
			np[k].flow[f].path.next_ns = now + (int64_t)((double)rand_r(&e->seed) /
								     RAND_MAX * FIRST_TRACES_NS);
		k++;
	}
	/* the flows of kept peers now belong to the new table, or (on
	 * failure) still to the old one */
	for (size_t m = 0; m < k; m++)
		if (from[m] && r == 0)
			e->peers[from[m] - 1].flow = NULL;
		else if (from[m])
			np[m].flow = NULL;
	if (r < 0)
		goto out;
	peers_free(e->peers, e->n_peers);
	e->peers = np;
	e->n_peers = k;
	e->next_due = 0;
	np = NULL;
	k = 0;
out:
	peers_free(np, k);
	free(from);
	if (route_fd >= 0)
		close(route_fd);
	return r;
}

int mesh_engine_set_peers(struct mesh_engine *e, const uint32_t *addrs, size_t n)
{
	int r;

	pthread_mutex_lock(&e->lock);
	e->conf.targets[0] = e->conf.peers[0] = '\0';
	peers_free(e->peers, e->n_peers);
	e->peers = NULL;
	e->n_peers = 0;
	r = peers_replace(e, addrs, n, 0);
	for (size_t i = 0; i < e->n_peers; i++) {
		e->peers[i].next_ns = 0;
		for (unsigned f = 0; f < e->flows; f++)
			e->peers[i].flow[f].path.next_ns = 0;
	}
	pthread_mutex_unlock(&e->lock);
	return r;
}

/* Reads the targets again if the file changed (or first), from the engine's
 * thread, without the lock but to swap the list in. On error the old list
 * stays and the reason is news. */
static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static void targets_refresh(struct mesh_engine *e, int64_t now, int force)
{
	struct mesh_targets t = { 0 };
	struct stat st = { 0 };
	char err[400];
	int r;

	if (!force && (now < e->targets_check_ns || !e->conf.targets[0]))
		return;
	e->targets_check_ns = now + TARGETS_CHECK_NS;
	/* a file that cannot be stat()ed is reported once, when it goes */
	if (e->conf.targets[0] && stat(e->conf.targets, &st) < 0)
		memset(&st, 0, sizeof(st));
	/* a file whose names did not all resolve is read again now and then:
	 * a name service that failed may answer */
	if (!force && same_file(&st, &e->targets_st) &&
	    (!e->targets.unresolved || now < e->targets_retry_ns))
		return;
	e->targets_retry_ns = now + TARGETS_RETRY_NS;
	e->targets_st = st;
	/* names may be resolved (getaddrinfo), which may take seconds: not
	 * under the lock the tick reads the state by */
	r = mesh_targets_load(e->conf.targets, e->conf.peers, &t, err, sizeof(err));
	pthread_mutex_lock(&e->lock);
	if (r < 0) {
		e->st.targets_errors++;
		snprintf(e->news, sizeof(e->news), "%s (the previous %zu targets kept)", err,
			 e->targets.n);
	} else {
		/* targets left out: said once, not at every retry */
		if (err[0] && strcmp(err, e->skipped) != 0)
			snprintf(e->news, sizeof(e->news), "%s", err);
		snprintf(e->skipped, sizeof(e->skipped), "%s", err);
		own_addresses(e);
		if (peers_replace(e, t.addrs, t.n, now) == 0) {
			mesh_targets_release(&e->targets);
			e->targets = t;
		} else {
			mesh_targets_release(&t);
		}
	}
	pthread_mutex_unlock(&e->lock);
}

/* Reads the kernel's notices (what changed does not matter: every peer is
 * looked up again) and brings the next look-up forward. */
static void route_notices(struct mesh_engine *e)
{
	char buf[8192];
	int64_t soon = e->routes_last_ns + ROUTES_GAP_NS;

	for (;;) {
		ssize_t r = recv(e->route_fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (r <= 0 && (r == 0 || errno != ENOBUFS)) /* ENOBUFS: some lost */
			break;
	}
	if (soon < e->routes_check_ns)
		e->routes_check_ns = soon;
}

/* Every peer's interface and this host's addresses, looked up again: the
 * look-ups (a connect() and a getsockname() a peer, 3 ms at a thousand)
 * outside the lock the tick reads the peers by, which only this thread
 * changes; under it, their results copied in. */
static void routes_refresh(struct mesh_engine *e, int64_t now)
{
	char(*names)[IF_NAMESIZE];
	int fd;

	if (now < e->routes_check_ns)
		return;
	e->routes_check_ns = now + ROUTES_CHECK_NS;
	e->routes_last_ns = now;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	names = calloc(e->n_peers ? e->n_peers : 1, sizeof(*names));
	if (fd >= 0 && names) {
		own_addresses(e);
		for (size_t i = 0; i < e->n_peers; i++)
			route_ifname(e, fd, e->peers[i].addr, names[i]);
		pthread_mutex_lock(&e->lock);
		for (size_t i = 0; i < e->n_peers; i++)
			memcpy(e->peers[i].ifname, names[i], IF_NAMESIZE);
		pthread_mutex_unlock(&e->lock);
	}
	free(names);
	if (fd >= 0)
		close(fd);
}

/* The kernel's receive time of msg, or now. */
static int64_t ts_or_now(struct msghdr *msg)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPING) {
			struct scm_timestamping tss;

			memcpy(&tss, CMSG_DATA(c), sizeof(tss));
			if (tss.ts[0].tv_sec)
				return (int64_t)tss.ts[0].tv_sec * NS_PER_S + tss.ts[0].tv_nsec;
		}
	return now_ns();
}

static struct mesh_peer *peer_find(struct mesh_engine *e, uint32_t addr)
{
	size_t lo = 0, hi = e->n_peers;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (e->peers[mid].addr == addr)
			return &e->peers[mid];
		if (e->peers[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Receives up to READ_BATCH datagrams (or, with MSG_ERRQUEUE, queued ICMP
 * errors) into e->rx. Returns how many, or -errno (-EAGAIN: none). */
static int rx_batch(struct mesh_engine *e, int fd, int flags)
{
	struct mesh_rx *rx = &e->rx;
	int n;

	for (int i = 0; i < READ_BATCH; i++) {
		rx->iov[i] =
			(struct iovec){ .iov_base = rx->buf[i], .iov_len = sizeof(rx->buf[i]) };
		rx->mm[i].msg_hdr = (struct msghdr){ .msg_name = &rx->addr[i],
						     .msg_namelen = sizeof(rx->addr[i]),
						     .msg_iov = &rx->iov[i],
						     .msg_iovlen = 1,
						     .msg_control = rx->ctl[i].buf,
						     .msg_controllen = sizeof(rx->ctl[i].buf) };
	}
	n = recvmmsg(fd, rx->mm, READ_BATCH, flags | MSG_DONTWAIT, NULL);
	return n < 0 ? -errno : n;
}

/* Gives msg one IPPROTO_IP control message of type, in ctl (ctl_len bytes,
 * CMSG_SPACE(len) at least, aligned for struct cmsghdr). */
static void cmsg_put(struct msghdr *msg, void *ctl, size_t ctl_len, int type, const void *data,
		     size_t len)
{
	struct cmsghdr *c;

	memset(ctl, 0, ctl_len);
	msg->msg_control = ctl;
	msg->msg_controllen = ctl_len;
	c = CMSG_FIRSTHDR(msg);
	c->cmsg_level = IPPROTO_IP;
	c->cmsg_type = type;
	c->cmsg_len = CMSG_LEN(len);
	memcpy(CMSG_DATA(c), data, len);
}

/*
 * sendmsg() once more if it failed with an error an earlier datagram drew:
 * with IP_RECVERR an ICMP error (a path probe's time-exceeded) is also
 * reported, once, by the socket's next call, and that datagram is not sent.
 * Returns 0 or -errno.
 */
static int send_once_more(int fd, const struct msghdr *msg)
{
	if (sendmsg(fd, msg, MSG_DONTWAIT) >= 0)
		return 0;
	if (errno == EAGAIN || errno == ENOBUFS || errno == EINVAL || errno == EMSGSIZE)
		return -errno;
	return sendmsg(fd, msg, MSG_DONTWAIT) >= 0 ? 0 : -errno;
}

/* Sends a reply from the address the probe was sent to (IP_PKTINFO): the
 * prober knows its peer by that address, and a host with several would
 * otherwise answer from the one its route picks. */
static void reply_send(struct mesh_engine *e, uint8_t *buf, struct sockaddr_in *to,
		       struct msghdr *probe)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct in_pktinfo))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = MESH_WIRE_LEN };
	struct msghdr msg = {
		.msg_name = to, .msg_namelen = sizeof(*to), .msg_iov = &iov, .msg_iovlen = 1
	};

	for (struct cmsghdr *c = CMSG_FIRSTHDR(probe); c; c = CMSG_NXTHDR(probe, c))
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			pi = (struct in_pktinfo){ .ipi_spec_dst = pi.ipi_addr };
			cmsg_put(&msg, ctl.buf, sizeof(ctl.buf), IP_PKTINFO, &pi, sizeof(pi));
		}
	if (send_once_more(e->resp_fd, &msg) < 0)
		e->st.send_errors++;
}

/* Answers one batch of what came to the responder. */
static void respond_batch(struct mesh_engine *e)
{
	int got = rx_batch(e, e->resp_fd, 0);

	for (int i = 0; i < got; i++) {
		struct msghdr *msg = &e->rx.mm[i].msg_hdr;
		uint8_t *buf = e->rx.buf[i];
		size_t n = msg->msg_flags & MSG_TRUNC ? sizeof(e->rx.buf[i]) : e->rx.mm[i].msg_len;
		int64_t rx = ts_or_now(msg);
		uint32_t src = ntohl(e->rx.addr[i].sin_addr.s_addr);
		struct mesh_msg m;

		if (mesh_responder_admit(&e->resp, src,
					 mesh_targets_has(&e->targets, src) ||
						 mesh_allow_match(e->allow, e->n_allow, src),
					 buf, n, rx, &m) < 0)
			continue;
		m.type = MESH_REPLY;
		m.rx_ns = (uint64_t)rx;
		m.tx_ns = (uint64_t)now_ns();
		mesh_wire_encode(&m, buf);
		reply_send(e, buf, &e->rx.addr[i], msg);
	}
}

/* Reads one batch of flow f's replies. */
static void flow_replies(struct mesh_engine *e, unsigned f)
{
	int got = rx_batch(e, e->flow_fd[f], 0);

	for (int i = 0; i < got; i++) {
		struct msghdr *msg = &e->rx.mm[i].msg_hdr;
		const struct sockaddr_in *from = &e->rx.addr[i];
		struct mesh_peer *p = peer_find(e, ntohl(from->sin_addr.s_addr));
		struct mesh_msg m;

		if (!p || ntohs(from->sin_port) != e->port || (msg->msg_flags & MSG_TRUNC) ||
		    mesh_wire_decode(e->rx.buf[i], e->rx.mm[i].msg_len, &m) < 0 ||
		    m.type != MESH_REPLY || m.flow != f ||
		    mesh_peer_reply(p, &m, e->flows, ts_or_now(msg)) < 0)
			e->st.replies_invalid++;
	}
}

/* Reads one batch of the ICMP errors flow f's path probes drew. */
static void flow_errors(struct mesh_engine *e, unsigned f)
{
	int got = rx_batch(e, e->flow_fd[f], MSG_ERRQUEUE);

	for (int i = 0; i < got; i++) {
		struct msghdr *msg = &e->rx.mm[i].msg_hdr;
		struct mesh_msg m;
		/* the address: the probe's destination; the data: the probe,
		 * as the ICMP error quoted it */
		struct mesh_peer *p = peer_find(e, ntohl(e->rx.addr[i].sin_addr.s_addr));

		if (!p || mesh_wire_decode(e->rx.buf[i], e->rx.mm[i].msg_len, &m) < 0 || !m.ttl)
			continue;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
			struct sock_extended_err *ee = (struct sock_extended_err *)CMSG_DATA(c);
			const struct sockaddr_in *off =
				(const struct sockaddr_in *)(const void *)SO_EE_OFFENDER(ee);

			if (c->cmsg_level != IPPROTO_IP || c->cmsg_type != IP_RECVERR ||
			    ee->ee_origin != SO_EE_ORIGIN_ICMP || off->sin_family != AF_INET)
				continue;
			/* RFC 792: type 11 time exceeded; type 3 from the peer
			 * itself (no responder there) ends the path too */
			if (ee->ee_type == 11)
				(void)mesh_peer_hop(p, &m, e->flows, ntohl(off->sin_addr.s_addr));
			else if (ee->ee_type == 3 && ntohl(off->sin_addr.s_addr) == p->addr)
				(void)mesh_peer_reply(p,
						      &(struct mesh_msg){ .type = MESH_REPLY,
									  .flow = m.flow,
									  .ttl = m.ttl,
									  .seq = m.seq },
						      e->flows, 0);
		}
	}
}

static void send_probe(struct mesh_engine *e, const struct mesh_peer *p, unsigned f,
		       struct mesh_msg *m)
{
	struct sockaddr_in to = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(p->addr),
				  .sin_port = htons(e->port) };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	uint8_t buf[MESH_WIRE_LEN];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr msg = {
		.msg_name = &to, .msg_namelen = sizeof(to), .msg_iov = &iov, .msg_iovlen = 1
	};

	m->type = MESH_PROBE;
	m->flow = (uint8_t)f;
	mesh_wire_encode(m, buf);
	if (m->ttl) {
		/* the TTL for this datagram only: the flow's socket stays as it is */
		int ttl = m->ttl;

		cmsg_put(&msg, ctl.buf, sizeof(ctl.buf), IP_TTL, &ttl, sizeof(ttl));
	}
	if (send_once_more(e->flow_fd[f], &msg) < 0)
		e->st.send_errors++;
}

/* Takes n probes from the pps budget, if it has them and keep more. */
static int budget_take(struct mesh_engine *e, unsigned n, double keep, int64_t now)
{
	e->budget += (double)(now - e->budget_ns) * 1e-9 * e->conf.pps;
	if (e->budget > e->conf.pps)
		e->budget = e->conf.pps;
	e->budget_ns = now;
	if (e->budget < n + keep)
		return 0;
	e->budget -= n;
	return 1;
}

/* Notes, as lost at now, the hops of p's flows that lost then which some
 * sibling flow avoids; the oldest note gives way when all are taken. */
static void suspect_hops_note(struct mesh_engine *e, const struct mesh_peer *p, int64_t now)
{
	for (unsigned f = 0; f < e->flows; f++) {
		const struct mesh_path *path = &p->flow[f].path;

		for (unsigned h = 0; p->flow[f].last_loss_ns == now && h < path->n; h++) {
			uint32_t a = path->hop[h];
			unsigned k = 0, old = 0;

			if (!a || a == p->addr || !mesh_peer_hop_avoided(p, e->flows, a))
				continue;
			while (k < SUSPECT_HOPS && e->suspect_hop[k].addr != a) {
				if (e->suspect_hop[k].at_ns < e->suspect_hop[old].at_ns)
					old = k;
				k++;
			}
			k = k < SUSPECT_HOPS ? k : old;
			e->suspect_hop[k].addr = a;
			e->suspect_hop[k].at_ns = now;
		}
	}
}

/* True if a flow of p crosses a hop noted since since_ns. */
static int suspect_hop_crossed(const struct mesh_engine *e, const struct mesh_peer *p,
			       int64_t since_ns)
{
	for (unsigned k = 0; k < SUSPECT_HOPS; k++) {
		if (!e->suspect_hop[k].addr || e->suspect_hop[k].at_ns < since_ns)
			continue;
		for (unsigned f = 0; f < e->flows; f++)
			if (mesh_flow_crosses(&p->flow[f], e->suspect_hop[k].addr))
				return 1;
	}
	return 0;
}

/* Fills x with the first SUSPECT_SIBLINGS peers of p's interface after p in
 * the table (by address, round it): *n of them. */
static void siblings_pick(const struct mesh_engine *e, const struct mesh_peer *p, uint32_t *x,
			  unsigned *n)
{
	size_t at = (size_t)(p - e->peers);

	*n = 0;
	for (size_t k = 1; k < e->n_peers && *n < SUSPECT_SIBLINGS; k++) {
		const struct mesh_peer *q = &e->peers[(at + k) % e->n_peers];

		if (strcmp(q->ifname, p->ifname) == 0)
			x[(*n)++] = q->addr;
	}
}

/* Notes that p, routed by its interface, lost at now: after another of
 * that interface's peers within MESH_SUSPECT_NS, whose paths share no hop
 * with p's past the first (no fabric link or switch explains both: the
 * detector's sign of an own link), its losses are spread. The oldest note
 * gives way when all are taken. */
static void suspect_iface_note(struct mesh_engine *e, const struct mesh_peer *p, int64_t now)
{
	uint32_t hop[SUSPECT_IFACE_HOPS];
	size_t nhop = mesh_peer_hops(p, e->flows, hop, SUSPECT_IFACE_HOPS), met = 0;
	unsigned k = 0, old = 0;

	if (!p->ifname[0])
		return;
	while (k < SUSPECT_IFACES && strcmp(e->suspect_iface[k].ifname, p->ifname) != 0) {
		if (e->suspect_iface[k].at_ns < e->suspect_iface[old].at_ns)
			old = k;
		k++;
	}
	if (k == SUSPECT_IFACES) {
		k = old;
		memset(&e->suspect_iface[k], 0, sizeof(e->suspect_iface[k]));
		memcpy(e->suspect_iface[k].ifname, p->ifname, IF_NAMESIZE);
	}
	for (size_t i = 0; i < nhop && !met; i++)
		for (size_t j = 0; j < e->suspect_iface[k].nhop && !met; j++)
			met = hop[i] == e->suspect_iface[k].hop[j];
	if (e->suspect_iface[k].peer != p->addr &&
	    e->suspect_iface[k].at_ns >= now - MESH_SUSPECT_NS && e->suspect_iface[k].nhop &&
	    nhop && !met)
		e->suspect_iface[k].spread_ns = now;
	e->suspect_iface[k].peer = p->addr;
	siblings_pick(e, p, e->suspect_iface[k].sibling, &e->suspect_iface[k].nsibling);
	memcpy(e->suspect_iface[k].hop, hop, nhop * sizeof(hop[0]));
	e->suspect_iface[k].nhop = nhop;
	e->suspect_iface[k].at_ns = now;
}

/* True if two peers of p's interface whose paths share no hop lost since
 * since_ns, or p is a sibling of the last of its peers to lose, since. */
static int suspect_iface_spread(const struct mesh_engine *e, const struct mesh_peer *p,
				int64_t since_ns)
{
	for (unsigned k = 0; p->ifname[0] && k < SUSPECT_IFACES; k++) {
		if (strcmp(e->suspect_iface[k].ifname, p->ifname) != 0)
			continue;
		for (unsigned s = 0;
		     e->suspect_iface[k].at_ns >= since_ns && s < e->suspect_iface[k].nsibling; s++)
			if (e->suspect_iface[k].sibling[s] == p->addr)
				return 1;
		return e->suspect_iface[k].spread_ns >= since_ns &&
		       e->suspect_iface[k].spread_ns > 0;
	}
	return 0;
}

/* Notes a knock on p's kernel, sent at sent_ns, that ended at now. */
static void knock_ended(struct mesh_peer *p, int answered, int64_t sent_ns, int64_t now)
{
	if (answered) {
		p->kernel_answer_ns = now;
		p->kernel_silent_ns = 0;
	} else if (p->kernel_silent_ns <= p->last_answer_ns) {
		/* a silence before its last answer is over */
		p->kernel_silent_ns = sent_ns;
	}
}

/* Knocks on p's kernel (mesh_knock.h): once it answered a probe, to learn
 * whether its kernel answers knocks at all (a firewall may drop them), and
 * then at each round after one it left wholly unanswered (silent), a
 * second apart at most; from the budget's upper half, as traces. */
static void knock_if_due(struct mesh_engine *e, struct mesh_peer *p, int silent, int64_t now)
{
	int r;

	if (!((!p->knock_ns && p->answered) ||
	      (silent && p->answered && now - p->knock_ns >= NS_PER_S)) ||
	    !budget_take(e, 1, e->conf.pps / 2.0, now))
		return;
	r = mesh_knock_start(&e->knocks, p->addr, e->port, now);
	if (r == 0 || r == -ENETUNREACH || r == -EHOSTUNREACH)
		p->knock_ns = now;
	/* no route to it: the path's answer at once, as a router's would be */
	if (r == -ENETUNREACH || r == -EHOSTUNREACH)
		knock_ended(p, 0, now, now);
}

/* Notes, for the knocks pfd shows done or that timed out, whether each
 * peer's kernel answered, and since when it has not. */
static void knocks_ended(struct mesh_engine *e, const struct pollfd *pfd, size_t npfd, int64_t now)
{
	struct mesh_knock_end end[MESH_KNOCKS_MAX];
	size_t n = mesh_knocks_reap(&e->knocks, pfd, npfd, now, KNOCK_TIMEOUT_NS, end);

	for (size_t i = 0; i < n; i++) {
		struct mesh_peer *p = peer_find(e, end[i].addr);

		if (p)
			knock_ended(p, end[i].answered, end[i].sent_ns, now);
	}
}

/* A peer's round: what timed out is lost, a probe on every flow, a path
 * trace on each flow that is due one, and a knock where one is due. A peer
 * losing on some flows is probed MESH_SUSPECT_SPEEDUP times as often, and
 * so is every peer one of whose flows crosses a hop that a losing flow
 * crosses and a sibling of it avoids (a link that loses 2 % shows on each
 * of its flows now and then, on all of them at once soon), and every peer
 * of a local interface two of whose peers lost on paths that share no hop
 * (its own link's losses come on every peer: the detector names it once
 * most have lost), and SUSPECT_SIBLINGS of the interface's peers with any
 * that lost, but no more than keeps its probes within half the
 * flow's MESH_INFLIGHT slots, so that the losses, or their absence, show
 * within the detector's window; its extra rounds take only the budget's
 * upper half, as traces do, and never put off another peer's round. */
static void peer_round(struct mesh_engine *e, struct mesh_peer *p, int64_t now)
{
	int64_t interval_ns = e->conf.interval_ms * NS_PER_MS;
	int64_t timeout_ns = mesh_answer_wait_ms(e->conf.interval_ms) * NS_PER_MS;
	int64_t next_ns = interval_ns;
	/* answered in its last two rounds: still there */
	int there = p->last_answer_ns >= now - 2 * interval_ns;
	unsigned lost = mesh_peer_expire(p, e->flows, now, timeout_ns);
	/* its last round lost whole, and nothing answered since it went */
	int silent = lost == e->flows && p->last_answer_ns < p->round_ns;
	int extra = 0;

	/* some flows lost, the others answered: a path's loss, not a pause */
	if (lost && lost < e->flows && there) {
		suspect_hops_note(e, p, now);
		suspect_iface_note(e, p, now);
	}
	if (mesh_peer_suspect(p, e->flows, now - MESH_SUSPECT_NS, now - 2 * interval_ns) ||
	    (there && (suspect_hop_crossed(e, p, now - MESH_SUSPECT_NS) ||
		       suspect_iface_spread(e, p, now - MESH_SUSPECT_NS)))) {
		next_ns = interval_ns / MESH_SUSPECT_SPEEDUP > timeout_ns / (MESH_INFLIGHT / 2)
				  ? interval_ns / MESH_SUSPECT_SPEEDUP
				  : timeout_ns / (MESH_INFLIGHT / 2);
		/* before its jittered interval is up */
		extra = now - p->round_ns < interval_ns - interval_ns / 10;
	}
	if (!budget_take(e, e->flows, extra ? e->conf.pps / 2.0 : 0, now)) {
		if (!extra)
			e->st.budget_deferred++;
		p->next_ns = now + (extra ? next_ns : 10 * NS_PER_MS);
		return;
	}
	p->round_ns = now;
	for (unsigned f = 0; f < e->flows; f++) {
		struct mesh_msg m = { .send_ns = (uint64_t)now_ns() };

		m.seq = mesh_peer_sent(p, f, (int64_t)m.send_ns);
		send_probe(e, p, f, &m);
	}
	for (unsigned f = 0; f < e->flows; f++) {
		struct mesh_path *path = &p->flow[f].path;
		uint32_t seq;

		/* traces take only the budget's upper half: the first ones
		 * of a thousand peers would starve the rounds otherwise */
		if (path->trace_end_ns || now < path->next_ns ||
		    !budget_take(e, MESH_HOPS_MAX, e->conf.pps / 2.0, now))
			continue;
		seq = mesh_peer_trace_start(p, f, now, now + timeout_ns);
		for (unsigned ttl = 1; ttl <= MESH_HOPS_MAX; ttl++) {
			struct mesh_msg m = { .seq = seq, .ttl = (uint8_t)ttl };

			send_probe(e, p, f, &m);
		}
		path->next_ns = now + jitter(e, e->conf.path_interval_ms * NS_PER_MS);
	}
	knock_if_due(e, p, silent, now);
	p->next_ns = now + jitter(e, next_ns);
}

void mesh_engine_step(struct mesh_engine *e, int max_wait_ms)
{
	struct pollfd pfd[MESH_FLOWS_MAX + 3 + MESH_KNOCKS_MAX];
	int64_t now = now_ns(), due = now + (int64_t)max_wait_ms * NS_PER_MS;
	int64_t quantum_ns = e->conf.interval_ms * NS_PER_MS / ROUND_QUANTUM_DIV;
	unsigned n = 0, first_flow, first_knock, knocks;
	int wait_ms;

	pthread_mutex_lock(&e->lock);
	if (e->next_due < due)
		due = e->next_due;
	pthread_mutex_unlock(&e->lock);
	wait_ms = due > now ? (int)((due - now + NS_PER_MS - 1) / NS_PER_MS) : 0;
	pfd[n++] = (struct pollfd){ .fd = e->wake_fd, .events = POLLIN };
	if (e->route_fd >= 0)
		pfd[n++] = (struct pollfd){ .fd = e->route_fd, .events = POLLIN };
	if (e->resp_fd >= 0)
		pfd[n++] = (struct pollfd){ .fd = e->resp_fd, .events = POLLIN };
	first_flow = n;
	for (unsigned f = 0; f < e->flows; f++)
		pfd[n++] = (struct pollfd){ .fd = e->flow_fd[f], .events = POLLIN };
	first_knock = n;
	knocks = (unsigned)e->knocks.n;
	mesh_knocks_poll(&e->knocks, pfd + n);
	n += knocks;
	if (poll(pfd, n, wait_ms) < 0)
		n = knocks = 0; /* EINTR: nothing read this turn */

	now = now_ns();
	for (unsigned i = 1; i < n; i++)
		if (pfd[i].fd == e->route_fd && (pfd[i].revents & POLLIN))
			route_notices(e);
	targets_refresh(e, now, 0);
	routes_refresh(e, now);
	pthread_mutex_lock(&e->lock);
	for (unsigned i = 1; i < first_knock && i < n; i++) {
		if (pfd[i].fd == e->resp_fd && (pfd[i].revents & POLLIN))
			respond_batch(e);
		if (i >= first_flow && (pfd[i].revents & POLLIN))
			flow_replies(e, i - first_flow);
		if (i >= first_flow && (pfd[i].revents & POLLERR))
			flow_errors(e, i - first_flow);
	}
	knocks_ended(e, pfd + first_knock, knocks, now);
	if (now >= e->next_due) {
		e->next_due = INT64_MAX;
		for (size_t i = 0; i < e->n_peers; i++) {
			if (e->peers[i].next_ns <= now + quantum_ns)
				peer_round(e, &e->peers[i], now);
			if (e->peers[i].next_ns < e->next_due)
				e->next_due = e->peers[i].next_ns;
		}
	}
	pthread_mutex_unlock(&e->lock);
}

static void *engine_thread(void *arg)
{
	struct mesh_engine *e = arg;

	/* named, so that top -H and the bench can tell its CPU from the tick's */
	(void)pthread_setname_np(pthread_self(), "fabmon-mesh");
	while (!__atomic_load_n(&e->stop, __ATOMIC_ACQUIRE))
		mesh_engine_step(e, 1000);
	return NULL;
}

int mesh_engine_start(struct mesh_engine *e, char *why, size_t why_len)
{
	int r;

	targets_refresh(e, now_ns(), 1);
	r = -pthread_create(&e->thread, NULL, engine_thread, e);
	if (r < 0)
		snprintf(why, why_len, "mesh: unable to start its thread: %s", strerror(-r));
	else
		e->running = 1;
	return r;
}

void mesh_engine_lock(struct mesh_engine *e)
{
	pthread_mutex_lock(&e->lock);
}

void mesh_engine_unlock(struct mesh_engine *e)
{
	pthread_mutex_unlock(&e->lock);
}

const struct mesh_peer *mesh_engine_peers(const struct mesh_engine *e, size_t *ret_n)
{
	*ret_n = e->n_peers;
	return e->peers;
}

const struct mesh_responder_stats *mesh_engine_responder(const struct mesh_engine *e)
{
	return &e->resp.stats;
}

const struct mesh_engine_stats *mesh_engine_stats(const struct mesh_engine *e)
{
	return &e->st;
}

unsigned mesh_engine_port(const struct mesh_engine *e)
{
	return e->port;
}

unsigned mesh_engine_flow_port(const struct mesh_engine *e, unsigned flow)
{
	return flow < e->flows ? e->flow_port[flow] : 0;
}

void mesh_engine_news(struct mesh_engine *e, char *buf, size_t len)
{
	pthread_mutex_lock(&e->lock);
	snprintf(buf, len, "%s", e->news);
	e->news[0] = '\0';
	pthread_mutex_unlock(&e->lock);
}

void mesh_engine_free(struct mesh_engine *e)
{
	uint64_t one = 1;

	if (!e)
		return;
	if (e->running) {
		__atomic_store_n(&e->stop, 1, __ATOMIC_RELEASE);
		(void)!write(e->wake_fd, &one, sizeof(one));
		pthread_join(e->thread, NULL);
	}
	if (e->resp_fd >= 0)
		close(e->resp_fd);
	if (e->wake_fd >= 0)
		close(e->wake_fd);
	if (e->route_fd >= 0)
		close(e->route_fd);
	for (unsigned f = 0; f < MESH_FLOWS_MAX; f++)
		if (e->flow_fd[f] >= 0)
			close(e->flow_fd[f]);
	mesh_knocks_close(&e->knocks);
	mesh_targets_release(&e->targets);
	peers_free(e->peers, e->n_peers);
	pthread_mutex_destroy(&e->lock);
	free(e);
}
