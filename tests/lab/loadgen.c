/* SPDX-License-Identifier: MIT */
/*
 * loadgen: the lab's collective traffic generator. One process per rank, each
 * started in its rank's namespace, runs ring all-reduce, all-gather,
 * all-to-all or a point-to-point hand-off among the ranks, over TCP or over
 * UDP carrying RoCEv2 headers, and reports each iteration's time with its
 * algorithm and bus bandwidth the way nccl-tests does. Run with --help for
 * the flags.
 *
 * Ranks are 0..N-1 and rank r's address is the r-th of --peers. Every rank
 * binds a control UDP port, base + r, on its address: a start-up handshake
 * there makes sure each peer is up and runs the same configuration before
 * any data moves, and a rank that gives up tells all the others why and whom
 * it blames, so that every rank can name the peer at the root of a failure
 * rather than the neighbour that gave up because of it.
 *
 * Every transfer begins with an 8-byte header (the data is otherwise left as
 * it is: its content does not matter): the iteration, so ranks that drift out
 * of step say so, and a "last" flag, with which the lead rank ends a
 * --duration run at the same iteration on every rank.
 *
 * RoCE here is RC semantics over a UDP socket, not an RDMA stack: a transfer
 * is cut into SEND messages of up to 64 packets with per-QP PSNs, the
 * receiver ACKs each message, NAKs a PSN gap, and answers a CE-marked packet
 * with a CNP; the sender keeps a window of packets in flight and goes back to
 * the first unacknowledged PSN on a NAK or a timeout. The receiver keeps data
 * that arrives before its receive is posted (a peer may run ahead), so a clean
 * run sends every PSN once.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "bpf/roce.h"
#include "labtool.h"

#define LG_MAX_RANKS 64
#define LG_MAX_SIZE (1ull << 30)
#define LG_MAX_ITERS 1000000u
#define LG_PORT_DEFAULT 18515 /* perftest's default port: the same kind of tool */
#define LG_NS 1000000000ll
#define LG_MS 1000000ll
#define LG_DURATION_DEFAULT 60.0
#define LG_TIMEOUT_DEFAULT 30.0
#define LG_HELLO_EVERY_NS (100 * LG_MS)
#define LG_CONNECT_RETRY_NS (100 * LG_MS)
/* How long a failed rank listens for the other ranks' aborts (see lg_settle). */
#define LG_ABORT_GRACE_NS (250 * LG_MS)

#define LG_HDR_LEN 8
#define LG_HDR_MAGIC 0x4c47
#define LG_HDR_LAST 0x1

#define LG_CTL_MAGIC 0x4c47434cu
#define LG_CTL_HELLO 1
#define LG_CTL_HELLO_ACK 2
#define LG_CTL_ABORT 3
#define LG_REASON_LEN 240
#define LG_UNHEARD (-2)
#define LG_NOBODY 0xff

/* IBTA MTU 1024: with BTH, ICRC, UDP and IPv4 headers it fits a 1500-byte link. */
#define LG_ROCE_MTU 1024
/* A transfer goes as SEND messages of up to 64 packets, each acknowledged:
 * the window moves on every 64 KiB instead of with every packet. */
#define LG_ROCE_MSG_PKTS 64
/* Unacknowledged packets per QP: four messages in flight, which keeps a veth
 * busy without overrunning the receiver's socket buffer. */
#define LG_ROCE_WINDOW 256
/* Well above a lab RTT even with ranks sharing a few CPUs, so that a clean
 * run never retransmits; doubled on each timeout up to the cap. */
#define LG_ROCE_RTO_MIN_NS (100 * LG_MS)
#define LG_ROCE_RTO_MAX_NS LG_NS
/* 1024 packets before the 24-bit wrap: any run past 1 MiB per QP crosses it. */
#define LG_ROCE_PSN_START 0xfffc00u
/* DSCP 26, the class RoCE fabrics usually carry RDMA in, and ECT(0): a queue
 * with ECN marks CE instead of dropping, which is what makes CNPs. */
#define LG_ROCE_TOS ((26 << 2) | IPTOS_ECN_ECT0)
#define LG_ROCE_SOCKBUF (8 << 20)
#define LG_ROCE_RX_BATCH 256
#define LG_ROCE_TX_BURST 16
/* IBTA 9.2.1, table 38: RC opcodes used here. */
#define LG_ROCE_SEND_FIRST 0x00
#define LG_ROCE_SEND_MIDDLE 0x01
#define LG_ROCE_SEND_LAST 0x02
#define LG_ROCE_SEND_ONLY 0x04
#define LG_ROCE_ACK 0x11
#define LG_ROCE_CNP_LEN 16 /* IBTA A17.9.3: a CNP carries 16 reserved bytes */
#define LG_ROCE_CREDITS_INVALID 0x1f /* AETH credit count: end-to-end credits unused */
/* QP of rank `local` connected to rank `remote`: distinct per pair and direction. */
#define LG_ROCE_QPN(local, remote) (0x10000u | (uint32_t)(local) << 8 | (uint32_t)(remote))

enum lg_pattern { LG_RING_ALLREDUCE, LG_ALL_TO_ALL, LG_ALL_GATHER, LG_HANDOFF };
static const char *const lg_pattern_names[] = { "ring-allreduce", "all-to-all", "all-gather",
						"handoff" };
enum lg_transport { LG_TCP, LG_ROCE };
static const char *const lg_transport_names[] = { "tcp", "roce" };

struct lg_opts {
	int rank, ranks;
	struct in_addr addr[LG_MAX_RANKS];
	enum lg_pattern pattern;
	enum lg_transport transport;
	uint64_t size;
	uint32_t iters;
	double duration_s, timeout_s;
	unsigned port;
	int from, to;
	int json;
};

/* One posted send or receive: a byte range of one of the run's buffers. */
struct lg_op {
	unsigned char *buf;
	size_t len, done; /* receive: bytes placed; TCP send: bytes written */
	int active;
	int64_t t_progress;
	/* RoCE send, in packet indexes into the transfer (PSN = psn0 + index):
	 * acknowledged below una, next to send nxt, highest sent so far max. */
	uint32_t psn0, npkts, una, nxt, max;
	int64_t t_rto, rto;
};

/* RoCE data that came in order before its receive was posted. */
struct lg_fifo {
	unsigned char *buf;
	size_t cap, head, len;
};

struct lg_peer {
	int rank;
	char name[40]; /* "rank 3 (198.18.0.4)" */
	struct sockaddr_in data, ctl;
	int needed, ready, fd;
	struct lg_op tx, rx;
	uint32_t tx_psn, rx_epsn, rx_msn;
	int rx_nak_sent;
	struct lg_fifo fifo;
};

/* RoCE counters; drops are packets taken for lost: from no peer, for no QP,
 * cut short, or with no room to keep them. */
struct lg_stats {
	uint64_t pkts, retrans, naks_tx, naks_rx, dups, ce, cnps_tx, cnps_rx, drops;
};

struct lg {
	struct lg_opts o;
	struct lg_peer peer[LG_MAX_RANKS];
	int ctl_fd, data_fd;
	int64_t timeout_ns, t_soft_end, t_hard_end;
	uint32_t iter;
	int last, roce_blocked;
	size_t size, chunk; /* what a rank moves per iteration, and per transfer */
	unsigned char *buf, *buf2, req[LG_HDR_LEN];
	double *time_us;
	uint32_t done_iters;
	struct lg_stats st;
	/* why this rank stops, and which peer it blames (-1: none) */
	char err[LG_REASON_LEN + 80];
	int err_blame;
	/* aborts heard: the first sender (-1: none), and per rank whom it
	 * blames (-1: nobody, LG_UNHEARD: no abort) and why */
	int abort_from, settling;
	int blame[LG_MAX_RANKS];
	char reason[LG_MAX_RANKS][LG_REASON_LEN];
	struct pollfd pfd[LG_MAX_RANKS + 2];
	int pfd_rank[LG_MAX_RANKS + 2];
};

/* The control datagram: hello, its answer, or an abort with its reason. */
struct lg_ctl {
	uint32_t magic;
	uint8_t type, pattern, transport, blame; /* abort: the rank blamed, or LG_NOBODY */
	uint32_t rank, ranks, iters, size, from, to;
	char reason[LG_REASON_LEN];
};

static int64_t lg_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * LG_NS + ts.tv_nsec;
}

static int lg_poll_ms(int64_t deadline, int64_t now)
{
	int64_t ms = (deadline - now + LG_MS - 1) / LG_MS;

	return ms <= 0 ? 0 : ms > INT_MAX ? INT_MAX : (int)ms;
}

static int lg_vfail(struct lg *lg, int blame, int err, const char *fmt, va_list ap)
{
	if (!lg->err[0]) {
		vsnprintf(lg->err, sizeof(lg->err), fmt, ap);
		lg->err_blame = blame;
	}
	return err;
}

/* Records why the run failed (the first reason wins) and returns err. */
__attribute__((format(printf, 3, 4))) static int lg_fail(struct lg *lg, int err, const char *fmt,
							 ...)
{
	va_list ap;

	va_start(ap, fmt);
	err = lg_vfail(lg, -1, err, fmt, ap);
	va_end(ap);
	return err;
}

/* The same, for a failure that peer pe is to blame for. */
__attribute__((format(printf, 4, 5))) static int
lg_fail_peer(struct lg *lg, const struct lg_peer *pe, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err = lg_vfail(lg, pe->rank, err, fmt, ap);
	va_end(ap);
	return err;
}

static int lg_is_leader(const struct lg *lg)
{
	return lg->o.rank == (lg->o.pattern == LG_HANDOFF ? lg->o.to : 0);
}

/* Whether this rank exchanges data with rank p in the chosen pattern. */
static int lg_needs(const struct lg_opts *o, int p)
{
	int n = o->ranks, r = o->rank;

	if (p == r)
		return 0;
	switch (o->pattern) {
	case LG_RING_ALLREDUCE:
	case LG_ALL_GATHER:
		return p == (r + 1) % n || p == (r + n - 1) % n;
	case LG_ALL_TO_ALL:
		return 1;
	case LG_HANDOFF:
		return (r == o->from && p == o->to) || (r == o->to && p == o->from);
	}
	return 0;
}

/* nccl-tests' doc/PERFORMANCE.md: bus bandwidth scales the algorithm
 * bandwidth by the share of the data each rank's link must carry, so that it
 * compares with the link's own speed whatever N is. All-reduce moves each
 * element through 2(n-1) transfers spread over n links; all-gather and
 * all-to-all half as many; a point-to-point transfer crosses one link once. */
static double lg_bus_factor(const struct lg_opts *o)
{
	double n = o->ranks;

	switch (o->pattern) {
	case LG_RING_ALLREDUCE:
		return 2.0 * (n - 1) / n;
	case LG_ALL_TO_ALL:
	case LG_ALL_GATHER:
		return (n - 1) / n;
	case LG_HANDOFF:
		return 1.0;
	}
	return 1.0;
}

static void lg_put24(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 16);
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)v;
}

static void lg_hdr_put(const struct lg *lg, unsigned char *p)
{
	uint16_t magic = htons(LG_HDR_MAGIC), flags = htons(lg->last ? LG_HDR_LAST : 0);
	uint32_t iter = htonl(lg->iter);

	memcpy(p, &magic, 2);
	memcpy(p + 2, &flags, 2);
	memcpy(p + 4, &iter, 4);
}

/* Checks a received transfer's header; a "last" flag makes this iteration
 * the run's last one here too. */
static int lg_hdr_check(struct lg *lg, const struct lg_peer *pe, const unsigned char *p)
{
	uint16_t magic, flags;
	uint32_t iter;

	memcpy(&magic, p, 2);
	memcpy(&flags, p + 2, 2);
	memcpy(&iter, p + 4, 4);
	if (ntohs(magic) != LG_HDR_MAGIC)
		return lg_fail_peer(lg, pe, -EPROTO, "%s sent a transfer without a loadgen header",
				    pe->name);
	if (ntohl(iter) != lg->iter)
		return lg_fail_peer(lg, pe, -EPROTO, "%s is out of step: iteration %u, expected %u",
				    pe->name, ntohl(iter) + 1, lg->iter + 1);
	if (ntohs(flags) & LG_HDR_LAST)
		lg->last = 1;
	return 0;
}

static size_t lg_fifo_free(const struct lg_fifo *f)
{
	return f->cap - f->len;
}

static void lg_fifo_push(struct lg_fifo *f, const unsigned char *p, size_t n)
{
	size_t tail = (f->head + f->len) % f->cap, k = n < f->cap - tail ? n : f->cap - tail;

	memcpy(f->buf + tail, p, k);
	memcpy(f->buf, p + k, n - k);
	f->len += n;
}

static void lg_fifo_pop(struct lg_fifo *f, unsigned char *p, size_t n)
{
	size_t k = n < f->cap - f->head ? n : f->cap - f->head;

	memcpy(p, f->buf + f->head, k);
	memcpy(p + k, f->buf, n - k);
	f->head = (f->head + n) % f->cap;
	f->len -= n;
}

/* ---- control socket ---- */

static void lg_ctl_fill(const struct lg *lg, struct lg_ctl *m, uint8_t type)
{
	memset(m, 0, sizeof(*m));
	m->magic = htonl(LG_CTL_MAGIC);
	m->type = type;
	m->pattern = (uint8_t)lg->o.pattern;
	m->transport = (uint8_t)lg->o.transport;
	m->rank = htonl((uint32_t)lg->o.rank);
	m->ranks = htonl((uint32_t)lg->o.ranks);
	m->iters = htonl(lg->o.iters);
	m->size = htonl((uint32_t)lg->o.size);
	m->from = htonl((uint32_t)lg->o.from);
	m->to = htonl((uint32_t)lg->o.to);
}

/* Whether m comes from a rank run with this rank's configuration. */
static int lg_ctl_same(const struct lg *lg, const struct lg_ctl *m)
{
	struct lg_ctl mine;

	lg_ctl_fill(lg, &mine, m->type);
	mine.rank = m->rank;
	mine.blame = m->blame;
	return !memcmp(&mine, m, offsetof(struct lg_ctl, reason));
}

static void lg_ctl_send(struct lg *lg, const struct lg_peer *pe, const struct lg_ctl *m)
{
	/* Best effort: a lost hello is sent again, and a rank that misses an
	 * abort still stops at its own timeout. */
	(void)sendto(lg->ctl_fd, m, sizeof(*m), 0, (const struct sockaddr *)&pe->ctl,
		     sizeof(pe->ctl));
}

/* Drains the control socket: answers hellos, marks the peers heard from,
 * and keeps each abort; while the run is on, an abort stops it with
 * -ECONNABORTED. Returns 0 or -errno. */
static int lg_ctl_handle(struct lg *lg)
{
	struct lg_ctl m, ack;
	struct sockaddr_in src;
	socklen_t sl;
	struct lg_peer *pe;
	ssize_t n;
	uint32_t r;

	for (;;) {
		sl = sizeof(src);
		n = recvfrom(lg->ctl_fd, &m, sizeof(m), MSG_DONTWAIT, (struct sockaddr *)&src, &sl);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n < 0)
			return lg_fail(lg, -errno, "control socket: %s", strerror(errno));
		r = ntohl(m.rank);
		if ((size_t)n != sizeof(m) || ntohl(m.magic) != LG_CTL_MAGIC ||
		    r >= (uint32_t)lg->o.ranks || (int)r == lg->o.rank)
			continue;
		pe = &lg->peer[r];
		/* a datagram claiming a rank from another address is not that rank */
		if (src.sin_addr.s_addr != pe->ctl.sin_addr.s_addr ||
		    src.sin_port != pe->ctl.sin_port)
			continue;
		if (m.type == LG_CTL_ABORT) {
			lg->blame[r] = m.blame < lg->o.ranks ? m.blame : -1;
			memcpy(lg->reason[r], m.reason, LG_REASON_LEN);
			lg->reason[r][LG_REASON_LEN - 1] = 0;
			if (lg->settling)
				continue;
			lg->abort_from = (int)r;
			return -ECONNABORTED;
		}
		if (!lg_ctl_same(lg, &m))
			return lg_fail_peer(
				lg, pe, -EINVAL,
				"%s runs another configuration (--ranks, --pattern, --transport, "
				"--size, --iters or --handoff-*)",
				pe->name);
		/* a peer binds its sockets before it says anything: either
		 * message shows it is ready for data */
		pe->ready = 1;
		if (m.type == LG_CTL_HELLO) {
			lg_ctl_fill(lg, &ack, LG_CTL_HELLO_ACK);
			lg_ctl_send(lg, pe, &ack);
		}
	}
}

/* Waits until fd is ready for events (or only serves the control socket if
 * fd < 0), answering control messages meanwhile. Returns 0, -ETIMEDOUT at
 * the deadline, or -errno from the control socket (-ECONNABORTED: an abort). */
static int lg_wait(struct lg *lg, int fd, short events, int64_t deadline)
{
	struct pollfd p[2] = { { .fd = lg->ctl_fd, .events = POLLIN },
			       { .fd = fd, .events = events } };
	int64_t now;
	int n, err;

	for (;;) {
		now = lg_now();
		if (now >= deadline)
			return -ETIMEDOUT;
		n = poll(p, fd >= 0 ? 2 : 1, lg_poll_ms(deadline, now));
		if (n < 0 && errno != EINTR)
			return lg_fail(lg, -errno, "poll: %s", strerror(errno));
		if (n > 0 && p[0].revents) {
			err = lg_ctl_handle(lg);
			if (err)
				return err;
		}
		if (n > 0 && fd >= 0 && p[1].revents)
			return 0;
	}
}

/* ---- RoCEv2 over UDP ---- */

static void lg_bth_put(unsigned char *p, uint8_t opcode, unsigned pad, uint32_t qpn, int ack_req,
		       uint32_t psn)
{
	/* IBTA 9.2: opcode; SE|M|PadCnt|TVer; P_Key (default 0xffff); reserved
	 * (FECN/BECN in RoCEv2); dest QP; A|reserved; PSN */
	p[0] = opcode;
	p[1] = (unsigned char)(pad << 4);
	p[2] = p[3] = 0xff;
	p[4] = 0;
	lg_put24(p + 5, qpn);
	p[8] = ack_req ? 0x80 : 0;
	lg_put24(p + 9, psn & ROCE_PSN_MASK);
}

/* Sends an ACK or NAK (opcode ACK with an AETH) or a CNP to the sender. */
static void lg_roce_reply(struct lg *lg, const struct lg_peer *pe, uint8_t opcode, uint32_t psn,
			  uint8_t syndrome)
{
	unsigned char p[ROCE_BTH_LEN + LG_ROCE_CNP_LEN + ROCE_ICRC_LEN] = { 0 };
	size_t n = sizeof(p);

	lg_bth_put(p, opcode, 0, LG_ROCE_QPN(pe->rank, lg->o.rank), 0, psn);
	if (opcode == LG_ROCE_ACK) {
		/* IBTA 9.3.5: AETH = syndrome, 24-bit MSN */
		p[ROCE_BTH_LEN] = syndrome;
		lg_put24(p + ROCE_BTH_LEN + 1, pe->rx_msn);
		n = ROCE_BTH_LEN + ROCE_AETH_LEN + ROCE_ICRC_LEN;
	}
	/* Best effort, as on a fabric: a lost ACK is made good by the sender's
	 * retransmission and the duplicate's ACK, a lost CNP is a lost hint. */
	(void)sendto(lg->data_fd, p, n, MSG_DONTWAIT, (const struct sockaddr *)&pe->data,
		     sizeof(pe->data));
}

static int lg_roce_can_send(const struct lg_op *op, uint32_t k)
{
	return op->active && k < op->npkts && k - op->una < LG_ROCE_WINDOW;
}

/* Sends a burst of pe's next packets with one sendmmsg(). Returns 0 (also
 * when the socket is full: roce_blocked is then set) or -errno. */
static int lg_roce_send_burst(struct lg *lg, struct lg_peer *pe, int64_t now)
{
	static const unsigned char tail[3 + ROCE_ICRC_LEN];
	struct lg_op *op = &pe->tx;
	unsigned char bth[LG_ROCE_TX_BURST][ROCE_BTH_LEN];
	struct iovec iov[LG_ROCE_TX_BURST][3];
	struct mmsghdr mm[LG_ROCE_TX_BURST];
	uint32_t k = op->nxt, first, last;
	unsigned n, pad;
	size_t off, plen;
	uint8_t opcode;
	int sent;

	for (n = 0; n < LG_ROCE_TX_BURST && lg_roce_can_send(op, k + n); n++) {
		first = k + n - (k + n) % LG_ROCE_MSG_PKTS;
		last = first + LG_ROCE_MSG_PKTS < op->npkts ? first + LG_ROCE_MSG_PKTS - 1
							    : op->npkts - 1;
		off = (size_t)(k + n) * LG_ROCE_MTU;
		plen = op->len - off < LG_ROCE_MTU ? op->len - off : LG_ROCE_MTU;
		pad = (unsigned)(-plen & 3); /* IBTA 9.2: payloads are padded to 4 bytes */
		opcode = first == last	  ? LG_ROCE_SEND_ONLY
			 : k + n == first ? LG_ROCE_SEND_FIRST
			 : k + n == last  ? LG_ROCE_SEND_LAST
					  : LG_ROCE_SEND_MIDDLE;
		lg_bth_put(bth[n], opcode, pad, LG_ROCE_QPN(pe->rank, lg->o.rank), k + n == last,
			   op->psn0 + k + n);
		iov[n][0] = (struct iovec){ bth[n], ROCE_BTH_LEN };
		iov[n][1] = (struct iovec){ op->buf + off, plen };
		iov[n][2] = (struct iovec){ (void *)tail, pad + ROCE_ICRC_LEN };
		mm[n] = (struct mmsghdr){ .msg_hdr = { .msg_name = &pe->data,
						       .msg_namelen = sizeof(pe->data),
						       .msg_iov = iov[n],
						       .msg_iovlen = 3 } };
	}
	sent = sendmmsg(lg->data_fd, mm, n, MSG_DONTWAIT);
	if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		lg->roce_blocked = 1;
		return 0;
	}
	/* a full queue on the way out dropped the packet: the protocol repairs it */
	if (sent < 0 && errno == ENOBUFS)
		sent = 1;
	if (sent < 0)
		return lg_fail_peer(lg, pe, -errno, "unable to send to %s: %s", pe->name,
				    strerror(errno));
	/* a short count means the socket filled up */
	if ((unsigned)sent < n)
		lg->roce_blocked = 1;
	lg->st.pkts += (unsigned)sent;
	if (k < op->max)
		lg->st.retrans += (op->max - k < (unsigned)sent ? op->max - k : (unsigned)sent);
	op->nxt += (unsigned)sent;
	if (op->nxt > op->max)
		op->max = op->nxt;
	if (!op->t_rto)
		op->t_rto = now + op->rto;
	return 0;
}

/* Sends what the windows allow, a burst per peer in turn, so that an
 * all-to-all feeds every peer at once. Returns 0 or -errno. */
static int lg_roce_pump(struct lg *lg, int64_t now)
{
	struct lg_peer *pe;
	int more = 1, err;

	while (more && !lg->roce_blocked) {
		more = 0;
		for (int p = 0; p < lg->o.ranks && !lg->roce_blocked; p++) {
			pe = &lg->peer[p];
			if (!lg_roce_can_send(&pe->tx, pe->tx.nxt))
				continue;
			err = lg_roce_send_burst(lg, pe, now);
			if (err)
				return err;
			more |= lg_roce_can_send(&pe->tx, pe->tx.nxt);
		}
	}
	return 0;
}

/* Places in-order data for pe's receive, or keeps it until the receive is
 * posted. Returns 0, or -ENOBUFS if it fits nowhere (the packet is then
 * treated as lost). */
static int lg_deliver(struct lg_peer *pe, const unsigned char *p, size_t n, int64_t now)
{
	struct lg_op *op = &pe->rx;
	size_t k = 0;

	if (op->active && !pe->fifo.len)
		k = n < op->len - op->done ? n : op->len - op->done;
	if (n - k > lg_fifo_free(&pe->fifo))
		return -ENOBUFS;
	if (k) {
		memcpy(op->buf + op->done, p, k);
		op->done += k;
		op->t_progress = now;
	}
	if (n > k)
		lg_fifo_push(&pe->fifo, p + k, n - k);
	return 0;
}

static void lg_roce_data(struct lg *lg, struct lg_peer *pe, const struct roce_bth *bth,
			 const unsigned char *pkt, size_t n, uint8_t tos, int64_t now)
{
	unsigned pad = (pkt[1] >> 4) & 3;
	uint32_t missing;
	enum roce_psn_order order;

	if (n < ROCE_BTH_LEN + pad + ROCE_ICRC_LEN) {
		lg->st.drops++;
		return;
	}
	if ((tos & IPTOS_ECN_MASK) == IPTOS_ECN_CE) {
		lg->st.ce++;
		lg->st.cnps_tx++;
		lg_roce_reply(lg, pe, ROCE_OPCODE_CNP, 0, 0);
	}
	order = roce_psn_order((pe->rx_epsn - 1) & ROCE_PSN_MASK, 1, bth->psn, &missing);
	if (order == ROCE_PSN_GAP) {
		/* as an RC responder: one NAK per gap, naming the PSN expected */
		if (!pe->rx_nak_sent) {
			pe->rx_nak_sent = 1;
			lg->st.naks_tx++;
			lg_roce_reply(lg, pe, LG_ROCE_ACK, pe->rx_epsn,
				      ROCE_AETH_NAK << 5 | ROCE_NAK_PSN_SEQUENCE);
		}
		return;
	}
	if (order != ROCE_PSN_NEXT) {
		/* a retransmission: ACK again in case our ACK was what got lost */
		lg->st.dups++;
		if (bth->ack_req)
			lg_roce_reply(lg, pe, LG_ROCE_ACK, pe->rx_epsn - 1,
				      ROCE_AETH_ACK << 5 | LG_ROCE_CREDITS_INVALID);
		return;
	}
	if (lg_deliver(pe, pkt + ROCE_BTH_LEN, n - ROCE_BTH_LEN - pad - ROCE_ICRC_LEN, now)) {
		lg->st.drops++;
		return;
	}
	pe->rx_epsn = (pe->rx_epsn + 1) & ROCE_PSN_MASK;
	pe->rx_nak_sent = 0;
	if (bth->ack_req) {
		pe->rx_msn = (pe->rx_msn + 1) & ROCE_PSN_MASK;
		lg_roce_reply(lg, pe, LG_ROCE_ACK, bth->psn,
			      ROCE_AETH_ACK << 5 | LG_ROCE_CREDITS_INVALID);
	}
}

/* An ACK acknowledges every packet up to its PSN; a PSN-sequence NAK says
 * the receiver has everything before its PSN and wants the rest again. */
static void lg_roce_ack(struct lg *lg, struct lg_peer *pe, const struct roce_bth *bth,
			const unsigned char *pkt, size_t n, int64_t now)
{
	struct lg_op *op = &pe->tx;
	uint32_t idx = (bth->psn - op->psn0) & ROCE_PSN_MASK;
	uint8_t syn;

	if (n < ROCE_BTH_LEN + ROCE_AETH_LEN || !op->active)
		return;
	syn = pkt[ROCE_BTH_LEN];
	if (syn >> 5 == ROCE_AETH_ACK && idx < op->max && idx >= op->una) {
		op->una = idx + 1;
		if (op->nxt < op->una)
			op->nxt = op->una;
	} else if (syn >> 5 == ROCE_AETH_NAK && (syn & 0x1f) == ROCE_NAK_PSN_SEQUENCE &&
		   idx <= op->max && idx >= op->una) {
		lg->st.naks_rx++;
		op->una = idx;
		op->nxt = idx;
	} else {
		return;
	}
	op->t_progress = now;
	op->rto = LG_ROCE_RTO_MIN_NS;
	op->t_rto = op->una < op->nxt ? now + op->rto : 0;
}

static struct lg_peer *lg_peer_by_data_addr(struct lg *lg, const struct sockaddr_in *src)
{
	for (int p = 0; p < lg->o.ranks; p++)
		if (p != lg->o.rank && lg->peer[p].data.sin_addr.s_addr == src->sin_addr.s_addr &&
		    lg->peer[p].data.sin_port == src->sin_port)
			return &lg->peer[p];
	return NULL;
}

/* Reads a batch of packets off the RoCE socket. Returns how many, or -errno. */
static int lg_roce_rx(struct lg *lg, int64_t now)
{
	unsigned char pkt[2048];
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct sockaddr_in src;
	struct iovec iov = { pkt, sizeof(pkt) };
	struct msghdr mh = { .msg_name = &src, .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;
	struct roce_bth bth;
	struct lg_peer *pe;
	ssize_t n;
	uint8_t tos;
	int i;

	for (i = 0; i < LG_ROCE_RX_BATCH; i++) {
		mh.msg_namelen = sizeof(src);
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = sizeof(cbuf.buf);
		n = recvmsg(lg->data_fd, &mh, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n < 0)
			return lg_fail(lg, -errno, "RoCE socket: %s", strerror(errno));
		tos = 0;
		for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
			if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS)
				tos = *(const uint8_t *)CMSG_DATA(c);
		pe = lg_peer_by_data_addr(lg, &src);
		if (!pe || roce_parse_bth(pkt, pkt + n, &bth) ||
		    bth.dest_qp != LG_ROCE_QPN(lg->o.rank, pe->rank)) {
			lg->st.drops++;
			continue;
		}
		switch (bth.opcode) {
		case LG_ROCE_SEND_FIRST:
		case LG_ROCE_SEND_MIDDLE:
		case LG_ROCE_SEND_LAST:
		case LG_ROCE_SEND_ONLY:
			lg_roce_data(lg, pe, &bth, pkt, (size_t)n, tos, now);
			break;
		case LG_ROCE_ACK:
			lg_roce_ack(lg, pe, &bth, pkt, (size_t)n, now);
			break;
		case ROCE_OPCODE_CNP:
			lg->st.cnps_rx++;
			break;
		default:
			lg->st.drops++;
		}
	}
	return i;
}

/* ---- TCP ---- */

static int lg_tcp_io(struct lg *lg, struct lg_peer *pe, short revents, int64_t now)
{
	struct lg_op *tx = &pe->tx, *rx = &pe->rx;
	ssize_t n;

	if (tx->active && tx->done < tx->len && (revents & (POLLOUT | POLLERR | POLLHUP))) {
		n = send(pe->fd, tx->buf + tx->done, tx->len - tx->done,
			 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return lg_fail_peer(lg, pe, -errno, "lost %s: %s", pe->name,
					    strerror(errno));
		if (n > 0) {
			tx->done += (size_t)n;
			tx->t_progress = now;
		}
	}
	if (rx->active && rx->done < rx->len && (revents & (POLLIN | POLLERR | POLLHUP))) {
		n = recv(pe->fd, rx->buf + rx->done, rx->len - rx->done, MSG_DONTWAIT);
		if (n == 0)
			return lg_fail_peer(lg, pe, -ECONNRESET, "%s closed the connection",
					    pe->name);
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return lg_fail_peer(lg, pe, -errno, "lost %s: %s", pe->name,
					    strerror(errno));
		if (n > 0) {
			rx->done += (size_t)n;
			rx->t_progress = now;
		}
	}
	return 0;
}

/* ---- the progress engine ---- */

static void lg_post_tx(struct lg *lg, struct lg_peer *pe, unsigned char *buf, size_t len,
		       int64_t now)
{
	struct lg_op *op = &pe->tx;

	lg_hdr_put(lg, buf);
	*op = (struct lg_op){ .buf = buf, .len = len, .active = 1, .t_progress = now };
	if (lg->o.transport == LG_ROCE) {
		op->npkts = (uint32_t)((len + LG_ROCE_MTU - 1) / LG_ROCE_MTU);
		op->psn0 = pe->tx_psn;
		op->rto = LG_ROCE_RTO_MIN_NS;
		pe->tx_psn = (pe->tx_psn + op->npkts) & ROCE_PSN_MASK;
	}
}

static void lg_post_rx(struct lg *lg, struct lg_peer *pe, unsigned char *buf, size_t len,
		       int64_t now)
{
	struct lg_op *op = &pe->rx;
	size_t k = pe->fifo.len < len ? pe->fifo.len : len;

	*op = (struct lg_op){ .buf = buf, .len = len, .active = 1, .t_progress = now };
	if (lg->o.transport == LG_ROCE && k) {
		lg_fifo_pop(&pe->fifo, buf, k);
		op->done = k;
	}
}

static int lg_tx_pending(const struct lg *lg, const struct lg_op *op)
{
	if (!op->active)
		return 0;
	return lg->o.transport == LG_ROCE ? op->una < op->npkts : op->done < op->len;
}

static int lg_rx_pending(const struct lg_op *op)
{
	return op->active && op->done < op->len;
}

/* Fails a transfer that made no progress for --timeout, and sends again
 * what a RoCE receiver has not acknowledged in its retransmission time. */
static int lg_timers(struct lg *lg, int64_t now)
{
	struct lg_peer *pe;

	if (now >= lg->t_hard_end)
		return lg_fail(lg, -ETIMEDOUT,
			       "still running at --duration %g s plus --timeout %g s",
			       lg->o.duration_s, lg->o.timeout_s);
	for (int p = 0; p < lg->o.ranks; p++) {
		pe = &lg->peer[p];
		if (lg_tx_pending(lg, &pe->tx) && now - pe->tx.t_progress >= lg->timeout_ns)
			return lg_fail_peer(lg, pe, -ETIMEDOUT,
					    lg->o.transport == LG_TCP ? "%s took no data for %g s"
								      : "no ACK from %s for %g s",
					    pe->name, lg->o.timeout_s);
		if (lg_rx_pending(&pe->rx) && now - pe->rx.t_progress >= lg->timeout_ns)
			return lg_fail_peer(lg, pe, -ETIMEDOUT, "no data from %s for %g s",
					    pe->name, lg->o.timeout_s);
		if (lg_tx_pending(lg, &pe->tx) && pe->tx.t_rto && now >= pe->tx.t_rto) {
			/* go back N: everything after the first unacknowledged PSN */
			pe->tx.nxt = pe->tx.una;
			pe->tx.t_rto = 0;
			pe->tx.rto = pe->tx.rto * 2 < LG_ROCE_RTO_MAX_NS ? pe->tx.rto * 2
									 : LG_ROCE_RTO_MAX_NS;
		}
	}
	return 0;
}

/* Runs the posted sends and receives to completion. Returns 0, or -errno
 * with the reason recorded. */
static int lg_progress(struct lg *lg)
{
	struct lg_peer *pe;
	int64_t now, wake;
	int nfds, pending, n, err;
	short ev;

	for (;;) {
		now = lg_now();
		err = lg_timers(lg, now);
		if (!err && lg->o.transport == LG_ROCE)
			err = lg_roce_pump(lg, now);
		if (err)
			return err;
		wake = lg->t_hard_end;
		pending = 0;
		nfds = 0;
		lg->pfd[nfds++] = (struct pollfd){ .fd = lg->ctl_fd, .events = POLLIN };
		if (lg->o.transport == LG_ROCE)
			lg->pfd[nfds++] = (struct pollfd){
				.fd = lg->data_fd,
				.events = (short)(POLLIN | (lg->roce_blocked ? POLLOUT : 0))
			};
		for (int p = 0; p < lg->o.ranks; p++) {
			pe = &lg->peer[p];
			ev = 0;
			if (lg_tx_pending(lg, &pe->tx)) {
				pending++;
				ev |= POLLOUT;
				if (pe->tx.t_progress + lg->timeout_ns < wake)
					wake = pe->tx.t_progress + lg->timeout_ns;
				if (pe->tx.t_rto && pe->tx.t_rto < wake)
					wake = pe->tx.t_rto;
			}
			if (lg_rx_pending(&pe->rx)) {
				pending++;
				ev |= POLLIN;
				if (pe->rx.t_progress + lg->timeout_ns < wake)
					wake = pe->rx.t_progress + lg->timeout_ns;
			}
			if (lg->o.transport == LG_TCP && ev) {
				lg->pfd_rank[nfds] = p;
				lg->pfd[nfds++] = (struct pollfd){ .fd = pe->fd, .events = ev };
			}
		}
		if (!pending)
			break;
		if (lg->o.transport == LG_ROCE) {
			/* while packets keep coming, take them without a poll() each */
			n = lg_roce_rx(lg, now);
			if (n < 0)
				return n;
			if (n > 0)
				continue;
		}
		n = poll(lg->pfd, (nfds_t)nfds, lg_poll_ms(wake, now));
		if (n < 0 && errno != EINTR)
			return lg_fail(lg, -errno, "poll: %s", strerror(errno));
		if (n <= 0)
			continue;
		now = lg_now();
		if (lg->pfd[0].revents) {
			err = lg_ctl_handle(lg);
			if (err)
				return err;
		}
		for (int i = 1; i < nfds; i++) {
			if (!lg->pfd[i].revents)
				continue;
			if (lg->o.transport == LG_ROCE) {
				lg->roce_blocked = 0;
				err = lg_roce_rx(lg, now);
				err = err < 0 ? err : 0;
			} else {
				err = lg_tcp_io(lg, &lg->peer[lg->pfd_rank[i]], lg->pfd[i].revents,
						now);
			}
			if (err)
				return err;
		}
	}
	/* data or ACKs that arrive from now on belong to later transfers */
	for (int p = 0; p < lg->o.ranks; p++)
		lg->peer[p].tx.active = lg->peer[p].rx.active = 0;
	return 0;
}

/* ---- the patterns ---- */

static unsigned char *lg_chunk(const struct lg *lg, unsigned char *base, int i)
{
	return base + (size_t)i * lg->chunk;
}

static void lg_reduce(unsigned char *restrict acc, const unsigned char *restrict in, size_t n)
{
	for (size_t i = 0; i < n; i++)
		acc[i] += in[i];
}

/* N-1 ring steps: in each, send one chunk to the successor and wait for the
 * predecessor's. shift 0 with reduce is a reduce-scatter (rank r ends with
 * chunk r+1 summed over all ranks); shift 1 then passes the summed chunks on
 * (the all-gather half of all-reduce); shift 0 without reduce is all-gather
 * of each rank's own chunk. */
static int lg_ring_pass(struct lg *lg, int shift, int reduce)
{
	int n = lg->o.ranks, r = lg->o.rank, send_i, recv_i, err;
	struct lg_peer *succ = &lg->peer[(r + 1) % n], *pred = &lg->peer[(r + n - 1) % n];
	unsigned char *in;
	int64_t now;

	for (int s = 0; s < n - 1; s++) {
		send_i = (r + shift - s + 2 * n) % n;
		recv_i = (r + shift - s - 1 + 2 * n) % n;
		in = reduce ? lg->buf2 : lg_chunk(lg, lg->buf, recv_i);
		now = lg_now();
		lg_post_tx(lg, succ, lg_chunk(lg, lg->buf, send_i), lg->chunk, now);
		lg_post_rx(lg, pred, in, lg->chunk, now);
		err = lg_progress(lg);
		if (!err)
			err = lg_hdr_check(lg, pred, in);
		if (err)
			return err;
		if (reduce)
			lg_reduce(lg_chunk(lg, lg->buf, recv_i), in, lg->chunk);
	}
	return 0;
}

static int lg_all_to_all(struct lg *lg)
{
	int64_t now = lg_now();
	int err;

	for (int p = 0; p < lg->o.ranks; p++) {
		if (p == lg->o.rank)
			continue;
		lg_post_tx(lg, &lg->peer[p], lg_chunk(lg, lg->buf, p), lg->chunk, now);
		lg_post_rx(lg, &lg->peer[p], lg_chunk(lg, lg->buf2, p), lg->chunk, now);
	}
	err = lg_progress(lg);
	for (int p = 0; p < lg->o.ranks && !err; p++)
		if (p != lg->o.rank)
			err = lg_hdr_check(lg, &lg->peer[p], lg_chunk(lg, lg->buf2, p));
	return err;
}

/* The decode rank asks, the prefill rank answers with the whole buffer.
 * Decode times request to last byte; prefill, from the request to the end
 * of its send (TCP: all written; RoCE: all acknowledged). */
static int lg_handoff(struct lg *lg, int64_t *t0)
{
	struct lg_peer *pe = &lg->peer[lg->o.rank == lg->o.to ? lg->o.from : lg->o.to];
	int err;

	if (lg->o.rank == lg->o.to) {
		lg_post_rx(lg, pe, lg->buf, lg->size, *t0);
		lg_post_tx(lg, pe, lg->req, sizeof(lg->req), *t0);
		err = lg_progress(lg);
		return err ? err : lg_hdr_check(lg, pe, lg->buf);
	}
	lg_post_rx(lg, pe, lg->req, sizeof(lg->req), *t0);
	err = lg_progress(lg);
	if (!err)
		err = lg_hdr_check(lg, pe, lg->req);
	if (err)
		return err;
	*t0 = lg_now();
	lg_post_tx(lg, pe, lg->buf, lg->size, *t0);
	return lg_progress(lg);
}

/* Runs one iteration; *ret_ns is its duration. */
static int lg_iteration(struct lg *lg, int64_t *ret_ns)
{
	int64_t t0 = lg_now();
	int err = 0;

	lg->last = lg->iter + 1 == lg->o.iters || (lg_is_leader(lg) && t0 >= lg->t_soft_end);
	switch (lg->o.pattern) {
	case LG_RING_ALLREDUCE:
		err = lg_ring_pass(lg, 0, 1);
		if (!err)
			err = lg_ring_pass(lg, 1, 0);
		break;
	case LG_ALL_GATHER:
		err = lg_ring_pass(lg, 0, 0);
		break;
	case LG_ALL_TO_ALL:
		err = lg_all_to_all(lg);
		break;
	case LG_HANDOFF:
		err = lg_handoff(lg, &t0);
		break;
	}
	if (!err)
		*ret_ns = lg_now() - t0;
	return err;
}

/* ---- set-up ---- */

static int lg_socket(struct lg *lg, int type, const struct sockaddr_in *at, int *ret_fd)
{
	char a[INET_ADDRSTRLEN];
	int fd, one = 1, err = 0;

	fd = socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return lg_fail(lg, -errno, "socket: %s", strerror(errno));
	/* a rerun in the same lab must not wait out the last run's TIME_WAIT */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (const struct sockaddr *)at, sizeof(*at)) < 0) {
		err = lg_fail(lg, -errno, "unable to bind %s:%u: %s (is --rank right?)",
			      inet_ntop(AF_INET, &at->sin_addr, a, sizeof(a)), ntohs(at->sin_port),
			      strerror(errno));
		goto cleanup;
	}
	*ret_fd = fd;
	fd = -1;
cleanup:
	if (fd >= 0)
		close(fd);
	return err;
}

static void lg_sockbuf(int fd, int force, int plain)
{
	int size = LG_ROCE_SOCKBUF;

	/* Past net.core.[rw]mem_max needs CAP_NET_ADMIN; without it the
	 * capped size still works, with more drops under load. */
	if (setsockopt(fd, SOL_SOCKET, force, &size, sizeof(size)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, plain, &size, sizeof(size));
}

static int lg_open(struct lg *lg)
{
	const struct lg_opts *o = &lg->o;
	struct sockaddr_in at = { .sin_family = AF_INET, .sin_addr = o->addr[o->rank] };
	int tos = LG_ROCE_TOS, one = 1, err;

	at.sin_port = htons((uint16_t)(o->port + (unsigned)o->rank));
	err = lg_socket(lg, SOCK_DGRAM, &at, &lg->ctl_fd);
	if (err)
		return err;
	if (o->transport == LG_TCP) {
		err = lg_socket(lg, SOCK_STREAM, &at, &lg->data_fd);
		if (!err && listen(lg->data_fd, o->ranks) < 0)
			err = lg_fail(lg, -errno, "listen: %s", strerror(errno));
		return err;
	}
	at.sin_port = htons(ROCE_UDP_PORT);
	err = lg_socket(lg, SOCK_DGRAM, &at, &lg->data_fd);
	if (err)
		return err;
	if (setsockopt(lg->data_fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)) < 0 ||
	    setsockopt(lg->data_fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one)) < 0)
		return lg_fail(lg, -errno, "RoCE socket options: %s", strerror(errno));
	lg_sockbuf(lg->data_fd, SO_RCVBUFFORCE, SO_RCVBUF);
	lg_sockbuf(lg->data_fd, SO_SNDBUFFORCE, SO_SNDBUF);
	return 0;
}

/* Hellos to every peer this rank needs until each has answered: then it is
 * up, listening, and runs the same configuration. */
static int lg_handshake(struct lg *lg)
{
	int64_t now = lg_now(), deadline = now + lg->timeout_ns, next = now;
	struct lg_peer *waiting;
	struct lg_ctl m;
	int err;

	if (deadline > lg->t_hard_end)
		deadline = lg->t_hard_end;
	lg_ctl_fill(lg, &m, LG_CTL_HELLO);
	for (;;) {
		waiting = NULL;
		for (int p = 0; p < lg->o.ranks; p++) {
			if (!lg->peer[p].needed || lg->peer[p].ready)
				continue;
			waiting = waiting ? waiting : &lg->peer[p];
			if (now >= next)
				lg_ctl_send(lg, &lg->peer[p], &m);
		}
		if (!waiting)
			return 0;
		if (now >= next)
			next = now + LG_HELLO_EVERY_NS;
		err = lg_wait(lg, -1, 0, next < deadline ? next : deadline);
		if (err && err != -ETIMEDOUT)
			return err;
		now = lg_now();
		if (now >= deadline)
			return lg_fail_peer(
				lg, waiting, -ETIMEDOUT,
				"no answer from %s for %g s (not started, or another --port?)",
				waiting->name, lg->o.timeout_s);
	}
}

static int lg_tcp_nodelay(struct lg *lg, struct lg_peer *pe, int fd)
{
	int one = 1;

	/* one message per ring step: never hold a tail segment back */
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		return lg_fail(lg, -errno, "TCP_NODELAY: %s", strerror(errno));
	pe->fd = fd;
	return 0;
}

/* Connects to a lower-ranked peer and introduces this rank with its number;
 * retries while the peer is not listening yet. */
static int lg_tcp_connect(struct lg *lg, struct lg_peer *pe, int64_t deadline)
{
	struct sockaddr_in at = { .sin_family = AF_INET, .sin_addr = lg->o.addr[lg->o.rank] };
	uint32_t id = htonl((uint32_t)lg->o.rank);
	int fd = -1, err, soerr;
	socklen_t sl;

	for (;;) {
		/* bound to this rank's address: the peer checks where we come from */
		err = lg_socket(lg, SOCK_STREAM, &at, &fd);
		if (err)
			goto cleanup;
		if (connect(fd, (const struct sockaddr *)&pe->data, sizeof(pe->data)) < 0)
			err = errno == EINPROGRESS ? lg_wait(lg, fd, POLLOUT, deadline) : -errno;
		if (!err) {
			sl = sizeof(soerr);
			err = getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 ? -errno
										    : -soerr;
		}
		if (err != -ECONNREFUSED || lg_now() + LG_CONNECT_RETRY_NS >= deadline)
			break;
		close(fd);
		fd = -1;
		err = lg_wait(lg, -1, 0, lg_now() + LG_CONNECT_RETRY_NS);
		if (err != -ETIMEDOUT)
			goto cleanup;
	}
	if (err) {
		err = lg_fail_peer(lg, pe, err, "unable to connect to %s: %s", pe->name,
				   strerror(-err));
		goto cleanup;
	}
	if (send(fd, &id, sizeof(id), MSG_NOSIGNAL) != (ssize_t)sizeof(id)) {
		err = lg_fail_peer(lg, pe, -EIO, "unable to introduce this rank to %s", pe->name);
		goto cleanup;
	}
	err = lg_tcp_nodelay(lg, pe, fd);
	if (!err)
		fd = -1;
cleanup:
	if (fd >= 0)
		close(fd);
	return err;
}

/* Reads the rank number a connecting peer sends first. Returns 0 with
 * *ret_pe the peer, or NULL for a connection that is not one this rank
 * expects; or -errno from the control socket (an abort). */
static int lg_tcp_identify(struct lg *lg, int fd, const struct sockaddr_in *src, int64_t deadline,
			   struct lg_peer **ret_pe)
{
	struct lg_peer *pe = NULL;
	uint32_t id;
	int err;

	err = lg_wait(lg, fd, POLLIN, deadline);
	if (err && err != -ETIMEDOUT)
		return err;
	if (!err && recv(fd, &id, sizeof(id), MSG_DONTWAIT) == (ssize_t)sizeof(id)) {
		id = ntohl(id);
		if (id < (uint32_t)lg->o.ranks && (int)id > lg->o.rank)
			pe = &lg->peer[id];
	}
	if (pe && (!pe->needed || pe->fd >= 0 || src->sin_addr.s_addr != pe->data.sin_addr.s_addr))
		pe = NULL;
	*ret_pe = pe;
	return 0;
}

/* Accepts the connections of the higher-ranked peers. */
static int lg_tcp_accept(struct lg *lg, int64_t deadline)
{
	struct sockaddr_in src;
	socklen_t sl;
	struct lg_peer *pe;
	int fd, err;

	for (;;) {
		pe = NULL;
		for (int p = lg->o.ranks - 1; p > lg->o.rank; p--)
			if (lg->peer[p].needed && lg->peer[p].fd < 0)
				pe = &lg->peer[p];
		if (!pe)
			return 0;
		err = lg_wait(lg, lg->data_fd, POLLIN, deadline);
		if (err == -ETIMEDOUT)
			return lg_fail_peer(lg, pe, err, "%s did not connect for %g s", pe->name,
					    lg->o.timeout_s);
		if (err)
			return err;
		sl = sizeof(src);
		fd = accept4(lg->data_fd, (struct sockaddr *)&src, &sl,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		err = lg_tcp_identify(lg, fd, &src, deadline, &pe);
		if (!err && pe)
			err = lg_tcp_nodelay(lg, pe, fd);
		if (err || !pe)
			close(fd);
		if (err)
			return err;
	}
}

static int lg_setup(struct lg *lg)
{
	int64_t deadline;
	int err;

	err = lg_handshake(lg);
	if (err || lg->o.transport != LG_TCP)
		return err;
	deadline = lg_now() + lg->timeout_ns;
	if (deadline > lg->t_hard_end)
		deadline = lg->t_hard_end;
	for (int p = 0; p < lg->o.rank && !err; p++)
		if (lg->peer[p].needed)
			err = lg_tcp_connect(lg, &lg->peer[p], deadline);
	return err ? err : lg_tcp_accept(lg, deadline);
}

/* Prepares the peers, buffers and sockets for opts. */
static int lg_init(struct lg *lg, const struct lg_opts *opts)
{
	const struct lg_opts *o = &lg->o;
	size_t fifo_depth, fifo_len;
	struct lg_peer *pe;
	int n = opts->ranks;

	memset(lg, 0, sizeof(*lg));
	lg->o = *opts;
	lg->ctl_fd = lg->data_fd = -1;
	lg->err_blame = lg->abort_from = -1;
	lg->timeout_ns = (int64_t)(o->timeout_s * LG_NS);
	lg->t_soft_end = lg_now() + (int64_t)(o->duration_s * LG_NS);
	lg->t_hard_end = lg->t_soft_end + lg->timeout_ns;
	lg->chunk = o->pattern == LG_HANDOFF ? o->size : o->size / (size_t)n;
	lg->size = o->pattern == LG_HANDOFF ? o->size : lg->chunk * (size_t)n;
	/* Data that may arrive before its receive: in a ring, a predecessor
	 * can be up to N-1 steps ahead (each of its steps waits on the rank
	 * before it, and that chain closes through this rank); a peer in
	 * all-to-all or the hand-off at most one transfer. */
	fifo_depth =
		o->pattern == LG_RING_ALLREDUCE || o->pattern == LG_ALL_GATHER ? (size_t)n - 1 : 1;
	for (int p = 0; p < n; p++) {
		pe = &lg->peer[p];
		pe->rank = p;
		pe->fd = -1;
		lg->blame[p] = LG_UNHEARD;
		pe->needed = lg_needs(o, p);
		pe->data.sin_family = pe->ctl.sin_family = AF_INET;
		pe->data.sin_addr = pe->ctl.sin_addr = o->addr[p];
		pe->ctl.sin_port = htons((uint16_t)(o->port + (unsigned)p));
		pe->data.sin_port =
			o->transport == LG_ROCE ? htons(ROCE_UDP_PORT) : pe->ctl.sin_port;
		snprintf(pe->name, sizeof(pe->name), "rank %d (%s)", p, inet_ntoa(o->addr[p]));
		pe->tx_psn = pe->rx_epsn = LG_ROCE_PSN_START;
		if (o->transport != LG_ROCE || !pe->needed)
			continue;
		fifo_len = o->pattern == LG_HANDOFF && o->rank == o->from ? LG_HDR_LEN : lg->chunk;
		pe->fifo.cap = fifo_depth * fifo_len;
		pe->fifo.buf = malloc(pe->fifo.cap);
		if (!pe->fifo.buf)
			return lg_fail(lg, -ENOMEM, "out of memory");
	}
	lg->buf = malloc(lg->size);
	if (o->pattern == LG_RING_ALLREDUCE || o->pattern == LG_ALL_TO_ALL)
		lg->buf2 = malloc(o->pattern == LG_RING_ALLREDUCE ? lg->chunk : lg->size);
	lg->time_us = calloc(o->iters, sizeof(*lg->time_us));
	if (!lg->buf || !lg->time_us ||
	    ((o->pattern == LG_RING_ALLREDUCE || o->pattern == LG_ALL_TO_ALL) && !lg->buf2))
		return lg_fail(lg, -ENOMEM, "out of memory");
	/* touch every page now, not in the first timed iteration */
	memset(lg->buf, o->rank + 1, lg->size);
	return lg_open(lg);
}

/* The peer this rank has waited on longest (data to send or to receive with
 * no progress), or NULL. */
static struct lg_peer *lg_longest_wait(struct lg *lg)
{
	struct lg_peer *best = NULL;
	int64_t oldest = 0;

	for (int p = 0; p < lg->o.ranks; p++) {
		struct lg_peer *pe = &lg->peer[p];

		if (p == lg->o.rank)
			continue;
		if (lg_rx_pending(&pe->rx) && (!best || pe->rx.t_progress < oldest)) {
			best = pe;
			oldest = pe->rx.t_progress;
		}
		if (lg_tx_pending(lg, &pe->tx) && (!best || pe->tx.t_progress < oldest)) {
			best = pe;
			oldest = pe->tx.t_progress;
		}
	}
	return best;
}

/* Follows who blames whom from s while the blamed rank has told us whom it
 * blames in turn; returns the last rank on the way (its reason names the
 * culprit). */
static int lg_chain(const struct lg *lg, int s, int me)
{
	uint64_t seen = 0;
	int b;

	for (;;) {
		seen |= 1ull << s;
		b = lg->blame[s];
		if (b < 0 || b == me || (seen >> b & 1) || lg->blame[b] == LG_UNHEARD)
			return s;
		s = b;
	}
}

/* Tells every other rank that this one stops, blaming rank blame (-1:
 * nobody), for reason. */
static void lg_abort_all(struct lg *lg, int blame, const char *reason)
{
	struct lg_ctl m;

	lg_ctl_fill(lg, &m, LG_CTL_ABORT);
	m.blame = blame < 0 ? LG_NOBODY : (uint8_t)blame;
	/* cut to fit: lg_ctl_fill zeroed the rest, so it stays terminated */
	memcpy(m.reason, reason, strnlen(reason, sizeof(m.reason) - 1));
	for (int p = 0; p < lg->o.ranks; p++)
		if (p != lg->o.rank)
			lg_ctl_send(lg, &lg->peer[p], &m);
	lg->blame[lg->o.rank] = blame;
}

/* Called on failure. A rank that failed by itself tells every other rank
 * why, and whom it blames; a rank stopped by another's abort while it was
 * waiting on a peer tells them whom it waited for (the abort may have come
 * before its own timeout, and the chain needs that link). Then each rank
 * listens a moment for the others' aborts and follows who blames whom to a
 * rank that sent none (the dead or stuck one), so that every rank reports
 * the failure next to it rather than a neighbour's giving up because of it. */
static void lg_settle(struct lg *lg)
{
	int64_t deadline = lg_now() + LG_ABORT_GRACE_NS;
	int me = lg->o.rank, s = lg->abort_from;
	char why[LG_REASON_LEN];
	struct lg_peer *w;

	if (lg->ctl_fd < 0)
		return;
	if (s < 0) {
		lg_abort_all(lg, lg->err_blame, lg->err);
		s = me;
	} else if ((w = lg_longest_wait(lg))) {
		/* even when the abort came from the rank it waited for: a rank
		 * whose own timeout fired on this one follows its chain through
		 * here (t_loadgen's kill-roce once ended at this silent rank) */
		if (w->rank == s)
			snprintf(why, sizeof(why), "stopped by %s, for which it was waiting",
				 lg->peer[s].name);
		else
			snprintf(why, sizeof(why), "stopped by %s while waiting for %s",
				 lg->peer[s].name, w->name);
		lg_abort_all(lg, w->rank, why);
	}
	lg->settling = 1;
	while (lg_wait(lg, -1, 0, deadline) != -ETIMEDOUT)
		;
	s = lg_chain(lg, s, me);
	/* A chain that ends blaming this rank, which is alive and was itself
	 * waiting, names no culprit: another rank's abort may lead to the one
	 * that sent none (killed, or stuck). */
	for (int p = 0; p < lg->o.ranks && lg->blame[s] == me; p++)
		if (p != me && lg->blame[p] >= 0 && lg->blame[p] != LG_UNHEARD &&
		    lg->blame[p] != me)
			s = lg_chain(lg, p, me);
	if (s != me && lg->blame[s] == me && (w = lg_longest_wait(lg)))
		/* blamed, but alive: what this rank was waiting for is the lead */
		snprintf(lg->err, sizeof(lg->err),
			 "%s gave up on this rank, which was waiting for %s", lg->peer[s].name,
			 w->name);
	else if (s != me)
		snprintf(lg->err, sizeof(lg->err), "%s gave up: %s", lg->peer[s].name,
			 lg->reason[s]);
}

static void lg_release(struct lg *lg)
{
	for (int p = 0; p < lg->o.ranks; p++) {
		if (lg->peer[p].fd >= 0)
			close(lg->peer[p].fd);
		free(lg->peer[p].fifo.buf);
	}
	if (lg->ctl_fd >= 0)
		close(lg->ctl_fd);
	if (lg->data_fd >= 0)
		close(lg->data_fd);
	free(lg->buf);
	free(lg->buf2);
	free(lg->time_us);
}

/* ---- output ---- */

struct lg_summary {
	double avg, min, max;
};

static struct lg_summary lg_time_summary(const struct lg *lg)
{
	struct lg_summary s = { 0, 0, 0 };

	for (uint32_t i = 0; i < lg->done_iters; i++) {
		s.avg += lg->time_us[i];
		if (!i || lg->time_us[i] < s.min)
			s.min = lg->time_us[i];
		if (!i || lg->time_us[i] > s.max)
			s.max = lg->time_us[i];
	}
	if (lg->done_iters)
		s.avg /= lg->done_iters;
	return s;
}

/* GB/s (10^9 bytes, as nccl-tests) for size bytes in t microseconds. */
static double lg_gbps(const struct lg *lg, double t_us)
{
	return t_us > 0 ? (double)lg->size / (t_us * 1e3) : 0;
}

static void lg_print_head(const struct lg *lg)
{
	printf("# loadgen rank %d of %d: %s over %s, size %zu B (%zu B per transfer), "
	       "busbw = algbw x %.3f\n",
	       lg->o.rank, lg->o.ranks, lg_pattern_names[lg->o.pattern],
	       lg_transport_names[lg->o.transport], lg->size, lg->chunk, lg_bus_factor(&lg->o));
	printf("# %6s %12s %12s %12s %12s\n", "iter", "size", "time_us", "algbw_GBps",
	       "busbw_GBps");
}

static void lg_print_iter(const struct lg *lg, uint32_t i)
{
	double t = lg->time_us[i], alg = lg_gbps(lg, t);

	printf("  %6u %12zu %12.1f %12.3f %12.3f\n", i + 1, lg->size, t, alg,
	       alg * lg_bus_factor(&lg->o));
}

/* Averages follow nccl-tests: bandwidth at the mean time. Minima and maxima
 * are per column, so the minimum bandwidth is that of the slowest iteration. */
static void lg_print_summary(const struct lg *lg)
{
	struct lg_summary t = lg_time_summary(lg);
	double f = lg_bus_factor(&lg->o);
	const struct lg_stats *st = &lg->st;

	if (lg->done_iters < lg->o.iters)
		printf("# stopped at --duration %g s after %u of %u iterations\n", lg->o.duration_s,
		       lg->done_iters, lg->o.iters);
	if (lg->o.transport == LG_ROCE)
		printf("# roce: packets %llu retransmitted %llu naks_sent %llu naks_received %llu "
		       "duplicates %llu ce_received %llu cnps_sent %llu cnps_received %llu "
		       "dropped %llu\n",
		       (unsigned long long)st->pkts, (unsigned long long)st->retrans,
		       (unsigned long long)st->naks_tx, (unsigned long long)st->naks_rx,
		       (unsigned long long)st->dups, (unsigned long long)st->ce,
		       (unsigned long long)st->cnps_tx, (unsigned long long)st->cnps_rx,
		       (unsigned long long)st->drops);
	printf("# summary: iters %u time_us avg %.1f min %.1f max %.1f algbw_GBps avg %.3f min %.3f "
	       "max %.3f busbw_GBps avg %.3f min %.3f max %.3f\n",
	       lg->done_iters, t.avg, t.min, t.max, lg_gbps(lg, t.avg), lg_gbps(lg, t.max),
	       lg_gbps(lg, t.min), f * lg_gbps(lg, t.avg), f * lg_gbps(lg, t.max),
	       f * lg_gbps(lg, t.min));
}

static void lg_json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void lg_print_json(const struct lg *lg, int failed)
{
	struct lg_summary t = lg_time_summary(lg);
	double f = lg_bus_factor(&lg->o), alg;
	const struct lg_stats *st = &lg->st;

	printf("{\"rank\":%d,\"ranks\":%d,\"pattern\":\"%s\",\"transport\":\"%s\",\"size\":%zu,"
	       "\"transfer_size\":%zu,\"busbw_factor\":%.6f,\"iterations\":[",
	       lg->o.rank, lg->o.ranks, lg_pattern_names[lg->o.pattern],
	       lg_transport_names[lg->o.transport], lg->size, lg->chunk, f);
	for (uint32_t i = 0; i < lg->done_iters; i++) {
		alg = lg_gbps(lg, lg->time_us[i]);
		printf("%s\n{\"iter\":%u,\"time_us\":%.1f,\"algbw_GBps\":%.3f,\"busbw_GBps\":%.3f}",
		       i ? "," : "", i + 1, lg->time_us[i], alg, alg * f);
	}
	printf("],\n\"summary\":{\"iters\":%u,\"stopped_by_duration\":%s,"
	       "\"time_us\":{\"avg\":%.1f,\"min\":%.1f,\"max\":%.1f},"
	       "\"algbw_GBps\":{\"avg\":%.3f,\"min\":%.3f,\"max\":%.3f},"
	       "\"busbw_GBps\":{\"avg\":%.3f,\"min\":%.3f,\"max\":%.3f}}",
	       lg->done_iters, !failed && lg->done_iters < lg->o.iters ? "true" : "false", t.avg,
	       t.min, t.max, lg_gbps(lg, t.avg), lg_gbps(lg, t.max), lg_gbps(lg, t.min),
	       f * lg_gbps(lg, t.avg), f * lg_gbps(lg, t.max), f * lg_gbps(lg, t.min));
	if (lg->o.transport == LG_ROCE)
		printf(",\n\"roce\":{\"packets\":%llu,\"retransmitted\":%llu,\"naks_sent\":%llu,"
		       "\"naks_received\":%llu,\"duplicates\":%llu,\"ce_received\":%llu,"
		       "\"cnps_sent\":%llu,\"cnps_received\":%llu,\"dropped\":%llu}",
		       (unsigned long long)st->pkts, (unsigned long long)st->retrans,
		       (unsigned long long)st->naks_tx, (unsigned long long)st->naks_rx,
		       (unsigned long long)st->dups, (unsigned long long)st->ce,
		       (unsigned long long)st->cnps_tx, (unsigned long long)st->cnps_rx,
		       (unsigned long long)st->drops);
	if (failed) {
		printf(",\n\"error\":");
		lg_json_string(lg->err);
	}
	printf("}\n");
}

static int lg_run(struct lg *lg)
{
	int64_t ns;
	int err;

	if (!lg->o.json)
		lg_print_head(lg);
	for (lg->iter = 0;; lg->iter++) {
		err = lg_iteration(lg, &ns);
		if (err)
			return err;
		lg->time_us[lg->done_iters++] = (double)ns / 1e3;
		if (!lg->o.json)
			lg_print_iter(lg, lg->iter);
		if (lg->last)
			return 0;
	}
}

/* ---- command line ---- */

static void lg_usage(FILE *f)
{
	fprintf(f,
		"usage: loadgen --rank R --ranks N --peers ADDR,ADDR,... --pattern PATTERN\n"
		"               --transport tcp|roce --size BYTES --iters K [--duration SECONDS]\n"
		"               [--timeout SECONDS] [--port BASE] [--handoff-from R1 --handoff-to R2]\n"
		"               [--json]\n"
		"\n"
		"Runs one rank of a collective among N ranks (one loadgen per rank, ranks 0..N-1,\n"
		"rank r at the r-th address of --peers) and prints each iteration's time and\n"
		"bandwidth as nccl-tests does: algbw = size / time, busbw = algbw x factor.\n"
		"\n"
		"  --pattern ring-allreduce  2(N-1) ring steps of size/N each (reduce-scatter, then\n"
		"                            all-gather); busbw factor 2(N-1)/N\n"
		"            all-gather      N-1 ring steps of size/N; factor (N-1)/N\n"
		"            all-to-all      size/N to every other rank at once; factor (N-1)/N\n"
		"            handoff         the decode rank (--handoff-to, default 1) asks, the\n"
		"                            prefill rank (--handoff-from, default 0) answers with\n"
		"                            size bytes; factor 1; other ranks exit at once\n"
		"  --transport tcp           one connection per peer pair, on port BASE + rank\n"
		"              roce          UDP port 4791 carrying RoCEv2 (BTH, PSNs, ACK/NAK, CNP\n"
		"                            for CE-marked packets); one address per rank\n"
		"  --size BYTES              bytes per rank per iteration (suffix K, M or G: KiB...)\n"
		"  --iters K                 iterations (at most %u)\n"
		"  --duration SECONDS        start no iteration after this (rank 0, or the decode\n"
		"                            rank, decides for all); give up at duration + timeout\n"
		"                            (default %g)\n"
		"  --timeout SECONDS         give up on a peer that makes no progress for this long,\n"
		"                            or does not answer at start (default %g)\n"
		"  --port BASE               rank r uses TCP and UDP port BASE + r (default %d)\n"
		"  --json                    print one JSON object instead of the table\n"
		"Peers must be lab (198.18.0.0/15) or loopback addresses.\n"
		"Exit status: 0 done, 1 runtime failure (the reason on stderr), 2 usage error.\n",
		LG_MAX_ITERS, LG_DURATION_DEFAULT, LG_TIMEOUT_DEFAULT, LG_PORT_DEFAULT);
}

static int lg_parse_uint(const char *flag, const char *s, unsigned long long max,
			 unsigned long long *ret)
{
	unsigned long long v, mul = 1;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (end != s && *end && !end[1]) {
		if (*end == 'K')
			mul = 1ull << 10;
		else if (*end == 'M')
			mul = 1ull << 20;
		else if (*end == 'G')
			mul = 1ull << 30;
		end += mul > 1;
	}
	if (errno || end == s || *end || *s == '-' || v > max / mul)
		return labtool_usage_error("loadgen",
					   "%s: expected a whole number up to %llu, got '%s'", flag,
					   max, s);
	*ret = v * mul;
	return 0;
}

static int lg_parse_seconds(const char *flag, const char *s, double *ret)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0) || v > 86400)
		return labtool_usage_error(
			"loadgen", "%s: expected seconds (0 < s <= 86400), got '%s'", flag, s);
	*ret = v;
	return 0;
}

static int lg_parse_name(const char *flag, const char *s, const char *const *names, int n, int *ret)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s, names[i])) {
			*ret = i;
			return 0;
		}
	return labtool_usage_error("loadgen", "%s: unknown '%s'", flag, s);
}

/* Only the lab's benchmarking range and loopback: a load generator pointed
 * at a production network by mistake would flood it. */
static int lg_lab_addr(struct in_addr a)
{
	uint32_t h = ntohl(a.s_addr);

	return (h & 0xfffe0000u) == 0xc6120000u || (h >> 24) == 127;
}

static int lg_parse_peers(const char *s, struct lg_opts *o, int *ret_n)
{
	char buf[LG_MAX_RANKS * INET_ADDRSTRLEN], *save = NULL, *tok;
	int n = 0;

	if (strlen(s) >= sizeof(buf))
		return labtool_usage_error("loadgen", "--peers: too long (at most %d addresses)",
					   LG_MAX_RANKS);
	strcpy(buf, s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == LG_MAX_RANKS)
			return labtool_usage_error("loadgen", "--peers: at most %d addresses",
						   LG_MAX_RANKS);
		if (inet_pton(AF_INET, tok, &o->addr[n]) != 1)
			return labtool_usage_error("loadgen",
						   "--peers: '%s' is not an IPv4 address", tok);
		if (!lg_lab_addr(o->addr[n]))
			return labtool_usage_error(
				"loadgen", "--peers: %s is outside 198.18.0.0/15 and 127.0.0.0/8",
				tok);
		n++;
	}
	*ret_n = n;
	return 0;
}

/* Fills *o from argv. Returns 0, 1 after --help, or -EINVAL (said why). */
static int lg_parse(int argc, char **argv, struct lg_opts *o)
{
	enum {
		O_RANK = 256,
		O_RANKS,
		O_PEERS,
		O_PATTERN,
		O_TRANSPORT,
		O_SIZE,
		O_ITERS,
		O_DURATION,
		O_TIMEOUT,
		O_PORT,
		O_FROM,
		O_TO,
		O_JSON,
		O_HELP
	};
	static const struct option longopts[] = {
		{ "rank", required_argument, NULL, O_RANK },
		{ "ranks", required_argument, NULL, O_RANKS },
		{ "peers", required_argument, NULL, O_PEERS },
		{ "pattern", required_argument, NULL, O_PATTERN },
		{ "transport", required_argument, NULL, O_TRANSPORT },
		{ "size", required_argument, NULL, O_SIZE },
		{ "iters", required_argument, NULL, O_ITERS },
		{ "duration", required_argument, NULL, O_DURATION },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{ "port", required_argument, NULL, O_PORT },
		{ "handoff-from", required_argument, NULL, O_FROM },
		{ "handoff-to", required_argument, NULL, O_TO },
		{ "json", no_argument, NULL, O_JSON },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long v, rank = ULLONG_MAX, from = 0, to = 1;
	int c, err = 0, npeers = -1, pattern = -1, transport = -1, handoff_flags = 0;

	memset(o, 0, sizeof(*o));
	o->duration_s = LG_DURATION_DEFAULT;
	o->timeout_s = LG_TIMEOUT_DEFAULT;
	o->port = LG_PORT_DEFAULT;
	opterr = 0;
	while (!err && (c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case O_RANK:
			err = lg_parse_uint("--rank", optarg, LG_MAX_RANKS - 1, &rank);
			break;
		case O_RANKS:
			err = lg_parse_uint("--ranks", optarg, LG_MAX_RANKS, &v);
			o->ranks = (int)v;
			break;
		case O_PEERS:
			err = lg_parse_peers(optarg, o, &npeers);
			break;
		case O_PATTERN:
			err = lg_parse_name("--pattern", optarg, lg_pattern_names, 4, &pattern);
			break;
		case O_TRANSPORT:
			err = lg_parse_name("--transport", optarg, lg_transport_names, 2,
					    &transport);
			break;
		case O_SIZE:
			err = lg_parse_uint("--size", optarg, LG_MAX_SIZE, &v);
			o->size = v;
			break;
		case O_ITERS:
			err = lg_parse_uint("--iters", optarg, LG_MAX_ITERS, &v);
			o->iters = (uint32_t)v;
			break;
		case O_DURATION:
			err = lg_parse_seconds("--duration", optarg, &o->duration_s);
			break;
		case O_TIMEOUT:
			err = lg_parse_seconds("--timeout", optarg, &o->timeout_s);
			break;
		case O_PORT:
			err = lg_parse_uint("--port", optarg, 65535, &v);
			o->port = (unsigned)v;
			break;
		case O_FROM:
			err = lg_parse_uint("--handoff-from", optarg, LG_MAX_RANKS - 1, &from);
			handoff_flags = 1;
			break;
		case O_TO:
			err = lg_parse_uint("--handoff-to", optarg, LG_MAX_RANKS - 1, &to);
			handoff_flags = 1;
			break;
		case O_JSON:
			o->json = 1;
			break;
		case O_HELP:
			lg_usage(stdout);
			return 1;
		default:
			err = labtool_usage_error("loadgen", "unknown or incomplete option '%s'",
						  argv[optind - 1]);
		}
	}
	if (err)
		return err;
	if (optind < argc)
		return labtool_usage_error("loadgen", "unexpected argument '%s'", argv[optind]);
	if (rank == ULLONG_MAX || !o->ranks || npeers < 0 || pattern < 0 || transport < 0 ||
	    !o->size || !o->iters)
		return labtool_usage_error(
			"loadgen", "--rank, --ranks, --peers, --pattern, --transport, --size "
				   "and --iters are required");
	o->rank = (int)rank;
	o->pattern = (enum lg_pattern)pattern;
	o->transport = (enum lg_transport)transport;
	o->from = (int)from;
	o->to = (int)to;
	if (o->ranks < 2 || o->rank >= o->ranks)
		return labtool_usage_error("loadgen", "--ranks must be 2..%d and --rank below it",
					   LG_MAX_RANKS);
	if (npeers != o->ranks)
		return labtool_usage_error("loadgen", "--peers lists %d addresses for %d ranks",
					   npeers, o->ranks);
	if (o->port < 1024 || o->port + (unsigned)o->ranks - 1 > 65535)
		return labtool_usage_error("loadgen",
					   "--port: BASE + rank must stay within 1024..65535");
	if (o->pattern != LG_HANDOFF && handoff_flags)
		return labtool_usage_error(
			"loadgen", "--handoff-from and --handoff-to go with --pattern handoff");
	if (o->pattern == LG_HANDOFF &&
	    (o->from >= o->ranks || o->to >= o->ranks || o->from == o->to))
		return labtool_usage_error(
			"loadgen", "--handoff-from and --handoff-to must be two ranks below %d",
			o->ranks);
	if (o->size < (uint64_t)LG_HDR_LEN * (o->pattern == LG_HANDOFF ? 1 : (unsigned)o->ranks))
		return labtool_usage_error("loadgen", "--size: at least %d bytes per transfer",
					   LG_HDR_LEN);
	for (int i = 0; o->transport == LG_ROCE && i < o->ranks; i++)
		for (int j = 0; j < i; j++)
			if (o->addr[i].s_addr == o->addr[j].s_addr)
				return labtool_usage_error(
					"loadgen",
					"--transport roce needs one address per rank "
					"(each binds UDP port %d)",
					ROCE_UDP_PORT);
	return 0;
}

int main(int argc, char **argv)
{
	struct lg_opts opts;
	static struct lg lg;
	int err;

	err = lg_parse(argc, argv, &opts);
	if (err)
		return err > 0 ? 0 : 2;
	/* a peer that dies mid-send must be an error we report, not a signal */
	signal(SIGPIPE, SIG_IGN);
	/* one line per iteration, visible to whoever watches the run */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (opts.pattern == LG_HANDOFF && opts.rank != opts.from && opts.rank != opts.to) {
		if (opts.json)
			printf("{\"rank\":%d,\"ranks\":%d,\"pattern\":\"handoff\",\"idle\":true}\n",
			       opts.rank, opts.ranks);
		else
			printf("# loadgen rank %d takes no part in the hand-off from rank %d to rank "
			       "%d\n",
			       opts.rank, opts.from, opts.to);
		return 0;
	}
	err = lg_init(&lg, &opts);
	if (!err)
		err = lg_setup(&lg);
	if (!err)
		err = lg_run(&lg);
	if (err)
		lg_settle(&lg);
	if (lg.o.json)
		lg_print_json(&lg, err != 0);
	else if (!err)
		lg_print_summary(&lg);
	if (err)
		fprintf(stderr, "loadgen: rank %d: %s\n", lg.o.rank, lg.err);
	lg_release(&lg);
	return err ? 1 : 0;
}
