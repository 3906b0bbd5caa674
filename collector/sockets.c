/* SPDX-License-Identifier: MIT */
/*
 * sockets: this host's TCP connections as the kernel's socket diagnostics
 * show them (NETLINK_SOCK_DIAG, inet_diag: what `ss -ti` prints), for data
 * its applications leave unread (collector/unread.h). It sees the network
 * namespace the agent ran init in, needs no privilege (any user may dump
 * it, as ss does), and no BPF: a host without the probes still tells an
 * application that stopped reading. The agent's own connections (a scrape
 * of its /metrics on the fabric address) are left out: they read.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "agent/lib/loopback.h"
#include "collector/collector.h"
#include "collector/metric_names.h"
#include "collector/nl_errno.h"
#include "collector/unread.h"

/* Connections tracked at once; more are not judged. */
#define SOCKETS_UNREAD_MAX 65536
/*
 * tcpi_bytes_received in the kernel's struct tcp_info (include/uapi/linux/
 * tcp.h, 4.1+): 8 bytes of u8 fields, 24 u32 (tcpi_rto to tcpi_total_retrans),
 * then the u64s tcpi_pacing_rate, tcpi_max_pacing_rate, tcpi_bytes_acked.
 * libnl's headers bring glibc's netinet/tcp.h, whose tcp_info ends before it
 * and cannot stand beside the uapi one.
 */
#define SOCKETS_BYTES_RECEIVED_AT (8 + 24 * 4 + 3 * 8)
/* tcpi_last_data_recv: the 12th u32 after the 8 bytes of u8 fields, the
 * milliseconds since the connection last received data (icsk_ack.lrcvtime) */
#define SOCKETS_LAST_DATA_RECV_AT (8 + 11 * 4)
/* TCP_ESTABLISHED of include/net/tcp_states.h, which no uapi header has */
#define SOCKETS_TCP_ESTABLISHED 1
/* The agent's own sockets left out: a scrape or two, the mesh's; a few dozen
 * at most. Past it, the rest are counted as any application's. */
#define SOCKETS_OWN_MAX 256
/* This host's addresses reported on: a node has a few. More are dropped. */
#define SOCKETS_LOCALS 16

/* Per local address, this tick. */
struct sockets_local {
	int family;
	unsigned char addr[16];
	double unread_s; /* the longest any connection's data has stood */
	unsigned standing; /* connections whose data stands */
	unsigned reading; /* connections whose application read since the last tick */
	uint64_t bytes; /* what they hold unread */
	double awaited_s; /* unread_awaited()'s choice; 0: none */
};

/* A connection with nothing unread, this tick: how long it received nothing. */
struct sockets_quiet {
	unsigned local; /* index into sockets_state.local */
	double quiet_s;
};

struct sockets_state {
	struct nl_sock *sock;
	struct unread_tracker *unread;
	uint64_t tick;
	int64_t now_ms; /* the last dump's */
	struct sockets_local local[SOCKETS_LOCALS];
	unsigned nlocal;
	unsigned skipped; /* replies too short to read */
	unsigned own[SOCKETS_OWN_MAX]; /* the agent's own sockets' inodes, this tick */
	unsigned nown;
	struct sockets_quiet *quiet; /* SOCKETS_UNREAD_MAX at most */
	size_t nquiet, quiet_cap;
};

static const struct metric_desc unread_seconds_desc = {
	M_TCP_UNREAD_SECONDS,
	"How long data has stood in a receive queue of this host's TCP connections from this "
	"address without its application reading any: the longest such connection's, to within "
	"sockets_interval; 0 while every application reads.",
	METRIC_GAUGE, 0, 0
};
static const struct metric_desc unread_connections_desc = {
	M_TCP_UNREAD_CONNECTIONS,
	"Connections from this address whose data stood unread since the previous reading.",
	METRIC_GAUGE, 0, 0
};
static const struct metric_desc reading_desc = {
	M_TCP_READING_CONNECTIONS,
	"Connections from this address whose application read data since the previous reading: one "
	"that reads is alive, whatever it leaves unread elsewhere.",
	METRIC_GAUGE, 0, 0
};
static const struct metric_desc unread_bytes_desc = { M_TCP_UNREAD_BYTES,
						      "Bytes those connections hold unread.",
						      METRIC_GAUGE, 0, 0 };
static const struct metric_desc awaited_desc = {
	M_TCP_AWAITED_SECONDS,
	"While data stands unread on a connection from this address: how long the connection its "
	"application most likely waits on has received nothing (of those with nothing unread, the "
	"one that went quiet last before the data began to stand); 0: none.",
	METRIC_GAUGE, 0, 0
};

static int64_t sockets_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Notes the inodes of the agent's own sockets, from /proc/self/fd. */
static void sockets_own(struct sockets_state *st)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	st->nown = 0;
	while (d && (e = readdir(d)) && st->nown < SOCKETS_OWN_MAX) {
		char link[64];
		ssize_t n = readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);
		unsigned ino;

		if (n <= 0)
			continue;
		link[n] = '\0';
		if (sscanf(link, "socket:[%u]", &ino) == 1)
			st->own[st->nown++] = ino;
	}
	if (d)
		closedir(d);
}

/* Whether socket inode ino is the agent's own. */
static int sockets_is_own(const struct sockets_state *st, unsigned ino)
{
	for (unsigned i = 0; i < st->nown; i++)
		if (st->own[i] == ino)
			return 1;
	return 0;
}

/* The tally of address a; NULL when SOCKETS_LOCALS are taken. */
static struct sockets_local *sockets_local_of(struct sockets_state *st, int family,
					      const uint32_t *a)
{
	size_t len = family == AF_INET ? 4 : 16;

	for (unsigned i = 0; i < st->nlocal; i++)
		if (st->local[i].family == family && memcmp(st->local[i].addr, a, len) == 0)
			return &st->local[i];
	if (st->nlocal == SOCKETS_LOCALS)
		return NULL;
	memset(&st->local[st->nlocal], 0, sizeof(st->local[0]));
	st->local[st->nlocal].family = family;
	memcpy(st->local[st->nlocal].addr, a, len);
	return &st->local[st->nlocal++];
}

/* Notes a connection of local l with nothing unread, quiet for quiet_s. */
static void sockets_note_quiet(struct sockets_state *st, const struct sockets_local *l,
			       double quiet_s)
{
	if (st->nquiet == st->quiet_cap) {
		size_t cap = st->quiet_cap ? st->quiet_cap * 2 : 64;
		struct sockets_quiet *q;

		if (cap > SOCKETS_UNREAD_MAX || !(q = realloc(st->quiet, cap * sizeof(*q))))
			return; /* that one goes unjudged */
		st->quiet = q;
		st->quiet_cap = cap;
	}
	st->quiet[st->nquiet++] = (struct sockets_quiet){ (unsigned)(l - st->local), quiet_s };
}

/* One connection of the dump: tallied to its local address, whether its
 * application read since the last tick and whether its data stands unread. */
static int sockets_one(struct nl_msg *msg, void *arg)
{
	struct sockets_state *st = arg;
	struct nlmsghdr *h = nlmsg_hdr(msg);
	const struct inet_diag_msg *m;
	struct nlattr *tb[INET_DIAG_MAX + 1];
	uint64_t received;
	uint32_t quiet_ms;
	struct sockets_local *l;
	struct unread_sock s;
	double standing;
	int read;

	if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    nlmsg_parse(h, sizeof(*m), tb, INET_DIAG_MAX, NULL) < 0) {
		st->skipped++;
		return NL_SKIP;
	}
	m = nlmsg_data(h);
	if (loopback_addr(m->idiag_family, m->id.idiag_src) ||
	    loopback_addr(m->idiag_family, m->id.idiag_dst) || sockets_is_own(st, m->idiag_inode) ||
	    !(l = sockets_local_of(st, m->idiag_family, m->id.idiag_src)))
		return NL_OK;
	/* tcpi_bytes_received came in 4.1: without it, reads cannot be told */
	if (!tb[INET_DIAG_INFO] ||
	    nla_len(tb[INET_DIAG_INFO]) < (int)(SOCKETS_BYTES_RECEIVED_AT + sizeof(received)))
		return NL_OK;
	memcpy(&received, (const char *)nla_data(tb[INET_DIAG_INFO]) + SOCKETS_BYTES_RECEIVED_AT,
	       sizeof(received));
	memcpy(&quiet_ms, (const char *)nla_data(tb[INET_DIAG_INFO]) + SOCKETS_LAST_DATA_RECV_AT,
	       sizeof(quiet_ms));
	memcpy(&s.cookie, m->id.idiag_cookie, sizeof(s.cookie));
	s.read = received - m->idiag_rqueue;
	s.unread = m->idiag_rqueue;
	standing = unread_note(st->unread, &s, st->now_ms, st->tick, &read);
	l->reading += (unsigned)read;
	if (m->idiag_rqueue == 0)
		sockets_note_quiet(st, l, quiet_ms / 1000.0);
	if (standing > 0) {
		l->standing++;
		l->bytes += m->idiag_rqueue;
		if (standing > l->unread_s)
			l->unread_s = standing;
	}
	return NL_OK;
}

/* Dumps the ESTABLISHED TCP connections of one family, with tcp_info. */
static int sockets_dump(struct sockets_state *st, int family)
{
	struct inet_diag_req_v2 req = {
		.sdiag_family = (unsigned char)family,
		.sdiag_protocol = IPPROTO_TCP,
		.idiag_ext = 1 << (INET_DIAG_INFO - 1),
		.idiag_states = 1 << SOCKETS_TCP_ESTABLISHED,
	};
	int r = nl_send_simple(st->sock, SOCK_DIAG_BY_FAMILY, NLM_F_DUMP, &req, sizeof(req));

	if (r >= 0)
		r = nl_recvmsgs_default(st->sock);
	return r < 0 ? nl_errno_of(r) : 0;
}

static void sockets_fini(void *state)
{
	struct sockets_state *st = state;

	if (!st)
		return;
	nl_socket_free(st->sock);
	unread_tracker_free(st->unread);
	free(st->quiet);
	free(st);
}

static int sockets_init(const struct collector_env *env, void **ret_state, char *why,
			size_t why_len)
{
	struct sockets_state *st = calloc(1, sizeof(*st));
	int r = -ENOMEM;

	(void)env;
	if (!st || !(st->unread = unread_tracker_new(SOCKETS_UNREAD_MAX)) ||
	    !(st->sock = nl_socket_alloc())) {
		snprintf(why, why_len, "sock_diag: out of memory");
		goto fail;
	}
	r = nl_connect(st->sock, NETLINK_SOCK_DIAG);
	if (r < 0) {
		snprintf(why, why_len, "sock_diag: %s", nl_geterror(r));
		r = nl_errno_of(r);
		goto fail;
	}
	nl_socket_modify_cb(st->sock, NL_CB_VALID, NL_CB_CUSTOM, sockets_one, st);
	/* a kernel without inet_diag (CONFIG_INET_DIAG) refuses the dump */
	r = sockets_dump(st, AF_INET);
	if (r < 0) {
		snprintf(why, why_len, "sock_diag dump of TCP: %s (CONFIG_INET_DIAG?)",
			 strerror(-r));
		goto fail;
	}
	*ret_state = st;
	return 0;
fail:
	sockets_fini(st);
	return r == -EIO ? -EOPNOTSUPP : r;
}

static int sockets_sample(void *state, const struct collector_env *env, struct sample_sink *out)
{
	struct sockets_state *st = state;
	int64_t now_ms;
	int r;

	now_ms = sockets_now_ms();
	/* a tenth of slack: ticks come a little early or late */
	if (st->tick && now_ms - st->now_ms < env->sockets_interval_ms * 9 / 10)
		goto emit; /* the last dump's figures stand */
	st->tick++;
	st->now_ms = now_ms;
	st->nlocal = 0;
	st->skipped = 0;
	st->nquiet = 0;
	sockets_own(st);
	r = sockets_dump(st, AF_INET);
	if (r >= 0)
		r = sockets_dump(st, AF_INET6);
	if (r < 0)
		return r;
	unread_end_tick(st->unread, st->tick);
	for (size_t i = 0; i < st->nquiet; i++) {
		struct sockets_local *l = &st->local[st->quiet[i].local];

		l->awaited_s = unread_awaited(l->awaited_s, st->quiet[i].quiet_s, l->unread_s);
	}
	for (unsigned i = 0; i < st->skipped; i++)
		sample_skip(out);
emit:
	for (unsigned i = 0; i < st->nlocal; i++) {
		const struct sockets_local *l = &st->local[i];
		char addr[INET6_ADDRSTRLEN];
		struct label lab = { "local", addr };

		if (!inet_ntop(l->family, l->addr, addr, sizeof(addr)))
			continue;
		(void)sample_gauge(out, &unread_seconds_desc, &lab, 1, l->unread_s);
		(void)sample_gauge(out, &unread_connections_desc, &lab, 1, l->standing);
		(void)sample_gauge(out, &unread_bytes_desc, &lab, 1, (double)l->bytes);
		(void)sample_gauge(out, &reading_desc, &lab, 1, l->reading);
		(void)sample_gauge(out, &awaited_desc, &lab, 1, l->awaited_s);
	}
	return 0;
}

const struct collector_ops sockets_collector = {
	.name = "sockets",
	.init = sockets_init,
	.sample = sockets_sample,
	.fini = sockets_fini,
};
