/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bpf/fabmon.h"
#include "collector/bpf/drop_reasons.h"
#include "suites.h"
#include "tcp.skel.h"
#include "testutil.h"

/*
 * The tracepoint probes (bpf/tcp.bpf.c) on real traffic. Raw tracepoints see
 * the whole host, so each test runs its traffic in a private network
 * namespace (gone with the forked test, pass or fail) and looks only at its
 * own connections, whose keys carry that namespace. Drops are counted
 * host-wide by reason: those tests assert a lower bound.
 */

#define STREAM_BYTES (1 << 20)
#define WAIT_MS 5000 /* for what the kernel does on its own: RTO, softirq delivery */
#define POLL_MS 20

struct tcp_rig {
	struct tcp_bpf *skel;
	struct bpf_link *links[4];
};

/* Both ends of one TCP connection over loopback, and the probes' key for each end. */
struct tcp_pair {
	int client, server;
	struct fm_tcp_key client_key, server_key;
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	/* bpf_ktime_get_ns() is CLOCK_MONOTONIC */
	ck_assert_int_eq(clock_gettime(CLOCK_MONOTONIC, &ts), 0);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void rig_attach(struct tcp_rig *rig, unsigned i, struct bpf_program *prog, const char *tp)
{
	rig->links[i] = bpf_program__attach_raw_tracepoint(prog, tp);
	ck_assert_msg(rig->links[i], "unable to attach '%s' to raw tracepoint '%s': %s",
		      bpf_program__name(prog), tp, strerror(errno));
}

/*
 * Enters a private network namespace with lo up, loads the probes and
 * attaches them as the collector does, tcp_probe through BTF (tp_btf) when
 * btf, else the raw tracepoint. Returns 0, or -errno after saying why the
 * test skips.
 */
static int rig_up_filtered(struct tcp_rig *rig, const char *test, int btf, int netns_filter)
{
	int r = testutil_netns_enter(0, test);

	if (r < 0)
		return r;
	ck_assert_msg(system("ip link set lo up") == 0, "unable to bring lo up");
	rig->skel = tcp_bpf__open();
	ck_assert_msg(rig->skel, "unable to open the tcp probes: %s", strerror(errno));
	rig->skel->rodata->fm_netns_filter = netns_filter;
	ck_assert_msg(tcp_bpf__load(rig->skel) == 0, "unable to load the tcp probes: %s",
		      strerror(errno));
	rig_attach(rig, 0, rig->skel->progs.fabmon_tcp_retransmit, "tcp_retransmit_skb");
	if (btf) {
		rig->links[1] = bpf_program__attach(rig->skel->progs.fabmon_tcp_probe_btf);
		ck_assert_msg(rig->links[1], "unable to attach tp_btf/tcp_probe: %s",
			      strerror(errno));
	} else {
		rig_attach(rig, 1, rig->skel->progs.fabmon_tcp_probe, "tcp_probe");
	}
	rig_attach(rig, 2, rig->skel->progs.fabmon_kfree_skb, "kfree_skb");
	rig_attach(rig, 3, rig->skel->progs.fabmon_tcp_state, "inet_sock_set_state");
	return 0;
}

static int rig_up_as(struct tcp_rig *rig, const char *test, int btf)
{
	return rig_up_filtered(rig, test, btf, 0);
}

static int rig_up(struct tcp_rig *rig, const char *test)
{
	return rig_up_as(rig, test, 0);
}

static void rig_down(struct tcp_rig *rig)
{
	for (unsigned i = 0; i < sizeof(rig->links) / sizeof(rig->links[0]); i++)
		ck_assert_int_eq(bpf_link__destroy(rig->links[i]), 0);
	tcp_bpf__destroy(rig->skel);
}

/* The probes' key for socket fd: its local address and port, then the peer's. */
static void tcp_key_of(int fd, struct fm_tcp_key *key)
{
	struct sockaddr_storage local, peer;
	socklen_t llen = sizeof(local), plen = sizeof(peer);
	struct stat ns;

	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&local, &llen), 0);
	ck_assert_int_eq(getpeername(fd, (struct sockaddr *)&peer, &plen), 0);
	ck_assert_int_eq(stat("/proc/self/ns/net", &ns), 0);
	memset(key, 0, sizeof(*key));
	key->netns = (__u32)ns.st_ino;
	if (local.ss_family == AF_INET) {
		const struct sockaddr_in *l = (void *)&local, *p = (void *)&peer;

		memcpy(key->saddr, &l->sin_addr, sizeof(l->sin_addr));
		memcpy(key->daddr, &p->sin_addr, sizeof(p->sin_addr));
		key->sport = ntohs(l->sin_port);
		key->dport = ntohs(p->sin_port);
		key->family = FM_FAMILY_IPV4;
	} else {
		const struct sockaddr_in6 *l = (void *)&local, *p = (void *)&peer;

		memcpy(key->saddr, &l->sin6_addr, sizeof(l->sin6_addr));
		memcpy(key->daddr, &p->sin6_addr, sizeof(p->sin6_addr));
		key->sport = ntohs(l->sin6_port);
		key->dport = ntohs(p->sin6_port);
		key->family = FM_FAMILY_IPV6;
	}
}

/* Connects a client to a listener on loopback (127.0.0.1 or ::1) in this process. */
static void tcp_pair_open(struct tcp_pair *p, int family)
{
	struct sockaddr_storage addr = { .ss_family = family };
	socklen_t len =
		family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	int lfd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(lfd, 0);
	if (family == AF_INET)
		((struct sockaddr_in *)&addr)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else
		((struct sockaddr_in6 *)&addr)->sin6_addr = in6addr_loopback;
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&addr, len), 0);
	ck_assert_int_eq(listen(lfd, 1), 0);
	ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&addr, &len), 0);
	p->client = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(p->client, 0);
	ck_assert_int_eq(connect(p->client, (struct sockaddr *)&addr, len), 0);
	p->server = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	ck_assert_int_ge(p->server, 0);
	close(lfd);
	tcp_key_of(p->client, &p->client_key);
	tcp_key_of(p->server, &p->server_key);
}

static void tcp_pair_close(struct tcp_pair *p)
{
	close(p->client);
	close(p->server);
}

/* Sends n bytes from client to server and reads them there, without blocking on either. */
static void tcp_pair_pump(struct tcp_pair *p, size_t n)
{
	static char buf[65536];
	size_t sent = 0, got = 0;

	while (got < n) {
		struct pollfd fds[2] = { { .fd = p->client, .events = sent < n ? POLLOUT : 0 },
					 { .fd = p->server, .events = POLLIN } };
		ssize_t r;

		ck_assert_msg(poll(fds, 2, WAIT_MS) > 0, "stream stuck at %zu of %zu bytes", got,
			      n);
		if (fds[0].revents & POLLOUT) {
			r = send(p->client, buf, n - sent < sizeof(buf) ? n - sent : sizeof(buf),
				 MSG_DONTWAIT);
			ck_assert_msg(r > 0 || errno == EAGAIN, "send: %s", strerror(errno));
			sent += r > 0 ? (size_t)r : 0;
		}
		if (fds[1].revents & POLLIN) {
			r = recv(p->server, buf, sizeof(buf), MSG_DONTWAIT);
			ck_assert_msg(r > 0 || (r < 0 && errno == EAGAIN), "recv: %zd, %s", r,
				      strerror(errno));
			got += r > 0 ? (size_t)r : 0;
		}
	}
}

/* Returns 1 and the entry for key in *ret, or 0 if the map has none. */
static int tcp_entry(const struct tcp_rig *rig, const struct fm_tcp_key *key,
		     struct fm_tcp_val *ret)
{
	return bpf_map__lookup_elem(rig->skel->maps.fm_tcp, key, sizeof(*key), ret, sizeof(*ret),
				    0) == 0;
}

/* fm_drops[reason], summed over the CPUs. */
static uint64_t drops_of(const struct tcp_rig *rig, unsigned reason)
{
	int ncpus = libbpf_num_possible_cpus();
	uint64_t *per_cpu, sum = 0;

	ck_assert_int_gt(ncpus, 0);
	per_cpu = calloc((size_t)ncpus, sizeof(*per_cpu));
	ck_assert_ptr_nonnull(per_cpu);
	ck_assert_int_eq(bpf_map__lookup_elem(rig->skel->maps.fm_drops, &reason, sizeof(reason),
					      per_cpu, (size_t)ncpus * sizeof(*per_cpu), 0),
			 0);
	for (int i = 0; i < ncpus; i++)
		sum += per_cpu[i];
	free(per_cpu);
	return sum;
}

/*
 * A clean 1 MB stream, then a short request and its answer. Each end has an
 * entry of its own, keyed from its side. The receiver's ack progress stays
 * where it was first seen, as it sent nothing. The sender's shows RTT, window
 * and ack progress, nothing retransmitted, no wait for acks, and nothing in flight once the
 * answer acked the request: an idle connection must not look stalled.
 */
static void check_stream(int family, const char *test, int btf)
{
	struct fm_tcp_val client, server;
	struct tcp_rig rig = { 0 };
	char request[100] = { 0 };
	int off = 0;
	struct tcp_pair p;
	int64_t start;
	char c = 'k';

	if (rig_up_as(&rig, test, btf) < 0)
		return;
	start = mono_ns();
	tcp_pair_open(&p, family);
	tcp_pair_pump(&p, STREAM_BYTES);

	ck_assert_msg(tcp_entry(&rig, &p.server_key, &server), "no fm_tcp entry for the receiver");
	ck_assert_uint_gt(server.probes, 1);
	ck_assert_uint_eq(server.in_flight, 0);
	ck_assert_int_ge((int64_t)server.progress_ns, start);
	ck_assert_uint_lt(server.progress_ns, server.last_ns);

	/*
	 * With delayed ACKs the answer carries the ACK of the request, and
	 * tcp_probe fires before that ACK is processed: the probe must apply it.
	 */
	ck_assert_int_eq(setsockopt(p.server, IPPROTO_TCP, TCP_QUICKACK, &off, sizeof(off)), 0);
	ck_assert_int_eq(send(p.client, request, sizeof(request), 0), (ssize_t)sizeof(request));
	ck_assert_int_eq(recv(p.server, request, sizeof(request), MSG_WAITALL),
			 (ssize_t)sizeof(request));
	ck_assert_int_eq(send(p.server, &c, 1, 0), 1);
	ck_assert_int_eq(recv(p.client, &c, 1, 0), 1);

	ck_assert_msg(tcp_entry(&rig, &p.client_key, &client), "no fm_tcp entry for the sender");
	ck_assert_uint_gt(client.probes, 0);
	ck_assert_uint_gt(client.srtt_us, 0);
	ck_assert_uint_gt(client.snd_cwnd, 0);
	ck_assert_int_ge((int64_t)client.progress_ns, start);
	ck_assert_uint_ge(client.last_ns, client.progress_ns);
	ck_assert_int_le((int64_t)client.last_ns, mono_ns());
	ck_assert_uint_eq(client.in_flight, 0);
	ck_assert_uint_eq(client.retransmits, 0);
	ck_assert_uint_eq(client.resumed_ns, 0);
	/* the stream was timed as bulk transfers; the request was too small */
	ck_assert_uint_ge(client.xfers, 1);
	ck_assert_uint_gt(client.xfer_ns, 0);
	ck_assert_uint_eq(client.xfer_start_ns, 0);
	/* busy periods: the transfers' and the request's; each from its first
	 * segment's send time, so within the test */
	ck_assert_uint_ge(client.busy_ns, client.xfer_ns);
	ck_assert_int_le((int64_t)client.busy_ns, mono_ns() - start);
	{
		uint64_t in_buckets = 0;

		for (unsigned b = 0; b < FM_XFER_BUCKETS; b++)
			in_buckets += client.xfer_hist[b];
		ck_assert_uint_eq(in_buckets, client.xfers);
	}
	ck_assert_uint_gt(client.delivery_rate, 0);
	/* closing connections are marked so, with nothing pending: no stall */
	tcp_pair_close(&p);
	usleep(200000);
	ck_assert_msg(tcp_entry(&rig, &p.client_key, &client), "closed sender left fm_tcp early");
	ck_assert_uint_eq(client.closed, 1);
	ck_assert_uint_eq(client.in_flight + client.unsent, 0);
	ck_assert_msg(tcp_entry(&rig, &p.server_key, &server), "closed receiver left fm_tcp early");
	ck_assert_uint_eq(server.closed, 1);
	rig_down(&rig);
}

/* bpf_netns: with the filter on, a namespace not in fm_netns is not
 * counted; once its inode number is there, it is. */
START_TEST(test_netns_filter)
{
	struct tcp_rig rig = { 0 };
	struct fm_tcp_val v;
	struct tcp_pair p;
	const __u8 one = 1;
	__u32 inum;

	if (rig_up_filtered(&rig, "bpf_tcp netns_filter", 1, 1) < 0)
		return;
	tcp_pair_open(&p, AF_INET);
	tcp_pair_pump(&p, STREAM_BYTES);
	ck_assert_msg(!tcp_entry(&rig, &p.client_key, &v), "a namespace not asked for counted");
	tcp_pair_close(&p);
	inum = p.client_key.netns;
	ck_assert_int_eq(bpf_map__update_elem(rig.skel->maps.fm_netns, &inum, sizeof(inum), &one,
					      sizeof(one), BPF_ANY),
			 0);
	tcp_pair_open(&p, AF_INET);
	tcp_pair_pump(&p, STREAM_BYTES);
	ck_assert_msg(tcp_entry(&rig, &p.client_key, &v), "an allowed namespace not counted");
	ck_assert_uint_gt(v.probes, 0);
	tcp_pair_close(&p);
	rig_down(&rig);
}
END_TEST

START_TEST(test_stream_ipv4)
{
	check_stream(AF_INET, "bpf_tcp stream_ipv4", 0);
}
END_TEST

START_TEST(test_stream_ipv6)
{
	check_stream(AF_INET6, "bpf_tcp stream_ipv6", 0);
}
END_TEST

/* The same through the BTF-typed tcp_probe the collector prefers. */
START_TEST(test_stream_ipv4_btf)
{
	check_stream(AF_INET, "bpf_tcp stream_ipv4_btf", 1);
}
END_TEST

START_TEST(test_stream_ipv6_btf)
{
	check_stream(AF_INET6, "bpf_tcp stream_ipv6_btf", 1);
}
END_TEST

/*
 * Makes lo able to drop what it sends from chosen ports (lo_drop_from()):
 * htb sends those to a class whose pfifo holds nothing (this kernel has no
 * netem or gact), and everything else to a class that passes it.
 */
static void lo_drop_setup(void)
{
	const char *cmd =
		"set -e; exec >/dev/null; "
		"tc qdisc add dev lo root handle 1: htb default 1; "
		"tc class add dev lo parent 1: classid 1:1 htb rate 10gbit quantum 65536; "
		"tc class add dev lo parent 1: classid 1:2 htb rate 10gbit quantum 65536; "
		"tc qdisc add dev lo parent 1:2 handle 2: pfifo limit 0";

	ck_assert_msg(system(cmd) == 0, "unable to set up drops on lo (tc htb, pfifo): %s", cmd);
}

/* From now on lo drops every IPv4 packet it sends from port. */
static void lo_drop_from(unsigned port)
{
	char cmd[256];

	snprintf(
		cmd, sizeof(cmd),
		"tc filter add dev lo parent 1: protocol ip u32 match ip sport %u 0xffff flowid 1:2",
		port);
	ck_assert_msg(system(cmd) == 0, "unable to drop lo's packets from port %u (tc u32): %s",
		      port, cmd);
}

/*
 * Waits until key's entry changed after since, when the peer went silent: no
 * segment arrives from it any more, so that is the retransmit probe at work.
 */
static void wait_retransmit_seen(const struct tcp_rig *rig, const struct fm_tcp_key *key,
				 int64_t since, struct fm_tcp_val *ret)
{
	int64_t deadline = mono_ns() + WAIT_MS * 1000000LL;
	int found;

	for (;;) {
		found = tcp_entry(rig, key, ret) && (int64_t)ret->last_ns > since;
		if (found || mono_ns() >= deadline)
			break;
		usleep(POLL_MS * 1000);
	}
	ck_assert_msg(found, "no retransmit attempt seen in %d ms", WAIT_MS);
}

/*
 * Opens p over IPv4 and moves len bytes, then makes the receiver silent (lo
 * drops what it sends) and sends len more from buf: returns when it went
 * silent.
 */
static int64_t tcp_pair_silence(struct tcp_pair *p, const char *buf, size_t len)
{
	int64_t silent;

	tcp_pair_open(p, AF_INET);
	tcp_pair_pump(p, len);
	lo_drop_setup();
	lo_drop_from(p->server_key.sport);
	silent = mono_ns();
	ck_assert_int_gt(send(p->client, buf, len, MSG_DONTWAIT), 0);
	return silent;
}

/*
 * The peer goes silent mid-stream (its ACKs are dropped): the sender's
 * retransmits count, and its entry shows data in flight with ack progress
 * frozen since the peer went silent, which is what a stall looks like.
 */
START_TEST(test_retransmit)
{
	struct fm_tcp_val val;
	struct tcp_rig rig = { 0 };
	static char buf[65536];
	struct tcp_pair p;
	int64_t silent;

	if (rig_up(&rig, "bpf_tcp retransmit") < 0)
		return;
	silent = tcp_pair_silence(&p, buf, sizeof(buf));

	wait_retransmit_seen(&rig, &p.client_key, silent, &val);
	ck_assert_uint_gt(val.retransmits, 0);
	ck_assert_uint_gt(val.in_flight, 0);
	ck_assert_msg((int64_t)val.progress_ns < silent, "ack progress at %lld, after %lld",
		      (long long)val.progress_ns, (long long)silent);
	tcp_pair_close(&p);
	rig_down(&rig);
}
END_TEST

/*
 * The peer goes silent mid-stream and comes back: the ACK that ends the
 * sender's wait, data in flight all along, marks when ack progress resumed
 * (resumed_ns), which the collector's proof of a reader that stopped counts
 * from. A wait still under way marks none (nor does a clean stream:
 * check_stream()).
 */
START_TEST(test_ack_resumed)
{
	struct fm_tcp_val val;
	struct tcp_rig rig = { 0 };
	static char buf[65536];
	struct tcp_pair p;
	int64_t silent, deadline;

	if (rig_up(&rig, "bpf_tcp ack_resumed") < 0)
		return;
	silent = tcp_pair_silence(&p, buf, sizeof(buf));
	wait_retransmit_seen(&rig, &p.client_key, silent, &val);
	ck_assert_uint_eq(val.resumed_ns, 0);
	/* a loss probe goes out within milliseconds: the wait must be long */
	while (mono_ns() < silent + 2 * (int64_t)FM_ACK_WAIT_NS)
		usleep(POLL_MS * 1000);

	/* the peer is back: the next retransmission is acked */
	ck_assert_int_eq(system("tc filter del dev lo parent 1:"), 0);
	deadline = mono_ns() + WAIT_MS * 1000000LL;
	while (tcp_entry(&rig, &p.client_key, &val) && (int64_t)val.progress_ns < silent &&
	       mono_ns() < deadline)
		usleep(POLL_MS * 1000);
	ck_assert_msg((int64_t)val.progress_ns >= silent, "no ack progress in %d ms after the drop",
		      WAIT_MS);
	ck_assert_int_ge((int64_t)val.resumed_ns, silent + (int64_t)FM_ACK_WAIT_NS);
	ck_assert_uint_le(val.resumed_ns, val.progress_ns);
	tcp_pair_close(&p);
	rig_down(&rig);
}
END_TEST

/* True if the kernel's tcp_retransmit_skb event reports err, and so fires on failures too. */
static int retransmit_has_err(void)
{
	struct btf *btf = btf__load_vmlinux_btf();
	const struct btf_member *m;
	const struct btf_type *t;
	int id, found = 0;

	ck_assert_ptr_nonnull(btf);
	id = btf__find_by_name_kind(btf, "trace_event_raw_tcp_retransmit_skb", BTF_KIND_STRUCT);
	ck_assert_int_gt(id, 0);
	t = btf__type_by_id(btf, id);
	m = btf_members(t);
	for (unsigned i = 0; i < btf_vlen(t); i++)
		found |= strcmp(btf__name_by_offset(btf, m[i].name_off), "err") == 0;
	btf__free(btf);
	return found;
}

/*
 * The peer goes silent, then the sender's own packets are dropped on their
 * way out, so its retransmits fail: they are not counted (as on kernels that
 * report only those that went out), but the attempts still show the data in
 * flight. The first RTO is pushed to 1 s and tail loss probes are off, so no
 * retransmit gets out before the second drop is in place.
 */
START_TEST(test_retransmit_failed)
{
	struct fm_tcp_val val;
	struct tcp_rig rig = { 0 };
	static char buf[65536];
	struct tcp_pair p;
	int64_t silent;

	if (!retransmit_has_err()) {
		testutil_skip(
			"bpf_tcp retransmit_failed",
			"this kernel's tcp_retransmit_skb fires only for retransmits that went out");
		return;
	}
	if (rig_up(&rig, "bpf_tcp retransmit_failed") < 0)
		return;
	ck_assert_int_eq(system("sysctl -qw net.ipv4.tcp_early_retrans=0 "
				"net.ipv4.tcp_rto_min_us=1000000"),
			 0);
	silent = tcp_pair_silence(&p, buf, sizeof(buf));
	lo_drop_from(p.client_key.sport);

	wait_retransmit_seen(&rig, &p.client_key, silent, &val);
	ck_assert_uint_eq(val.retransmits, 0);
	ck_assert_uint_gt(val.in_flight, 0);
	tcp_pair_close(&p);
	rig_down(&rig);
}
END_TEST

/*
 * UDP datagrams to a closed port of 127.0.0.1 are freed as drops with reason
 * NO_SOCKET; its slot grows by at least that many (the count is host-wide).
 */
START_TEST(test_drops_no_socket)
{
	struct sockaddr_in to = { .sin_family = AF_INET };
	struct drop_reasons *reasons = NULL;
	socklen_t len = sizeof(to);
	struct tcp_rig rig = { 0 };
	const unsigned sent = 16;
	uint64_t before, after;
	int64_t deadline;
	unsigned reason;
	int fd;

	if (rig_up(&rig, "bpf_tcp drops_no_socket") < 0)
		return;
	ck_assert_int_eq(drop_reasons_load(&reasons), 0);
	ck_assert_int_eq(drop_reasons_value(reasons, "NO_SOCKET", &reason), 0);
	ck_assert_uint_lt(reason, FM_DROP_REASONS - 1);

	/* a port that was just free and is closed again: nothing listens there */
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&to, sizeof(to)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&to, &len), 0);
	close(fd);

	before = drops_of(&rig, reason);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	for (unsigned i = 0; i < sent; i++)
		ck_assert_int_eq(sendto(fd, "x", 1, 0, (struct sockaddr *)&to, sizeof(to)), 1);
	close(fd);
	/* delivery on lo is a softirq away from sendto() */
	deadline = mono_ns() + WAIT_MS * 1000000LL;
	while ((after = drops_of(&rig, reason)) < before + sent && mono_ns() < deadline)
		usleep(POLL_MS * 1000);
	ck_assert_msg(after >= before + sent, "NO_SOCKET (%u) drops: %llu -> %llu after %u sent",
		      reason, (unsigned long long)before, (unsigned long long)after, sent);
	drop_reasons_free(reasons);
	rig_down(&rig);
}
END_TEST

Suite *bpf_tcp_suite(void)
{
	const struct testutil_case cases[] = {
		{ "stream_ipv4", test_stream_ipv4, 10 },
		{ "stream_ipv6", test_stream_ipv6, 10 },
		{ "stream_ipv4_btf", test_stream_ipv4_btf, 10 },
		{ "stream_ipv6_btf", test_stream_ipv6_btf, 10 },
		{ "netns_filter", test_netns_filter, 10 },
		{ "retransmit", test_retransmit, 15 },
		{ "retransmit_failed", test_retransmit_failed, 15 },
		{ "ack_resumed", test_ack_resumed, 15 },
		{ "drops_no_socket", test_drops_no_socket, 10 },
	};

	return TESTUTIL_SUITE("bpf_tcp", cases);
}

/* An enum skb_drop_reason of our own, out of order, next to a decoy enum. */
static struct btf *fake_btf(void)
{
	struct btf *btf = btf__new_empty();

	ck_assert_ptr_nonnull(btf);
	ck_assert_int_gt(btf__add_enum(btf, "other_reason", 4), 0);
	ck_assert_int_eq(btf__add_enum_value(btf, "SKB_DROP_REASON_DECOY", 4), 0);
	ck_assert_int_gt(btf__add_enum(btf, "skb_drop_reason", 4), 0);
	ck_assert_int_eq(btf__add_enum_value(btf, "SKB_DROP_REASON_QDISC_DROP", 40), 0);
	ck_assert_int_eq(btf__add_enum_value(btf, "SKB_DROP_REASON_NO_SOCKET", 3), 0);
	ck_assert_int_eq(btf__add_enum_value(btf, "SKB_NOT_DROPPED_YET", 0), 0);
	ck_assert_int_eq(btf__add_enum_value(btf, "SKB_CONSUMED", 1), 0);
	ck_assert_int_eq(btf__add_enum_value(btf, "SKB_DROP_REASON_NOT_SPECIFIED", 2), 0);
	return btf;
}

/* Names both ways, prefixes stripped, only from enum skb_drop_reason. */
START_TEST(test_reasons_fake_btf)
{
	struct drop_reasons *reasons = NULL;
	struct btf *btf = fake_btf();
	unsigned value = 999;

	ck_assert_int_eq(drop_reasons_from_btf(btf, &reasons), 0);
	btf__free(btf);
	ck_assert_str_eq(drop_reasons_name(reasons, 0), "NOT_DROPPED_YET");
	ck_assert_str_eq(drop_reasons_name(reasons, 1), "CONSUMED");
	ck_assert_str_eq(drop_reasons_name(reasons, 2), "NOT_SPECIFIED");
	ck_assert_str_eq(drop_reasons_name(reasons, 3), "NO_SOCKET");
	ck_assert_str_eq(drop_reasons_name(reasons, 40), "QDISC_DROP");
	ck_assert_ptr_null(drop_reasons_name(reasons, 4));
	ck_assert_ptr_null(drop_reasons_name(reasons, 41));
	ck_assert_int_eq(drop_reasons_value(reasons, "QDISC_DROP", &value), 0);
	ck_assert_uint_eq(value, 40);
	ck_assert_int_eq(drop_reasons_value(reasons, "DECOY", &value), -ENOENT);
	ck_assert_int_eq(drop_reasons_value(reasons, "SKB_DROP_REASON_NO_SOCKET", &value), -ENOENT);
	ck_assert_uint_eq(value, 40);
	drop_reasons_free(reasons);
	drop_reasons_free(NULL);
}
END_TEST

/* A BTF without the enum (a kernel before 5.17) says so and returns nothing. */
START_TEST(test_reasons_no_enum)
{
	struct drop_reasons *reasons = NULL;
	struct btf *btf = btf__new_empty();

	ck_assert_ptr_nonnull(btf);
	ck_assert_int_gt(btf__add_enum(btf, "other_reason", 4), 0);
	ck_assert_int_eq(btf__add_enum_value(btf, "SKB_DROP_REASON_NO_SOCKET", 3), 0);
	ck_assert_int_eq(drop_reasons_from_btf(btf, &reasons), -ENOENT);
	ck_assert_ptr_null(reasons);
	btf__free(btf);
}
END_TEST

/* The running kernel's reasons: the common ones are there, every prefix stripped. */
START_TEST(test_reasons_kernel)
{
	struct drop_reasons *reasons = NULL;
	unsigned value, named = 0;

	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		testutil_skip("drop_reasons kernel", "no readable /sys/kernel/btf/vmlinux");
		return;
	}
	ck_assert_int_eq(drop_reasons_load(&reasons), 0);
	ck_assert_int_eq(drop_reasons_value(reasons, "NOT_SPECIFIED", &value), 0);
	ck_assert_str_eq(drop_reasons_name(reasons, value), "NOT_SPECIFIED");
	ck_assert_int_eq(drop_reasons_value(reasons, "NO_SOCKET", &value), 0);
	ck_assert_str_eq(drop_reasons_name(reasons, value), "NO_SOCKET");
	for (unsigned v = 0; v < FM_DROP_REASONS; v++) {
		const char *name = drop_reasons_name(reasons, v);

		if (!name)
			continue;
		named++;
		/* SKB_ alone may stay: SKB_DROP_REASON_SKB_CSUM is "SKB_CSUM" */
		ck_assert_msg(strncmp(name, "SKB_DROP_REASON_", 16) != 0 &&
				      strcmp(name, "SKB_NOT_DROPPED_YET") != 0 &&
				      strcmp(name, "SKB_CONSUMED") != 0,
			      "%u: %s", v, name);
	}
	ck_assert_uint_gt(named, 2);
	drop_reasons_free(reasons);
}
END_TEST

Suite *bpf_drop_reasons_suite(void)
{
	const struct testutil_case cases[] = {
		{ "fake_btf", test_reasons_fake_btf, 0 },
		{ "no_enum", test_reasons_no_enum, 0 },
		{ "kernel", test_reasons_kernel, 0 },
	};

	return TESTUTIL_SUITE("bpf_drop_reasons", cases);
}
