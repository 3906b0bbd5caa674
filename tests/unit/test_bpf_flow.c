/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <check.h>
#include <errno.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <net/if.h>
#include <netinet/in.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bpf/fabmon.h"
#include "collector/bpf/tc.h"
#include "flow.skel.h"
#include "suites.h"
#include "testutil.h"

/*
 * The tc probe (bpf/flow.bpf.c) on hand-built frames run with
 * bpf_prog_test_run_opts(), and its attachment manager (collector/bpf/tc.c)
 * on veth pairs. Every test makes a private network namespace (Check forks
 * each test: the namespace and all it holds vanish with the test process)
 * and loads its own copy of the probe, so map contents are this test's
 * alone. Addresses are from the benchmarking ranges, 198.18.0.0/15 and
 * 2001:2::/48.
 */

/* room for a READ response of IBTA's largest PMTU, 4096 bytes, and its headers */
#define FRAME_MAX 4352

static const __u8 mac_dst[6] = { 0x02, 0x00, 0xc6, 0x12, 0x00, 0x02 };
static const __u8 mac_src[6] = { 0x02, 0x00, 0xc6, 0x12, 0x00, 0x01 };
static const __u8 v4_src[4] = { 198, 18, 0, 1 };
static const __u8 v4_dst[4] = { 198, 18, 0, 2 };
static const __u8 v6_src[16] = { 0x20, 0x01, 0x00, 0x02, [15] = 1 };
static const __u8 v6_dst[16] = { 0x20, 0x01, 0x00, 0x02, [15] = 2 };

/* RFC 3168 ECN codepoints */
#define ECT1 0x1
#define ECT0 0x2
#define CE 0x3
/* RFC 9293 TCP flags */
#define TH_FIN 0x01
#define TH_SYN 0x02
#define TH_RST 0x04
#define TH_ACK 0x10
/* IPv4 frag_off (RFC 791) and IPv6 fragment header offset field (RFC 8200 4.5) */
#define V4_FIRST_FRAG 0x2000 /* MF, offset 0 */
#define V4_LATER_FRAG 185 /* offset 1480 bytes, last */
#define V6_FIRST_FRAG 0x0001 /* M, offset 0 */
#define V6_LATER_FRAG (185 << 3)
/* IPv6 next-header values (IANA) */
#define NH_HOP 0
#define NH_ROUTING 43
#define NH_FRAGMENT 44
#define NH_DEST 60

/* IBTA vol 1, 9.2.1 table 38 */
#define OP_RC_SEND_ONLY 0x04
#define OP_RC_WRITE_ONLY 0x0a
#define OP_RC_READ_REQUEST 0x0c
#define OP_RC_READ_RESPONSE_FIRST 0x0d
#define OP_RC_READ_RESPONSE_MIDDLE 0x0e
#define OP_RC_READ_RESPONSE_LAST 0x0f
#define OP_RC_READ_RESPONSE_ONLY 0x10
#define OP_RC_ACK 0x11
/* IBTA 9.3.5 table 44: AETH syndromes */
#define SYN_ACK 0x0a /* ACK, credit count 10 */
#define SYN_RNR_NAK 0x2e /* RNR NAK, timer 14 */
#define SYN_NAK_PSN 0x60 /* NAK: PSN sequence error */
#define SYN_NAK_INVALID 0x61 /* NAK: invalid request */
#define SYN_NAK_ACCESS 0x62 /* NAK: remote access error */
#define SYN_NAK_OPERATION 0x63 /* NAK: remote operational error */
#define SYN_NAK_RESERVED 0x7f /* NAK with a reserved code */
#define NO_AETH (-1)
#define CUT_AETH (-2) /* the opcode has an AETH, the packet does not */
#define ROCE_SPORT 49152 /* RoCEv2 senders pick the UDP source port per QP */

/*
 * A frame to build. family 0 is no IP: ethertype and payload follow the
 * Ethernet header; raw, when set, is the whole frame.
 */
struct pkt {
	int family; /* FM_FAMILY_IPV4, FM_FAMILY_IPV6 or 0 */
	int reverse; /* from the destination address to the source one */
	__u8 proto; /* IPPROTO_TCP, IPPROTO_UDP, or another for unparsed cases */
	__u16 sport, dport;
	__u8 ecn;
	__u8 tcp_flags;
	int vlans; /* tags in front of IP: 802.1ad outer, then 802.1Q */
	int ip_opts; /* IPv4 header words beyond 5 (-1 for a bad IHL of 4) */
	__u16 frag; /* IPv4 frag_off, or the IPv6 fragment header's field */
	const __u8 *v6_ext; /* IPv6 extension headers, by next-header value */
	size_t n_v6_ext;
	__u16 ethertype; /* family 0 */
	const __u8 *payload; /* after the transport header */
	size_t payload_len;
	size_t cut; /* if set, the frame ends after this many bytes */
	const __u8 *raw;
	size_t raw_len;
};

struct frame {
	__u8 b[FRAME_MAX];
	size_t len;
};

/* Appends n bytes, copies of src or zeros, and returns where they went. */
static __u8 *put(struct frame *f, const void *src, size_t n)
{
	__u8 *at = f->b + f->len;

	ck_assert_uint_le(f->len + n, sizeof(f->b));
	if (src)
		memcpy(at, src, n);
	else
		memset(at, 0, n);
	f->len += n;
	return at;
}

static void wr16(__u8 *at, unsigned v)
{
	at[0] = v >> 8;
	at[1] = v & 0xff;
}

static __u8 *put_ipv4(struct frame *f, const struct pkt *p)
{
	int words = 5 + p->ip_opts;
	__u8 *ip = put(f, NULL, 20 + 4 * (p->ip_opts > 0 ? p->ip_opts : 0));

	ip[0] = 0x40 | words;
	ip[1] = p->ecn;
	wr16(ip + 6, p->frag);
	ip[8] = 64;
	ip[9] = p->proto;
	memcpy(ip + 12, p->reverse ? v4_dst : v4_src, 4);
	memcpy(ip + 16, p->reverse ? v4_src : v4_dst, 4);
	if (p->ip_opts > 0)
		memset(ip + 20, 1, 4 * p->ip_opts); /* NOP options */
	return ip;
}

static __u8 *put_ipv6(struct frame *f, const struct pkt *p)
{
	__u8 *ip6 = put(f, NULL, 40), *next = ip6 + 6;

	ip6[0] = 0x60;
	ip6[1] = p->ecn << 4; /* traffic class bits 0-1 */
	ip6[7] = 64;
	memcpy(ip6 + 8, p->reverse ? v6_dst : v6_src, 16);
	memcpy(ip6 + 24, p->reverse ? v6_src : v6_dst, 16);
	for (size_t i = 0; i < p->n_v6_ext; i++) {
		__u8 *h;

		/* destination options get hdrlen 1 (16 bytes, Pad1s), the others 8 bytes */
		*next = p->v6_ext[i];
		h = put(f, NULL, p->v6_ext[i] == NH_DEST ? 16 : 8);
		if (p->v6_ext[i] == NH_DEST)
			h[1] = 1;
		if (p->v6_ext[i] == NH_FRAGMENT)
			wr16(h + 2, p->frag);
		next = h;
	}
	*next = p->proto;
	return ip6;
}

static void build(const struct pkt *p, struct frame *f)
{
	unsigned ethertype = p->family == FM_FAMILY_IPV4   ? ETH_P_IP
			     : p->family == FM_FAMILY_IPV6 ? ETH_P_IPV6
							   : p->ethertype;
	__u8 *ip = NULL, *l4 = NULL;

	f->len = 0;
	if (p->raw) {
		put(f, p->raw, p->raw_len);
		return;
	}
	put(f, mac_dst, 6);
	put(f, mac_src, 6);
	for (int i = 0; i < p->vlans; i++) {
		wr16(put(f, NULL, 2), i == 0 && p->vlans > 1 ? ETH_P_8021AD : ETH_P_8021Q);
		wr16(put(f, NULL, 2), 100 + i); /* TCI: VLAN id */
	}
	wr16(put(f, NULL, 2), ethertype);
	if (p->family == FM_FAMILY_IPV4)
		ip = put_ipv4(f, p);
	else if (p->family == FM_FAMILY_IPV6)
		ip = put_ipv6(f, p);
	if (ip && p->proto == IPPROTO_TCP) {
		l4 = put(f, NULL, 20);
		l4[12] = 5 << 4; /* data offset */
		l4[13] = p->tcp_flags;
		wr16(l4 + 14, 65535);
	} else if (ip && p->proto == IPPROTO_UDP) {
		l4 = put(f, NULL, 8);
	}
	if (l4) {
		wr16(l4, p->sport);
		wr16(l4 + 2, p->dport);
	}
	put(f, p->payload, p->payload_len);
	if (l4 && p->proto == IPPROTO_UDP)
		wr16(l4 + 4, f->b + f->len - l4);
	if (p->family == FM_FAMILY_IPV4)
		wr16(ip + 2, f->b + f->len - ip);
	else if (ip)
		wr16(ip + 4, f->b + f->len - ip - 40);
	if (p->cut) {
		ck_assert_uint_lt(p->cut, f->len);
		f->len = p->cut;
	}
}

/* One loaded probe and the interface its test runs carry. */
struct rig {
	struct flow_bpf *skel;
	int ifindex;
};

/* A copy of the probe, loaded with fm_roce_pmtu_shift set, as the collector
 * sets it from roce_pmtu. */
static struct flow_bpf *probe_load(__u32 pmtu_shift)
{
	struct flow_bpf *skel = flow_bpf__open();

	ck_assert_msg(skel, "unable to open the tc probe: %s", strerror(errno));
	skel->rodata->fm_roce_pmtu_shift = pmtu_shift;
	ck_assert_msg(flow_bpf__load(skel) == 0, "unable to load the tc probe: %s",
		      strerror(errno));
	return skel;
}

/*
 * Enters a private netns, runs the shell commands setup there and loads the
 * probe; dev is the interface the test's packets are on. Returns 0, or
 * -errno after testutil_skip() said why the test cannot run.
 */
static int rig_up(struct rig *r, const char *test, const char *setup, const char *dev)
{
	int err = testutil_netns_enter(0, test);

	if (err < 0)
		return err;
	ck_assert_msg(system(setup) == 0, "%s: setup failed: %s", test, setup);
	r->ifindex = (int)if_nametoindex(dev);
	/* not lo's 1: the keys must carry the interface the packet was on */
	ck_assert_int_gt(r->ifindex, 1);
	r->skel = probe_load(ROCE_PMTU_SHIFT_MAX);
	return 0;
}

static void rig_down(struct rig *r)
{
	flow_bpf__destroy(r->skel);
}

/* Builds p, runs it through the probe as seen in direction dir, and returns
 * the frame length (what the probe counts as bytes). */
static size_t send_pkt(const struct rig *r, enum fm_dir dir, const struct pkt *p)
{
	struct bpf_program *prog = dir == FM_DIR_INGRESS ? r->skel->progs.fabmon_tc_ingress
							 : r->skel->progs.fabmon_tc_egress;
	struct __sk_buff ctx = { .ifindex = (__u32)r->ifindex };
	struct frame f;
	__u8 out[FRAME_MAX];

	build(p, &f);
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = f.b, .data_size_in = f.len, .data_out = out,
		    .data_size_out = sizeof(out), .ctx_in = &ctx, .ctx_size_in = sizeof(ctx));
	ck_assert_int_eq(bpf_prog_test_run_opts(bpf_program__fd(prog), &o), 0);
	ck_assert_int_eq(o.retval, TC_ACT_OK);
	/* a monitor hands the packet on as it came */
	ck_assert_uint_eq(o.data_size_out, f.len);
	ck_assert_mem_eq(out, f.b, f.len);
	return f.len;
}

/* The key the probe should file p under. */
static struct fm_flow_key pkt_key(const struct rig *r, const struct pkt *p, enum fm_dir dir)
{
	struct fm_flow_key k = {
		.sport = p->sport,
		.dport = p->dport,
		.ifindex = (__u32)r->ifindex,
		.family = (__u8)p->family,
		.proto = p->proto,
		.dir = (__u8)dir,
	};
	int v4 = p->family == FM_FAMILY_IPV4;

	memcpy(k.saddr, v4 ? v4_src : v6_src, v4 ? 4 : 16);
	memcpy(k.daddr, v4 ? v4_dst : v6_dst, v4 ? 4 : 16);
	return k;
}

static struct fm_flow_val flow_val(const struct rig *r, const struct fm_flow_key *k,
				   const char *what)
{
	struct fm_flow_val v;

	ck_assert_msg(
		bpf_map__lookup_elem(r->skel->maps.fm_flows, k, sizeof(*k), &v, sizeof(v), 0) == 0,
		"%s: no such flow in fm_flows", what);
	return v;
}

/* Adds the counters of v to sum. Every field is a __u64 counter, so the sum
 * goes field by field as an array. */
static void if_add(struct fm_if_val *sum, const struct fm_if_val *v)
{
	for (size_t i = 0; i < sizeof(*sum) / sizeof(__u64); i++)
		((__u64 *)sum)[i] += ((const __u64 *)v)[i];
}

/* Our interface's fm_ifslots slot for dir, on every CPU: calloc'd, freed by
 * the caller. */
static struct fm_if_slot *if_slots(const struct rig *r, enum fm_dir dir)
{
	__u32 i = FM_IF_SLOT((__u32)r->ifindex, dir);
	int ncpus = libbpf_num_possible_cpus();
	struct fm_if_slot *s;

	ck_assert_int_gt(ncpus, 0);
	s = calloc((size_t)ncpus, sizeof(*s));
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(bpf_map__lookup_elem(r->skel->maps.fm_ifslots, &i, sizeof(i), s,
					      (size_t)ncpus * sizeof(*s), 0),
			 0);
	return s;
}

/* Our interface's fm_ifstats entry for dir, summed over CPUs; zero if none. */
static struct fm_if_val if_hash_val(const struct rig *r, enum fm_dir dir)
{
	struct fm_if_key k = { .ifindex = (__u32)r->ifindex, .dir = dir };
	int ncpus = libbpf_num_possible_cpus();
	struct fm_if_val sum = { 0 }, *v = calloc((size_t)ncpus, sizeof(*v));

	ck_assert_ptr_nonnull(v);
	if (bpf_map__lookup_elem(r->skel->maps.fm_ifstats, &k, sizeof(k), v,
				 (size_t)ncpus * sizeof(*v), 0) == 0)
		for (int c = 0; c < ncpus; c++)
			if_add(&sum, &v[c]);
	free(v);
	return sum;
}

/* Our interface's totals for dir, as the collector sums them: its slot on
 * every CPU where the slot is its own, and its fm_ifstats entry. */
static struct fm_if_val if_val(const struct rig *r, enum fm_dir dir)
{
	struct fm_if_val sum = if_hash_val(r, dir);
	struct fm_if_slot *s = if_slots(r, dir);

	for (int c = 0; c < libbpf_num_possible_cpus(); c++)
		if (s[c].ifindex == (__u32)r->ifindex)
			if_add(&sum, &s[c].v);
	free(s);
	return sum;
}

static struct fm_qp_key qp_key(const struct rig *r, int family, __u32 qp, enum fm_dir dir)
{
	struct fm_flow_key fk = pkt_key(r, &(struct pkt){ .family = family }, dir);
	struct fm_qp_key k = {
		.ifindex = fk.ifindex,
		.dest_qp = qp,
		.family = fk.family,
		.dir = fk.dir,
	};

	memcpy(k.saddr, fk.saddr, sizeof(k.saddr));
	memcpy(k.daddr, fk.daddr, sizeof(k.daddr));
	return k;
}

static struct fm_qp_val qp_val(const struct rig *r, const struct fm_qp_key *k)
{
	struct fm_qp_val v;

	ck_assert_msg(bpf_map__lookup_elem(r->skel->maps.fm_qps, k, sizeof(*k), &v, sizeof(v), 0) ==
			      0,
		      "QP %#x not in fm_qps", k->dest_qp);
	return v;
}

static unsigned map_len(const struct bpf_map *m)
{
	__u8 key[64], next[64];
	unsigned n = 0;

	ck_assert_uint_le(bpf_map__key_size(m), sizeof(key));
	for (void *prev = NULL; bpf_map__get_next_key(m, prev, next, bpf_map__key_size(m)) == 0;
	     prev = key, n++)
		memcpy(key, next, sizeof(next));
	return n;
}

/* IBTA 9.2: a BTH for opcode, qp and psn, default P_Key, the A bit set. */
static void put_bth(__u8 *t, __u8 opcode, __u32 qp, __u32 psn)
{
	t[0] = opcode;
	wr16(t + 2, 0xffff); /* default P_Key */
	t[5] = qp >> 16;
	t[6] = qp >> 8;
	t[7] = qp;
	t[8] = 0x80; /* A: ask for an ACK */
	t[9] = psn >> 16;
	t[10] = psn >> 8;
	t[11] = psn;
}

/*
 * A RoCEv2 packet (IBTA A17) to the RoCE port: BTH for opcode, qp and psn,
 * then per syndrome an AETH (>= 0), none (NO_AETH) or none although the
 * opcode wants one (CUT_AETH), then 32 bytes of payload if there is no AETH,
 * and the ICRC. Returns the frame length.
 */
static size_t send_roce(const struct rig *r, enum fm_dir dir, int family, __u8 opcode, __u32 qp,
			__u32 psn, int syndrome, __u8 ecn)
{
	__u8 t[ROCE_BTH_LEN + ROCE_AETH_LEN + 32 + ROCE_ICRC_LEN] = { 0 };
	size_t n = ROCE_BTH_LEN;
	struct pkt p = {
		.family = family,
		.proto = IPPROTO_UDP,
		.sport = ROCE_SPORT,
		.dport = ROCE_UDP_PORT,
		.ecn = ecn,
		.payload = t,
	};

	put_bth(t, opcode, qp, psn);
	if (syndrome >= 0) {
		t[n] = (__u8)syndrome;
		n += ROCE_AETH_LEN;
	} else if (syndrome == NO_AETH) {
		n += 32;
	}
	/* a cut AETH leaves only the BTH: no room for the ICRC's 4 bytes either */
	p.payload_len = syndrome == CUT_AETH ? n : n + ROCE_ICRC_LEN;
	return send_pkt(r, dir, &p);
}

/* IBTA 9.3.5, table 44: the AETH of an ACK, credit count 0x1f (not used) */
#define SYN_ACK_NO_CREDIT 0x1f

/*
 * An RDMA READ as a requester's interface sees it (IBTA 9.7.2): the request
 * for len bytes with PSN psn to the responder's QP qp on egress (BTH, RETH
 * whose DMA length is len, ICRC), then, unless pmtu is 0, its response on
 * ingress from the responder to the requester's QP rqp: ceil(len / pmtu)
 * packets (one if len is 0) with PSNs from psn on, each pmtu bytes of
 * payload but the last, an AETH on the first, the last and an only one.
 */
static void send_read(const struct rig *r, __u32 qp, __u32 rqp, __u32 psn, __u32 len, __u32 pmtu)
{
	static __u8 t[ROCE_BTH_LEN + ROCE_AETH_LEN + 4096 + 3 + ROCE_ICRC_LEN];
	struct pkt p = { .family = FM_FAMILY_IPV4,
			 .proto = IPPROTO_UDP,
			 .sport = ROCE_SPORT,
			 .dport = ROCE_UDP_PORT,
			 .payload = t };
	__u32 n = !pmtu ? 0 : len ? (len + pmtu - 1) / pmtu : 1;

	memset(t, 0, sizeof(t));
	put_bth(t, OP_RC_READ_REQUEST, qp, psn);
	t[ROCE_BTH_LEN + 12] = len >> 24; /* IBTA 9.3.3: DMA length, bytes 12-15 */
	t[ROCE_BTH_LEN + 13] = len >> 16;
	t[ROCE_BTH_LEN + 14] = len >> 8;
	t[ROCE_BTH_LEN + 15] = len;
	p.payload_len = ROCE_BTH_LEN + ROCE_RETH_LEN + ROCE_ICRC_LEN;
	send_pkt(r, FM_DIR_EGRESS, &p);
	p.reverse = 1;
	for (__u32 i = 0; i < n; i++) {
		__u32 size = i + 1 < n ? pmtu : len - i * pmtu, pad = -size & 3;
		__u8 op = n == 1      ? OP_RC_READ_RESPONSE_ONLY
			  : i == 0    ? OP_RC_READ_RESPONSE_FIRST
			  : i + 1 < n ? OP_RC_READ_RESPONSE_MIDDLE
				      : OP_RC_READ_RESPONSE_LAST;
		size_t hdrs = ROCE_BTH_LEN + (op == OP_RC_READ_RESPONSE_MIDDLE ? 0 : ROCE_AETH_LEN);

		memset(t, 0, sizeof(t));
		put_bth(t, op, rqp, psn + i);
		t[1] = pad << 4;
		if (hdrs > ROCE_BTH_LEN)
			t[ROCE_BTH_LEN] = SYN_ACK_NO_CREDIT;
		p.payload_len = hdrs + size + pad + ROCE_ICRC_LEN;
		send_pkt(r, FM_DIR_INGRESS, &p);
	}
}

/* The probe tests' rig: one veth pair; packets are on fmb0. */
#define RIG_UP(r, name)                                                                            \
	do {                                                                                       \
		if (rig_up(r, name, "ip link add fmb0 type veth peer name fmb1", "fmb0") < 0)      \
			return;                                                                    \
	} while (0)

static const __u8 data100[100];

/* Base packets; sport tells rows' flows apart, the rest adds to the packet. */
#define TCP4(sport_, ...)                                                                          \
	{                                                                                          \
		.family = FM_FAMILY_IPV4, .proto = IPPROTO_TCP, .sport = sport_, .dport = 5201,    \
		__VA_ARGS__                                                                        \
	}
#define UDP4(sport_, ...)                                                                          \
	{                                                                                          \
		.family = FM_FAMILY_IPV4, .proto = IPPROTO_UDP, .sport = sport_, .dport = 9000,    \
		.payload = data100, .payload_len = 64, __VA_ARGS__                                 \
	}
#define UDP6(sport_, ...)                                                                          \
	{                                                                                          \
		.family = FM_FAMILY_IPV6, .proto = IPPROTO_UDP, .sport = sport_, .dport = 5201,    \
		.payload = data100, .payload_len = 64, __VA_ARGS__                                 \
	}

/* CLOCK_MONOTONIC_COARSE is what the probe's bpf_ktime_get_coarse_ns()
 * reads; it lags CLOCK_MONOTONIC by up to a jiffy, never leads it. */
static __u64 now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (__u64)ts.tv_sec * 1000000000u + (__u64)ts.tv_nsec;
}

/* One TCP connection's life: flags and ECN marks add up in one flow entry. */
START_TEST(test_tcp_ipv4)
{
	static const struct {
		__u8 flags, ecn;
		size_t payload;
	} seq[] = {
		{ TH_SYN, 0, 0 },    { TH_ACK, ECT0, 100 }, { TH_ACK, ECT1, 100 },
		{ TH_ACK, CE, 100 }, { TH_ACK, CE, 100 },   { TH_FIN | TH_ACK, 0, 0 },
		{ TH_RST, 0, 0 },
	};
	struct fm_flow_key k;
	struct fm_flow_val v;
	struct fm_if_val iv;
	struct rig r;
	__u64 bytes = 0, t0, t1;

	RIG_UP(&r, "bpf_flow tcp_ipv4");
	t0 = now_ns(CLOCK_MONOTONIC_COARSE);
	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		const struct pkt p = TCP4(40000, .tcp_flags = seq[i].flags, .ecn = seq[i].ecn,
					  .payload = data100, .payload_len = seq[i].payload);

		bytes += send_pkt(&r, FM_DIR_INGRESS, &p);
	}
	t1 = now_ns(CLOCK_MONOTONIC);
	k = pkt_key(&r, &(const struct pkt)TCP4(40000), FM_DIR_INGRESS);
	v = flow_val(&r, &k, "tcp");
	ck_assert_uint_eq(v.packets, 7);
	ck_assert_uint_eq(v.bytes, bytes);
	ck_assert_uint_eq(v.syn, 1);
	ck_assert_uint_eq(v.fin, 1);
	ck_assert_uint_eq(v.rst, 1);
	ck_assert_uint_eq(v.ect, 2); /* ECT(0) and ECT(1) */
	ck_assert_uint_eq(v.ce, 2);
	ck_assert_uint_ge(v.first_ns, t0);
	ck_assert_uint_ge(v.last_ns, v.first_ns);
	ck_assert_uint_le(v.last_ns, t1);
	ck_assert_uint_eq(map_len(r.skel->maps.fm_flows), 1);
	iv = if_val(&r, FM_DIR_INGRESS);
	ck_assert_uint_eq(iv.packets, 7);
	ck_assert_uint_eq(iv.bytes, bytes);
	ck_assert_uint_eq(iv.flows_new, 1);
	ck_assert_uint_eq(iv.unparsed, 0);
	ck_assert_uint_eq(iv.flow_update_failed, 0);
	ck_assert_uint_eq(iv.roce, 0);
	/* a free slot: the array holds the counts, the hash nothing */
	ck_assert_uint_eq(map_len(r.skel->maps.fm_ifstats), 0);
	rig_down(&r);
}
END_TEST

/*
 * Where another interface holds our slot on every CPU, the counts go to the
 * hash, and the other's slot stays as it was.
 */
START_TEST(test_if_slot_taken)
{
	struct fm_if_slot *s;
	struct fm_if_val iv;
	struct rig r;
	size_t len;
	__u32 i;
	int ncpus = libbpf_num_possible_cpus();

	RIG_UP(&r, "bpf_flow if_slot_taken");
	i = FM_IF_SLOT((__u32)r.ifindex, FM_DIR_INGRESS);
	s = calloc((size_t)ncpus, sizeof(*s));
	ck_assert_ptr_nonnull(s);
	for (int c = 0; c < ncpus; c++) {
		/* same low bits, another interface */
		s[c].ifindex = (__u32)r.ifindex + FM_IF_SLOTS / 2;
		s[c].v.packets = 5;
	}
	ck_assert_int_eq(bpf_map__update_elem(r.skel->maps.fm_ifslots, &i, sizeof(i), s,
					      (size_t)ncpus * sizeof(*s), 0),
			 0);
	free(s);
	len = send_pkt(&r, FM_DIR_INGRESS, &(const struct pkt)TCP4(40000));
	iv = if_hash_val(&r, FM_DIR_INGRESS);
	ck_assert_uint_eq(iv.packets, 1);
	ck_assert_uint_eq(iv.bytes, len);
	ck_assert_uint_eq(iv.flows_new, 1);
	s = if_slots(&r, FM_DIR_INGRESS);
	for (int c = 0; c < ncpus; c++) {
		ck_assert_uint_eq(s[c].ifindex, (__u32)r.ifindex + FM_IF_SLOTS / 2);
		ck_assert_uint_eq(s[c].v.packets, 5);
		ck_assert_uint_eq(s[c].v.bytes, 0);
	}
	free(s);
	/* the other direction's slot is free: it is taken there */
	send_pkt(&r, FM_DIR_EGRESS, &(const struct pkt)TCP4(40000));
	ck_assert_uint_eq(if_hash_val(&r, FM_DIR_EGRESS).packets, 0);
	ck_assert_uint_eq(if_val(&r, FM_DIR_EGRESS).packets, 1);
	rig_down(&r);
}
END_TEST

/* IPv6 UDP; the same packet in each direction makes a flow per direction. */
START_TEST(test_udp_ipv6_directions)
{
	const struct pkt ce = UDP6(50000, .ecn = CE), ect = UDP6(50000, .ecn = ECT0);
	struct fm_flow_key k;
	struct fm_flow_val v;
	struct fm_if_val iv;
	struct rig r;
	size_t len;

	RIG_UP(&r, "bpf_flow udp_ipv6_directions");
	len = send_pkt(&r, FM_DIR_EGRESS, &ce);
	send_pkt(&r, FM_DIR_EGRESS, &ect);
	send_pkt(&r, FM_DIR_INGRESS, &ect);
	k = pkt_key(&r, &ce, FM_DIR_EGRESS);
	v = flow_val(&r, &k, "egress");
	ck_assert_uint_eq(v.packets, 2);
	ck_assert_uint_eq(v.bytes, 2 * len);
	ck_assert_uint_eq(v.ce, 1);
	ck_assert_uint_eq(v.ect, 1);
	ck_assert_uint_eq(v.syn + v.fin + v.rst, 0);
	k = pkt_key(&r, &ce, FM_DIR_INGRESS);
	v = flow_val(&r, &k, "ingress");
	ck_assert_uint_eq(v.packets, 1);
	ck_assert_uint_eq(v.ect, 1);
	ck_assert_uint_eq(v.ce, 0);
	ck_assert_uint_eq(map_len(r.skel->maps.fm_flows), 2);
	iv = if_val(&r, FM_DIR_EGRESS);
	ck_assert_uint_eq(iv.packets, 2);
	ck_assert_uint_eq(iv.bytes, 2 * len);
	ck_assert_uint_eq(iv.flows_new, 1);
	iv = if_val(&r, FM_DIR_INGRESS);
	ck_assert_uint_eq(iv.packets, 1);
	ck_assert_uint_eq(iv.flows_new, 1);
	rig_down(&r);
}
END_TEST

enum expect { PORTS, NO_PORTS, UNPARSED };

struct row {
	const char *what;
	struct pkt p;
	enum expect expect;
};

/*
 * Sends each row's packet on ingress and checks where it went: to a flow of
 * its own under its ports (PORTS) or under ports 0 (NO_PORTS: a later
 * fragment, with no transport header), or only to the unparsed count. Rows
 * that make flows must have keys of their own.
 */
static void check_rows(const struct rig *r, const struct row *rows, size_t n)
{
	unsigned unparsed = 0, flows = 0;
	struct fm_if_val iv;
	__u64 bytes = 0;

	for (size_t i = 0; i < n; i++) {
		struct fm_flow_key k = pkt_key(r, &rows[i].p, FM_DIR_INGRESS);

		bytes += send_pkt(r, FM_DIR_INGRESS, &rows[i].p);
		if (rows[i].expect == UNPARSED) {
			unparsed++;
			ck_assert_msg(if_val(r, FM_DIR_INGRESS).unparsed == unparsed,
				      "%s: not counted unparsed", rows[i].what);
			ck_assert_msg(map_len(r->skel->maps.fm_flows) == flows, "%s: made a flow",
				      rows[i].what);
			continue;
		}
		if (rows[i].expect == NO_PORTS)
			k.sport = k.dport = 0;
		ck_assert_msg(flow_val(r, &k, rows[i].what).packets == 1, "%s: not one packet",
			      rows[i].what);
		flows++;
	}
	iv = if_val(r, FM_DIR_INGRESS);
	ck_assert_uint_eq(iv.packets, n);
	ck_assert_uint_eq(iv.bytes, bytes);
	ck_assert_uint_eq(iv.unparsed, unparsed);
	ck_assert_uint_eq(iv.flows_new, flows);
	ck_assert_uint_eq(map_len(r->skel->maps.fm_flows), flows);
}

/* The UDP header a later fragment seems to have is payload: its "ports" are not read. */
START_TEST(test_ipv4_options_fragments)
{
	const struct row rows[] = {
		{ "IHL 6", UDP4(1, .ip_opts = 1), PORTS },
		{ "IHL 15", UDP4(2, .ip_opts = 10), PORTS },
		{ "first fragment", UDP4(3, .frag = V4_FIRST_FRAG), PORTS },
		{ "later fragment", UDP4(4, .frag = V4_LATER_FRAG), NO_PORTS },
		{ "TCP, first fragment", TCP4(5, .frag = V4_FIRST_FRAG), PORTS },
	};
	struct rig r;

	RIG_UP(&r, "bpf_flow ipv4_options_fragments");
	check_rows(&r, rows, sizeof(rows) / sizeof(rows[0]));
	rig_down(&r);
}
END_TEST

/*
 * RFC 8200 4.1's order: hop-by-hop, destination options, routing, fragment,
 * destination options again; all five are skipped, a sixth is not parsed.
 */
START_TEST(test_ipv6_extension_headers)
{
	static const __u8 hop_dest_routing[] = { NH_HOP, NH_DEST, NH_ROUTING };
	static const __u8 hop_frag[] = { NH_HOP, NH_FRAGMENT };
	static const __u8 frag[] = { NH_FRAGMENT };
	static const __u8 four[] = { NH_HOP, NH_DEST, NH_ROUTING, NH_FRAGMENT };
	static const __u8 five[] = { NH_HOP, NH_DEST, NH_ROUTING, NH_FRAGMENT, NH_DEST };
	static const __u8 six[] = { NH_HOP, NH_DEST, NH_ROUTING, NH_FRAGMENT, NH_DEST, NH_DEST };
	const struct row rows[] = {
		{ "hop-by-hop, destination, routing",
		  UDP6(1, .v6_ext = hop_dest_routing, .n_v6_ext = 3), PORTS },
		{ "first fragment",
		  UDP6(2, .v6_ext = hop_frag, .n_v6_ext = 2, .frag = V6_FIRST_FRAG), PORTS },
		{ "later fragment", UDP6(3, .v6_ext = frag, .n_v6_ext = 1, .frag = V6_LATER_FRAG),
		  NO_PORTS },
		{ "four extension headers, then RoCEv2",
		  { .family = FM_FAMILY_IPV6,
		    .proto = IPPROTO_UDP,
		    .sport = 6,
		    .dport = ROCE_UDP_PORT,
		    .v6_ext = four,
		    .n_v6_ext = 4,
		    .payload = data100, /* a BTH of zeros: RC SEND first */
		    .payload_len = 64 },
		  PORTS },
		{ "five extension headers", UDP6(4, .v6_ext = five, .n_v6_ext = 5), PORTS },
		{ "six extension headers", UDP6(7, .v6_ext = six, .n_v6_ext = 6), UNPARSED },
		{ "destination options cut short",
		  UDP6(5, .v6_ext = hop_dest_routing, .n_v6_ext = 3, .cut = 14 + 40 + 8 + 12),
		  UNPARSED },
	};
	struct rig r;

	RIG_UP(&r, "bpf_flow ipv6_extension_headers");
	check_rows(&r, rows, sizeof(rows) / sizeof(rows[0]));
	ck_assert_uint_eq(if_val(&r, FM_DIR_INGRESS).roce, 1);
	rig_down(&r);
}
END_TEST

/* Tags are skipped (the flow key has no VLAN); more than two are not parsed. */
START_TEST(test_vlan)
{
	const struct row rows[] = {
		{ "802.1Q", UDP4(1, .vlans = 1), PORTS },
		{ "802.1ad + 802.1Q", UDP4(2, .vlans = 2), PORTS },
		{ "802.1Q, IPv6", UDP6(3, .vlans = 1), PORTS },
		{ "three tags", UDP4(4, .vlans = 3), UNPARSED },
		{ "tag cut short", UDP4(5, .vlans = 2, .cut = 14 + 2), UNPARSED },
	};
	struct rig r;

	RIG_UP(&r, "bpf_flow vlan");
	check_rows(&r, rows, sizeof(rows) / sizeof(rows[0]));
	rig_down(&r);
}
END_TEST

/* What is not IPv4/IPv6 TCP/UDP, or is cut short, is counted and passed. */
START_TEST(test_unparsed)
{
	static const __u8 arp_request[28] =
		"\x00\x01\x08\x00\x06\x04\x00\x01" /* Ethernet, IPv4, request */
		"\x02\x00\xc6\x12\x00\x01\xc6\x12\x00\x01" /* sender */
		"\x00\x00\x00\x00\x00\x00\xc6\x12\x00\x02"; /* target */
	__u8 garbage[64], junk_ipv4[64];
	struct rig r;

	memset(garbage, 0xff, sizeof(garbage));
	/* an IPv4 ethertype, then bytes that are no IPv4 header (version 10) */
	memset(junk_ipv4, 0xa7, sizeof(junk_ipv4));
	junk_ipv4[12] = 0x08;
	junk_ipv4[13] = 0x00;
	const struct row rows[] = {
		{ "ARP",
		  { .ethertype = ETH_P_ARP, .payload = arp_request, .payload_len = 28 },
		  UNPARSED },
		{ "garbage", { .raw = garbage, .raw_len = sizeof(garbage) }, UNPARSED },
		{ "garbage after an IPv4 ethertype",
		  { .raw = junk_ipv4, .raw_len = sizeof(junk_ipv4) },
		  UNPARSED },
		/* behind a tag: bpf_prog_test_run refuses (-EINVAL) IPv4 frames shorter than
		 * Ethernet + 20 bytes and IPv6 ones shorter than Ethernet + 40 */
		{ "IPv4 header cut short", UDP4(2, .vlans = 1, .cut = 18 + 10), UNPARSED },
		{ "IPv6 header cut short", UDP6(5, .vlans = 1, .cut = 18 + 30), UNPARSED },
		{ "IPv4 IHL 4", UDP4(3, .ip_opts = -1), UNPARSED },
		{ "IPv4 options past the end", UDP4(4, .ip_opts = 10, .cut = 14 + 40), UNPARSED },
		{ "TCP header cut short", TCP4(6, .cut = 14 + 20 + 10), UNPARSED },
		{ "UDP header cut short", UDP4(7, .cut = 14 + 20 + 4), UNPARSED },
		{ "ICMP",
		  { .family = FM_FAMILY_IPV4,
		    .proto = IPPROTO_ICMP,
		    .payload = data100,
		    .payload_len = 8 },
		  UNPARSED },
	};

	RIG_UP(&r, "bpf_flow unparsed");
	check_rows(&r, rows, sizeof(rows) / sizeof(rows[0]));
	rig_down(&r);
}
END_TEST

/* The UDP flow a RoCEv2 stream rides on, for QP tests to check. */
static struct fm_flow_val roce_flow(const struct rig *r, int family, enum fm_dir dir)
{
	const struct pkt p = {
		.family = family, .proto = IPPROTO_UDP, .sport = ROCE_SPORT, .dport = ROCE_UDP_PORT
	};
	struct fm_flow_key k = pkt_key(r, &p, dir);

	return flow_val(r, &k, "RoCEv2 UDP flow");
}

#define QP 0xa1b2c3 /* all three bytes differ: catches a byte-order slip */

/*
 * RC SEND requests with PSNs 0 1 2, then 5 (a gap of 2), 5 again (a dup), 3
 * (behind) and 6: 6 is in order only if neither the dup nor the packet
 * behind moved the last PSN.
 */
START_TEST(test_roce_psn)
{
	static const struct {
		__u32 psn;
		__u8 ecn;
	} seq[] = { { 0, 0 }, { 1, 0 }, { 2, 0 }, { 5, CE }, { 5, 0 }, { 3, 0 }, { 6, 0 } };
	const unsigned n = sizeof(seq) / sizeof(seq[0]);
	struct fm_qp_key k;
	struct fm_qp_val v;
	struct fm_if_val iv;
	struct rig r;
	__u64 bytes = 0;

	RIG_UP(&r, "bpf_flow roce_psn");
	for (unsigned i = 0; i < n; i++)
		bytes += send_roce(&r, FM_DIR_INGRESS, FM_FAMILY_IPV4, OP_RC_SEND_ONLY, QP,
				   seq[i].psn, NO_AETH, seq[i].ecn);
	k = qp_key(&r, FM_FAMILY_IPV4, QP, FM_DIR_INGRESS);
	v = qp_val(&r, &k);
	ck_assert_uint_eq(v.packets, n);
	ck_assert_uint_eq(v.bytes, bytes);
	ck_assert_uint_eq(v.by_class[ROCE_CLASS_SEND], n);
	ck_assert_uint_eq(v.psn_gaps, 1);
	ck_assert_uint_eq(v.psn_missing, 2); /* 3 and 4 */
	ck_assert_uint_eq(v.psn_dups, 1);
	ck_assert_uint_eq(v.psn_behind, 1);
	ck_assert_uint_eq(v.last_span, FM_SPAN_ONE);
	ck_assert_uint_eq(v.last_psn, 6);
	ck_assert_uint_eq(v.ce, 1);
	ck_assert_uint_eq(v.acks + v.nak_psn + v.nak_rnr + v.nak_other, 0);
	ck_assert_uint_gt(v.last_ns, 0);
	ck_assert_uint_eq(map_len(r.skel->maps.fm_qps), 1);
	/* the packets are a UDP flow as well */
	ck_assert_uint_eq(roce_flow(&r, FM_FAMILY_IPV4, FM_DIR_INGRESS).packets, n);
	ck_assert_uint_eq(roce_flow(&r, FM_FAMILY_IPV4, FM_DIR_INGRESS).ce, 1);
	iv = if_val(&r, FM_DIR_INGRESS);
	ck_assert_uint_eq(iv.roce, n);
	ck_assert_uint_eq(iv.roce_unparsed, 0);
	ck_assert_uint_eq(iv.qps_new, 1);
	ck_assert_uint_eq(iv.qp_update_failed, 0);
	ck_assert_uint_eq(iv.unparsed, 0);
	rig_down(&r);
}
END_TEST

/* PSNs are 24 bits: 0xfffffe, 0xffffff, 0 is in order. */
START_TEST(test_roce_psn_wrap)
{
	static const __u32 psns[] = { 0xfffffe, 0xffffff, 0 };
	struct fm_qp_key k;
	struct fm_qp_val v;
	struct rig r;

	RIG_UP(&r, "bpf_flow roce_psn_wrap");
	for (size_t i = 0; i < sizeof(psns) / sizeof(psns[0]); i++)
		send_roce(&r, FM_DIR_EGRESS, FM_FAMILY_IPV4, OP_RC_SEND_ONLY, QP, psns[i], NO_AETH,
			  0);
	k = qp_key(&r, FM_FAMILY_IPV4, QP, FM_DIR_EGRESS);
	v = qp_val(&r, &k);
	ck_assert_uint_eq(v.packets, 3);
	ck_assert_uint_eq(v.psn_gaps + v.psn_missing + v.psn_dups + v.psn_behind, 0);
	ck_assert_uint_eq(v.last_psn, 0);
	ck_assert_uint_eq(v.last_span, FM_SPAN_ONE);
	rig_down(&r);
}
END_TEST

/*
 * RC ACKNOWLEDGE packets with each kind of AETH syndrome, and one whose
 * AETH is missing: counted by syndrome, none taken for a request PSN.
 */
START_TEST(test_roce_aeth)
{
	static const int syndromes[] = { SYN_ACK,	   SYN_NAK_PSN,	   SYN_RNR_NAK,
					 SYN_NAK_INVALID,  SYN_NAK_ACCESS, SYN_NAK_OPERATION,
					 SYN_NAK_RESERVED, CUT_AETH };
	const unsigned n = sizeof(syndromes) / sizeof(syndromes[0]);
	struct fm_qp_key k;
	struct fm_qp_val v;
	struct fm_if_val iv;
	struct rig r;

	RIG_UP(&r, "bpf_flow roce_aeth");
	for (unsigned i = 0; i < n; i++)
		send_roce(&r, FM_DIR_INGRESS, FM_FAMILY_IPV4, OP_RC_ACK, QP, 100 + i, syndromes[i],
			  0);
	k = qp_key(&r, FM_FAMILY_IPV4, QP, FM_DIR_INGRESS);
	v = qp_val(&r, &k);
	ck_assert_uint_eq(v.packets, n);
	ck_assert_uint_eq(v.by_class[ROCE_CLASS_ACK], n);
	ck_assert_uint_eq(v.acks, 1);
	ck_assert_uint_eq(v.nak_psn, 1);
	ck_assert_uint_eq(v.nak_rnr, 1);
	ck_assert_uint_eq(v.nak_invalid, 1);
	ck_assert_uint_eq(v.nak_access, 1);
	ck_assert_uint_eq(v.nak_operation, 1);
	ck_assert_uint_eq(v.nak_other, 1);
	/* ACKs echo the requester's PSNs: not a sequence of their own */
	ck_assert_uint_eq(v.last_span, FM_SPAN_NONE);
	ck_assert_uint_eq(v.psn_gaps + v.psn_dups + v.psn_behind, 0);
	iv = if_val(&r, FM_DIR_INGRESS);
	ck_assert_uint_eq(iv.roce, n);
	ck_assert_uint_eq(iv.roce_unparsed, 1); /* the missing AETH */
	rig_down(&r);
}
END_TEST

/* A CNP (opcode 0x81), here over IPv6 on egress. */
START_TEST(test_roce_cnp)
{
	struct fm_qp_key k;
	struct fm_qp_val v;
	struct rig r;

	RIG_UP(&r, "bpf_flow roce_cnp");
	send_roce(&r, FM_DIR_EGRESS, FM_FAMILY_IPV6, ROCE_OPCODE_CNP, QP, 0, NO_AETH, 0);
	k = qp_key(&r, FM_FAMILY_IPV6, QP, FM_DIR_EGRESS);
	v = qp_val(&r, &k);
	ck_assert_uint_eq(v.packets, 1);
	ck_assert_uint_eq(v.by_class[ROCE_CLASS_CNP], 1);
	ck_assert_uint_eq(v.last_span, FM_SPAN_NONE);
	ck_assert_uint_eq(v.acks + v.nak_psn + v.nak_rnr + v.nak_other, 0);
	ck_assert_uint_eq(if_val(&r, FM_DIR_EGRESS).roce, 1);
	rig_down(&r);
}
END_TEST

/* UDP to 4791 with 4 bytes: a UDP flow, but no BTH to read. */
START_TEST(test_roce_truncated_bth)
{
	const struct pkt p = { .family = FM_FAMILY_IPV4,
			       .proto = IPPROTO_UDP,
			       .sport = ROCE_SPORT,
			       .dport = ROCE_UDP_PORT,
			       .payload = data100,
			       .payload_len = 4 };
	struct fm_if_val iv;
	struct rig r;

	RIG_UP(&r, "bpf_flow roce_truncated_bth");
	send_pkt(&r, FM_DIR_INGRESS, &p);
	ck_assert_uint_eq(map_len(r.skel->maps.fm_qps), 0);
	ck_assert_uint_eq(roce_flow(&r, FM_FAMILY_IPV4, FM_DIR_INGRESS).packets, 1);
	iv = if_val(&r, FM_DIR_INGRESS);
	ck_assert_uint_eq(iv.roce_unparsed, 1);
	ck_assert_uint_eq(iv.roce, 0);
	ck_assert_uint_eq(iv.unparsed, 0);
	rig_down(&r);
}
END_TEST

#define RQP 0x0d0e0f /* the requester's QP, to which READ responses go */

/* log2 of the PMTU the probe learnt for the READ path from v4_src to v4_dst; 0: none. */
static __u32 path_pmtu(const struct rig *r)
{
	struct fm_path_key k = { .family = FM_FAMILY_IPV4 };
	__u32 shift = 0;

	memcpy(k.requester, v4_src, 4);
	memcpy(k.responder, v4_dst, 4);
	(void)bpf_map__lookup_elem(r->skel->maps.fm_paths, &k, sizeof(k), &shift, sizeof(shift), 0);
	return shift;
}

/* The requester's QP: egress, to the responder's QP. */
static struct fm_qp_val requester_qp(const struct rig *r)
{
	struct fm_qp_key k = qp_key(r, FM_FAMILY_IPV4, QP, FM_DIR_EGRESS);

	return qp_val(r, &k);
}

/*
 * A READ request takes a PSN per response packet (IBTA 9.7.2), counted by
 * the PMTU its responses show (1024 here): 4 for 4 KiB, 1 for a zero-length
 * READ, 5 for 4097 bytes; the request after each, at the next PSN, is in
 * order. A READ whose RETH is cut takes an unknown count: the sequence
 * starts again at the next request.
 */
START_TEST(test_roce_read)
{
	struct fm_qp_val v;
	struct rig r;

	RIG_UP(&r, "bpf_flow roce_read");
	send_read(&r, QP, RQP, 10, 4096, 1024);
	send_roce(&r, FM_DIR_EGRESS, FM_FAMILY_IPV4, OP_RC_WRITE_ONLY, QP, 14, NO_AETH, 0);
	send_read(&r, QP, RQP, 15, 0, 1024);
	send_roce(&r, FM_DIR_EGRESS, FM_FAMILY_IPV4, OP_RC_SEND_ONLY, QP, 16, NO_AETH, 0);
	send_read(&r, QP, RQP, 17, 4097, 1024);
	send_roce(&r, FM_DIR_EGRESS, FM_FAMILY_IPV4, OP_RC_SEND_ONLY, QP, 22, NO_AETH, 0);
	v = requester_qp(&r);
	ck_assert_uint_eq(v.by_class[ROCE_CLASS_READ_REQUEST], 3);
	ck_assert_uint_eq(v.by_class[ROCE_CLASS_WRITE], 1);
	ck_assert_uint_eq(v.by_class[ROCE_CLASS_SEND], 2);
	ck_assert_uint_eq(v.psn_gaps + v.psn_missing + v.psn_dups + v.psn_behind, 0);
	ck_assert_uint_eq(v.last_psn, 22);
	ck_assert_uint_eq(path_pmtu(&r), 10);
	ck_assert_uint_eq(if_val(&r, FM_DIR_INGRESS).roce, 4 + 1 + 5);
	ck_assert_uint_eq(if_val(&r, FM_DIR_EGRESS).roce_unparsed, 0);

	/* a READ request cut after its BTH */
	send_roce(&r, FM_DIR_EGRESS, FM_FAMILY_IPV4, OP_RC_READ_REQUEST, QP, 23, CUT_AETH, 0);
	send_roce(&r, FM_DIR_EGRESS, FM_FAMILY_IPV4, OP_RC_SEND_ONLY, QP, 40, NO_AETH, 0);
	v = requester_qp(&r);
	ck_assert_uint_eq(v.psn_gaps + v.psn_missing + v.psn_dups + v.psn_behind, 0);
	ck_assert_uint_eq(v.last_psn, 40);
	ck_assert_uint_eq(if_val(&r, FM_DIR_EGRESS).roce_unparsed, 1);
	rig_down(&r);
}
END_TEST

/* Ten 4 KiB READs at PMTU 1024, back to back, then a SEND: their PSNs step by 4. */
static void send_reads(const struct rig *r, __u32 psn)
{
	for (int i = 0; i < 10; i++)
		send_read(r, QP, RQP, psn + 4 * i, 4096, 0);
	send_roce(r, FM_DIR_EGRESS, FM_FAMILY_IPV4, OP_RC_SEND_ONLY, QP, psn + 40, NO_AETH, 0);
}

/*
 * ib_read_bw's pattern: READs sent back to back, their responses still to
 * come. On a path whose READ responses showed the PMTU before, none is a
 * gap.
 */
START_TEST(test_roce_read_back_to_back)
{
	struct fm_qp_val v;
	struct rig r;

	RIG_UP(&r, "bpf_flow roce_read_back_to_back");
	send_read(&r, QP, RQP, 100, 4096, 1024);
	send_reads(&r, 104);
	v = requester_qp(&r);
	ck_assert_uint_eq(v.by_class[ROCE_CLASS_READ_REQUEST], 11);
	ck_assert_uint_eq(v.psn_gaps + v.psn_missing + v.psn_dups + v.psn_behind, 0);
	ck_assert_uint_eq(v.last_psn, 144);
	rig_down(&r);
}
END_TEST

/*
 * Before a path's READ responses show its PMTU the configured one counts:
 * IBTA's largest, 4096, by default, so back-to-back 4 KiB READs on a path
 * of PMTU 1024 are taken for one PSN each and the next request for a gap
 * of 3; with roce_pmtu = 1024 they are in order.
 */
START_TEST(test_roce_read_pmtu_config)
{
	struct fm_qp_val v;
	struct rig r, pmtu1024;

	RIG_UP(&r, "bpf_flow roce_read_pmtu_config");
	send_reads(&r, 0);
	v = requester_qp(&r);
	ck_assert_uint_eq(v.psn_gaps, 10);
	ck_assert_uint_eq(v.psn_missing, 30);
	pmtu1024 = (struct rig){ .skel = probe_load(10), .ifindex = r.ifindex };
	send_reads(&pmtu1024, 0);
	v = requester_qp(&pmtu1024);
	ck_assert_uint_eq(v.psn_gaps + v.psn_missing + v.psn_dups + v.psn_behind, 0);
	ck_assert_uint_eq(v.last_psn, 40);
	rig_down(&pmtu1024);
	rig_down(&r);
}
END_TEST

/* fabmon's filters as tc(8) prints them: collector/bpf/tc.c's handle 0xfab0, priority 0xfab0. */
#define OUR_HANDLE 0xfab0
#define OUR_PRIORITY 0xfab0
#define OUR_FILTER "pref 64176 bpf chain 0 handle 0xfab0"

/* What the shell command cmd prints; fails the test unless it exits 0. Caller frees. */
static char *cmd_out(const char *cmd)
{
	char *out = calloc(1, 8192);
	size_t n;
	FILE *f;

	ck_assert_ptr_nonnull(out);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(out, 1, 8191, f);
	out[n] = '\0';
	ck_assert_msg(pclose(f) == 0, "%s failed", cmd);
	return out;
}

/* tc(8)'s listing of dev's filters on hook ("ingress" or "egress"); caller frees. */
static char *tc_show(const char *dev, const char *hook)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "tc filter show dev %s %s", dev, hook);
	return cmd_out(cmd);
}

/* True if tc lists, on dev's hook, a filter whose line holds both a and b. */
static int tc_lists(const char *dev, const char *hook, const char *a, const char *b)
{
	char *out = tc_show(dev, hook), *line;
	int found = 0;

	for (line = strtok(out, "\n"); line && !found; line = strtok(NULL, "\n"))
		found = strstr(line, a) && strstr(line, b);
	free(out);
	return found;
}

/* True if dev's hook has fabmon's filter with fabmon's program for that hook. */
static int tc_has_ours(const char *dev, const char *hook)
{
	/* program names are cut to 15 characters */
	return tc_lists(dev, hook, OUR_FILTER,
			strcmp(hook, "ingress") == 0 ? "name fabmon_tc_ingre"
						     : "name fabmon_tc_egres");
}

/* True if dev's hook has no filter at all. */
static int tc_empty(const char *dev, const char *hook)
{
	char *out = tc_show(dev, hook);
	int empty = out[0] == '\0';

	free(out);
	return empty;
}

/* A tc rig: the probe, an interface regex and the env that carries it. */
struct tc_rig {
	struct rig r;
	regex_t re;
	struct collector_env env;
};

static int tc_rig_up(struct tc_rig *t, const char *test, const char *setup, const char *dev,
		     const char *interfaces)
{
	int err = rig_up(&t->r, test, setup, dev);

	if (err < 0)
		return err;
	ck_assert_int_eq(regcomp(&t->re, interfaces, REG_EXTENDED | REG_NOSUB), 0);
	memset(&t->env, 0, sizeof(t->env));
	t->env.interfaces = &t->re;
	return 0;
}

static void tc_rig_down(struct tc_rig *t)
{
	regfree(&t->re);
	rig_down(&t->r);
}

static struct bpf_tc *tc_new(const struct tc_rig *t)
{
	struct bpf_tc *tc = bpf_tc_new(bpf_program__fd(t->r.skel->progs.fabmon_tc_ingress),
				       bpf_program__fd(t->r.skel->progs.fabmon_tc_egress));

	ck_assert_ptr_nonnull(tc);
	return tc;
}

/* A tc program that is not fabmon's, named other_probe: it passes everything. */
static int foreign_prog(void)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = TC_ACT_OK },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_SCHED_CLS, "other_probe", "MIT", insns, 2, NULL);

	ck_assert_int_ge(fd, 0);
	return fd;
}

/* Puts program fd on dev's ingress (it has a clsact qdisc) at fabmon's handle and priority. */
static void attach_at_ours(const char *dev, int fd, __u32 flags)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = (int)if_nametoindex(dev),
		    .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = OUR_HANDLE, .priority = OUR_PRIORITY,
		    .prog_fd = fd, .flags = flags);

	ck_assert_int_eq(bpf_tc_attach(&hook, &opts), 0);
}

/* Sends count datagrams from 198.18.0.1 to 198.18.0.2:9, a neighbour no one is;
 * returns the source port. */
static __u16 send_udp(unsigned count)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(9) }, from;
	socklen_t len = sizeof(from);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(inet_pton(AF_INET, "198.18.0.2", &to.sin_addr), 1);
	for (unsigned i = 0; i < count; i++)
		ck_assert_int_eq(sendto(fd, data100, 64, 0, (struct sockaddr *)&to, sizeof(to)),
				 64);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&from, &len), 0);
	close(fd);
	return ntohs(from.sin_port);
}

#define TC_SYNC_SETUP                                                                              \
	"set -e; ip link add fms0 type veth peer name fms1; "                                      \
	"ip link add fmx0 type veth peer name fmx1; "                                              \
	"ip link set fms0 up; ip link set fms1 up; ip addr add 198.18.0.1/24 dev fms0; "           \
	"ip neigh add 198.18.0.2 lladdr 02:00:c6:12:00:02 dev fms0 nud permanent"

/*
 * Sync attaches both hooks of the wanted interfaces (and they see traffic,
 * each in its direction), picks up an interface made later, forgets one that
 * vanished; free detaches all and keeps the clsact qdiscs.
 */
START_TEST(test_tc_sync)
{
	static const char *const devs[] = { "fms0", "fms1" };
	struct pkt sent = { .family = FM_FAMILY_IPV4, .proto = IPPROTO_UDP, .dport = 9 };
	struct fm_flow_key k;
	struct tc_rig t;
	struct bpf_tc *tc;
	char *qdisc;

	if (tc_rig_up(&t, "bpf_flow tc_sync", TC_SYNC_SETUP, "fms0", "^fms") < 0)
		return;
	tc = tc_new(&t);
	ck_assert_int_eq(bpf_tc_sync(tc, &t.env), 2);
	ck_assert_uint_eq(bpf_tc_count(tc), 2);
	ck_assert_str_eq(bpf_tc_why(tc), "");
	for (size_t i = 0; i < 2; i++) {
		ck_assert_msg(tc_has_ours(devs[i], "ingress"), "%s ingress", devs[i]);
		ck_assert_msg(tc_has_ours(devs[i], "egress"), "%s egress", devs[i]);
	}
	ck_assert(tc_empty("fmx0", "ingress")); /* not wanted: not touched */

	/* out of fms0, into its peer fms1: each hook counts its own direction */
	sent.sport = send_udp(3);
	k = pkt_key(&t.r, &sent, FM_DIR_EGRESS);
	ck_assert_uint_eq(flow_val(&t.r, &k, "fms0 egress").packets, 3);
	t.r.ifindex = (int)if_nametoindex("fms1");
	k = pkt_key(&t.r, &sent, FM_DIR_INGRESS);
	ck_assert_uint_eq(flow_val(&t.r, &k, "fms1 ingress").packets, 3);

	ck_assert_int_eq(system("ip link add fms2 type veth peer name fms3"), 0);
	ck_assert_int_eq(bpf_tc_sync(tc, &t.env), 4);
	ck_assert(tc_has_ours("fms2", "ingress"));
	ck_assert(tc_has_ours("fms3", "egress"));
	/* a sync with nothing new changes nothing and finds nothing wrong */
	ck_assert_int_eq(bpf_tc_sync(tc, &t.env), 4);
	ck_assert_str_eq(bpf_tc_why(tc), "");
	ck_assert_int_eq(system("ip link del fms2"), 0);
	ck_assert_int_eq(bpf_tc_sync(tc, &t.env), 2);
	ck_assert_uint_eq(bpf_tc_count(tc), 2);

	bpf_tc_free(tc);
	for (size_t i = 0; i < 2; i++) {
		ck_assert_msg(tc_empty(devs[i], "ingress"), "%s ingress", devs[i]);
		ck_assert_msg(tc_empty(devs[i], "egress"), "%s egress", devs[i]);
	}
	qdisc = cmd_out("tc qdisc show dev fms0");
	ck_assert_msg(strstr(qdisc, "qdisc clsact"), "clsact gone: %s", qdisc);
	free(qdisc);
	tc_rig_down(&t);
}
END_TEST

/* The program at fabmon's handle and priority on dev's hook, or 0. */
static __u32 prog_at_ours(const char *dev, enum bpf_tc_attach_point point)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = (int)if_nametoindex(dev), .attach_point = point);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = OUR_HANDLE, .priority = OUR_PRIORITY);

	return bpf_tc_query(&hook, &opts) == 0 ? opts.prog_id : 0;
}

/* True once program id is gone from the kernel (within a second: tc frees
 * filters after an RCU grace period). */
static int prog_freed(__u32 id)
{
	for (int i = 0; i < 100; i++) {
		int fd = bpf_prog_get_fd_by_id(id);

		if (fd < 0)
			return errno == ENOENT;
		close(fd);
		usleep(10000);
	}
	return 0;
}

/*
 * Loads the probe and attaches it to the interfaces matching interfaces,
 * then dies by SIGKILL, as a fabmon killed with -9 would: no detach.
 */
static void leak_filters(const char *interfaces)
{
	pid_t pid = fork();
	int status;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct flow_bpf *skel = flow_bpf__open_and_load();
		struct collector_env env = { 0 };
		struct bpf_tc *tc;
		regex_t re;

		if (!skel || regcomp(&re, interfaces, REG_EXTENDED | REG_NOSUB) != 0)
			_exit(1);
		env.interfaces = &re;
		tc = bpf_tc_new(bpf_program__fd(skel->progs.fabmon_tc_ingress),
				bpf_program__fd(skel->progs.fabmon_tc_egress));
		if (!tc || bpf_tc_sync(tc, &env) != 1)
			_exit(1);
		raise(SIGKILL);
		_exit(1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		      "the child could not attach (status %#x)", status);
}

/*
 * Filters a fabmon killed with -9 left are found and removed, and their
 * programs freed; a u32 filter and a foreign program at fabmon's own handle
 * and priority stay.
 */
START_TEST(test_tc_remove_stale)
{
	__u32 stale_in, stale_out;
	struct rig r;
	int foreign;

	/* bpf_tc_query() on the hooks without a fabmon filter has libbpf print the
	 * kernel's "not found"; the agent silences libbpf the same way */
	libbpf_set_print(NULL);
	if (rig_up(&r, "bpf_flow tc_remove_stale",
		   "set -e; ip link add fmk0 type veth peer name fmk1; tc qdisc add dev fmk1 clsact",
		   "fmk0") < 0)
		return;
	leak_filters("^fmk0$");
	ck_assert(tc_has_ours("fmk0", "ingress"));
	ck_assert(tc_has_ours("fmk0", "egress"));
	stale_in = prog_at_ours("fmk0", BPF_TC_INGRESS);
	stale_out = prog_at_ours("fmk0", BPF_TC_EGRESS);
	ck_assert_uint_ne(stale_in, 0);
	ck_assert_int_eq(system("tc filter add dev fmk0 ingress prio 1 u32 match u32 0 0"), 0);
	foreign = foreign_prog();
	attach_at_ours("fmk1", foreign, 0);

	ck_assert_int_eq(bpf_tc_remove_stale(), 2);
	ck_assert(!tc_lists("fmk0", "ingress", "fabmon", ""));
	ck_assert(tc_empty("fmk0", "egress"));
	ck_assert(tc_lists("fmk0", "ingress", "pref 1 u32", ""));
	ck_assert(tc_lists("fmk1", "ingress", OUR_FILTER, "name other_probe"));
	ck_assert(prog_freed(stale_in));
	ck_assert(prog_freed(stale_out));
	ck_assert_int_eq(bpf_tc_remove_stale(), 0);
	close(foreign);
	rig_down(&r);
}
END_TEST

/* bpf_tc_free() detaches only its own program: one that replaced it stays. */
START_TEST(test_tc_free_spares_replacement)
{
	struct tc_rig t;
	struct bpf_tc *tc;
	int foreign;

	if (tc_rig_up(&t, "bpf_flow tc_free_spares_replacement",
		      "ip link add fmo0 type veth peer name fmo1", "fmo0", "^fmo0$") < 0)
		return;
	tc = tc_new(&t);
	ck_assert_int_eq(bpf_tc_sync(tc, &t.env), 1);
	foreign = foreign_prog();
	attach_at_ours("fmo0", foreign, BPF_TC_F_REPLACE);
	bpf_tc_free(tc);
	ck_assert(tc_lists("fmo0", "ingress", OUR_FILTER, "name other_probe"));
	ck_assert(tc_empty("fmo0", "egress"));
	close(foreign);
	tc_rig_down(&t);
}
END_TEST

/* When no wanted interface can be attached, sync fails and says why, per interface. */
START_TEST(test_tc_attach_failure)
{
	struct tc_rig t;
	struct bpf_tc *tc;
	const char *why;

	if (tc_rig_up(&t, "bpf_flow tc_attach_failure", "ip link add fmf0 type veth peer name fmf1",
		      "fmf0", "^fmf") < 0)
		return;
	/* no programs: every attach fails */
	tc = bpf_tc_new(-1, -1);
	ck_assert_ptr_nonnull(tc);
	ck_assert_int_lt(bpf_tc_sync(tc, &t.env), 0);
	ck_assert_uint_eq(bpf_tc_count(tc), 0);
	why = bpf_tc_why(tc);
	ck_assert_msg(strstr(why, "fmf0: unable to attach to ingress: ") &&
			      strstr(why, "fmf1: unable to attach to ingress: ") &&
			      strstr(why, "; "),
		      "why: %s", why);
	ck_assert(tc_empty("fmf0", "ingress"));
	bpf_tc_free(tc);
	tc_rig_down(&t);
}
END_TEST

/*
 * A filter someone else deleted (tc filter del) is noticed by the next sync:
 * the interface is lost, its other filter is taken away too, and the news
 * and why say so; it is attached again by the first sync env.retry_ms later,
 * not before, and the news says that once.
 */
START_TEST(test_tc_lost)
{
	struct tc_rig t;
	struct bpf_tc *tc;

	libbpf_set_print(NULL);
	if (tc_rig_up(&t, "bpf_flow tc_lost", "ip link add fml0 type veth peer name fml1", "fml0",
		      "^fml0$") < 0)
		return;
	t.env.retry_ms = 3600 * 1000;
	tc = tc_new(&t);
	ck_assert_int_eq(bpf_tc_sync(tc, &t.env), 1);
	ck_assert_int_eq(system("tc filter del dev fml0 ingress"), 0);
	ck_assert_int_eq(bpf_tc_sync(tc, &t.env), 0);
	ck_assert_uint_eq(bpf_tc_lost(tc), 1);
	ck_assert_str_eq(bpf_tc_news(tc), "fml0: fabmon's ingress filter is gone (removed by "
					  "someone else: tc filter del?)");
	ck_assert_msg(strstr(bpf_tc_why(tc), "fml0: fabmon's filters are gone"), "why: %s",
		      bpf_tc_why(tc));
	ck_assert(tc_empty("fml0", "egress"));
	/* before retry_ms: still lost, and nothing new to say */
	ck_assert_int_eq(bpf_tc_sync(tc, &t.env), 0);
	ck_assert_str_eq(bpf_tc_news(tc), "");
	ck_assert(tc_empty("fml0", "ingress"));
	t.env.retry_ms = 0;
	ck_assert_int_eq(bpf_tc_sync(tc, &t.env), 1);
	ck_assert_uint_eq(bpf_tc_lost(tc), 0);
	ck_assert_str_eq(bpf_tc_news(tc), "fml0: attached again");
	ck_assert_str_eq(bpf_tc_why(tc), "");
	ck_assert(tc_has_ours("fml0", "ingress"));
	ck_assert(tc_has_ours("fml0", "egress"));
	/* the whole clsact qdisc deleted: both filters gone with it */
	ck_assert_int_eq(system("tc qdisc del dev fml0 clsact"), 0);
	ck_assert_int_eq(bpf_tc_sync(tc, &t.env), 0);
	ck_assert_str_eq(bpf_tc_news(tc), "fml0: fabmon's ingress and egress filters are gone "
					  "(removed by someone else: tc filter del?)");
	ck_assert_int_eq(bpf_tc_sync(tc, &t.env), 1);
	ck_assert(tc_has_ours("fml0", "ingress"));
	bpf_tc_free(tc);
	ck_assert(tc_empty("fml0", "ingress"));
	tc_rig_down(&t);
}
END_TEST

/*
 * The survey changes nothing: it names the interfaces a sync would attach
 * to and the hooks that have a fabmon filter, whoever's it is.
 */
START_TEST(test_tc_survey)
{
	char would[256], found[256];
	struct tc_rig t;

	libbpf_set_print(NULL);
	if (tc_rig_up(&t, "bpf_flow tc_survey", "ip link add fmv0 type veth peer name fmv1", "fmv0",
		      "^fmv") < 0)
		return;
	ck_assert_int_eq(bpf_tc_survey(&t.env, would, sizeof(would), found, sizeof(found)), 0);
	ck_assert_str_eq(would, "fmv1, fmv0");
	ck_assert_str_eq(found, "");
	ck_assert(tc_empty("fmv0", "ingress"));
	leak_filters("^fmv0$");
	ck_assert_int_eq(bpf_tc_survey(&t.env, would, sizeof(would), found, sizeof(found)), 2);
	ck_assert_str_eq(found, "fmv0 ingress, fmv0 egress");
	ck_assert(tc_has_ours("fmv0", "ingress"));
	ck_assert_int_eq(bpf_tc_remove_stale(), 2);
	tc_rig_down(&t);
}
END_TEST

/* No interface wanted is no failure: nothing to attach, nothing wrong. */
START_TEST(test_tc_nothing_wanted)
{
	struct tc_rig t;
	struct bpf_tc *tc;

	if (tc_rig_up(&t, "bpf_flow tc_nothing_wanted", "ip link add fmn0 type veth peer name fmn1",
		      "fmn0", "^none$") < 0)
		return;
	tc = tc_new(&t);
	ck_assert_int_eq(bpf_tc_sync(tc, &t.env), 0);
	ck_assert_str_eq(bpf_tc_why(tc), "");
	ck_assert(tc_empty("fmn0", "ingress"));
	bpf_tc_free(tc);
	tc_rig_down(&t);
}
END_TEST

Suite *bpf_flow_suite(void)
{
	const struct testutil_case cases[] = {
		{ "tcp_ipv4", test_tcp_ipv4, 0 },
		{ "if_slot_taken", test_if_slot_taken, 0 },
		{ "udp_ipv6_directions", test_udp_ipv6_directions, 0 },
		{ "ipv4_options_fragments", test_ipv4_options_fragments, 0 },
		{ "ipv6_extension_headers", test_ipv6_extension_headers, 0 },
		{ "vlan", test_vlan, 0 },
		{ "unparsed", test_unparsed, 0 },
		{ "roce_psn", test_roce_psn, 0 },
		{ "roce_psn_wrap", test_roce_psn_wrap, 0 },
		{ "roce_aeth", test_roce_aeth, 0 },
		{ "roce_cnp", test_roce_cnp, 0 },
		{ "roce_truncated_bth", test_roce_truncated_bth, 0 },
		{ "roce_read", test_roce_read, 0 },
		{ "roce_read_back_to_back", test_roce_read_back_to_back, 0 },
		{ "roce_read_pmtu_config", test_roce_read_pmtu_config, 0 },
		/* these run ip(8) and tc(8) and load programs: about 1 s each,
		 * over Check's default 4 s on a loaded 2-core machine */
		{ "tc_sync", test_tc_sync, 20 },
		{ "tc_remove_stale", test_tc_remove_stale, 20 },
		{ "tc_free_spares_replacement", test_tc_free_spares_replacement, 20 },
		{ "tc_attach_failure", test_tc_attach_failure, 20 },
		{ "tc_nothing_wanted", test_tc_nothing_wanted, 20 },
		{ "tc_lost", test_tc_lost, 20 },
		{ "tc_survey", test_tc_survey, 20 },
	};

	return TESTUTIL_SUITE("bpf_flow", cases);
}
