/* SPDX-License-Identifier: (MIT OR GPL-2.0-only) */
/*
 * The tc probe: attached to clsact ingress and egress of the interfaces the
 * collector selects (collector/bpf/tc.c), it counts every packet per
 * interface and direction, per flow (5-tuple, direction, ECN marks, TCP
 * SYN/FIN/RST) and, for RoCEv2, per queue pair (opcode class, ACK/NAK,
 * CNP, PSN order). Nothing goes to user space per packet: the collector reads
 * the maps each tick. Whatever happens, the packet goes on untouched.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "account.h"

/* include/uapi/linux/pkt_cls.h */
#define TC_ACT_OK 0
/* include/uapi/asm-generic/errno-base.h */
#define EEXIST 17
/* include/uapi/linux/if_ether.h */
#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define ETH_P_8021Q 0x8100
#define ETH_P_8021AD 0x88A8
/* include/net/ip.h: iphdr.frag_off offset bits, host order */
#define FM_IP_OFFSET 0x1fff
/* include/net/ipv6.h: next-header values of the extension headers we skip */
#define FM_NEXTHDR_HOP 0
#define FM_NEXTHDR_ROUTING 43
#define FM_NEXTHDR_FRAGMENT 44
#define FM_NEXTHDR_DEST 60
/* include/net/ipv6.h: frag_hdr.frag_off offset bits, host order */
#define FM_IP6_OFFSET 0xfff8
/* 802.1ad outer + 802.1Q inner is as deep as data-centre tagging goes. */
#define FM_VLAN_MAX 2
/* RFC 8200 4.1: hop-by-hop, destination options, routing, fragment and
 * destination options again (once before routing, once before the upper
 * layer): five to skip. */
#define FM_IPV6_EXT_MAX 5
/*
 * Ethernet 14 + two tags 8 + IPv4 with options 60 + UDP 8 + BTH 12 + RETH 16
 * = 118: every header the probe reads lies in the first 128 bytes unless
 * IPv6 extension headers are long.
 */
#define FM_HDR_MAX 128

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384); /* user space sets the configured size before load */
	__type(key, struct fm_flow_key);
	__type(value, struct fm_flow_val);
} fm_flows SEC(".maps");

/*
 * Per-interface totals: an array slot first, the hash for interfaces whose
 * slot another took (fabmon.h, FM_IF_SLOT). An array lookup is an index
 * computation (which newer kernels inline into the program), where a hash
 * lookup hashes the key and walks a bucket: the hash cost ~6 ns of a 35 ns
 * probe (probe_run in make bench), the array ~0.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FM_IF_SLOTS);
	__type(key, __u32);
	__type(value, struct fm_if_slot);
} fm_ifslots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, FM_IF_HASH_MAX);
	__type(key, struct fm_if_key);
	__type(value, struct fm_if_val);
} fm_ifstats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct fm_qp_key);
	__type(value, struct fm_qp_val);
} fm_qps SEC(".maps");

/* READ paths: the PMTU their READ responses showed (fabmon.h). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct fm_path_key);
	__type(value, __u32);
} fm_paths SEC(".maps");

/* log2 of the path MTU taken for a READ path none of whose READ responses
 * showed one yet; user space sets the configured one before load. */
const volatile __u32 fm_roce_pmtu_shift = ROCE_PMTU_SHIFT_MAX;

/* Initial values, from .rodata rather than the 512-byte stack. */
static const struct fm_if_val fm_if_zero;
static const struct fm_qp_val fm_qp_zero;
static const __u32 fm_path_zero;

/* What the parse learnt besides the flow key. */
struct fm_pkt {
	__u8 ecn; /* FM_ECN_MASK bits of the IP header */
	__u8 tcp_flags; /* byte FM_TCP_FLAGS_OFF of the TCP header, 0 for UDP */
	__u8 l4; /* the transport header was read (not a later fragment) */
	__u16 udp_len; /* the UDP header's length field */
};

/*
 * Returns map[key], adding init under key first if it is absent; *ret_new
 * is 1 if this call added it. NULL if it could not be added.
 */
static __always_inline void *fm_get(void *map, const void *key, const void *init, int *ret_new)
{
	void *v = bpf_map_lookup_elem(map, key);
	long err;

	*ret_new = 0;
	if (v)
		return v;
	/* NOEXIST: another CPU may have added the key since the lookup; keep its counts */
	err = bpf_map_update_elem(map, key, init, BPF_NOEXIST);
	if (err && err != -EEXIST)
		return NULL;
	*ret_new = !err;
	return bpf_map_lookup_elem(map, key);
}

/*
 * Headers are read in place (direct packet access): one bounds check per
 * header, where bpf_skb_load_bytes() would cost a helper call and a copy per
 * header, which matters at line rate (goal: 30 ns a packet). In-place reads
 * only reach the skb's linear part. Drivers and GRO put the headers there,
 * so this is nearly always enough. Only when the parse runs short and the
 * linear part ends before both the packet and FM_HDR_MAX are the headers
 * pulled in, and the parse done again. Pulling every time cost ~600 ns a
 * packet on veth (make bench): TCP data there is a clone whose head the pull
 * reallocates and copies. A pull never changes a byte of the packet; if it
 * fails, the packet counts as unparsed.
 */
static __always_inline int fm_pull_headers(struct __sk_buff *skb)
{
	__u32 want = skb->len < FM_HDR_MAX ? skb->len : FM_HDR_MAX;

	if ((void *)(long)skb->data + want <= (void *)(long)skb->data_end)
		return -1; /* all there already: a pull would not help */
	return bpf_skb_pull_data(skb, want);
}

/* Moves *p past Ethernet and up to FM_VLAN_MAX tags; returns the ethertype
 * (network order), or 0 if the frame is cut short. */
static __always_inline __be16 fm_parse_eth(void **p, void *end)
{
	struct ethhdr *eth = *p;
	struct vlan_hdr *vh;
	__be16 proto;

	if ((void *)(eth + 1) > end)
		return 0;
	proto = eth->h_proto;
	vh = (void *)(eth + 1);
	for (int i = 0; i < FM_VLAN_MAX; i++) {
		if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD))
			break;
		if ((void *)(vh + 1) > end)
			return 0;
		proto = vh->h_vlan_encapsulated_proto;
		vh++;
	}
	*p = vh;
	return proto;
}

/* Moves *p past the IPv4 header. Returns the protocol, or -1 if unparsed. */
static __always_inline int fm_parse_ipv4(void **p, void *end, struct fm_flow_key *key,
					 struct fm_pkt *pkt)
{
	struct iphdr *ip = *p;
	__u8 *b = *p;
	__u32 hlen;

	if ((void *)(ip + 1) > end || b[0] >> 4 != 4)
		return -1;
	hlen = (b[0] & 0xf) * 4;
	if (hlen < sizeof(*ip) || *p + hlen > end)
		return -1;
	key->family = FM_FAMILY_IPV4;
	__builtin_memcpy(key->saddr, &ip->saddr, 4);
	__builtin_memcpy(key->daddr, &ip->daddr, 4);
	pkt->ecn = ip->tos & FM_ECN_MASK;
	/* later fragments carry no transport header: they count with ports 0 */
	pkt->l4 = !(bpf_ntohs(ip->frag_off) & FM_IP_OFFSET);
	*p += hlen;
	return ip->protocol;
}

/* True for the extension headers skipped to reach the transport header. */
static __always_inline int fm_ipv6_ext(int next)
{
	return next == FM_NEXTHDR_HOP || next == FM_NEXTHDR_ROUTING ||
	       next == FM_NEXTHDR_FRAGMENT || next == FM_NEXTHDR_DEST;
}

/*
 * Moves *p past the IPv6 header and the extension headers that can precede
 * the transport header. Returns the next header, or -1 if unparsed (cut
 * short, or more extension headers than FM_IPV6_EXT_MAX).
 */
static __always_inline int fm_parse_ipv6(void **p, void *end, struct fm_flow_key *key,
					 struct fm_pkt *pkt)
{
	struct ipv6hdr *ip6 = *p;
	__u8 *b = *p;
	int next;

	if ((void *)(ip6 + 1) > end || b[0] >> 4 != 6)
		return -1;
	key->family = FM_FAMILY_IPV6;
	__builtin_memcpy(key->saddr, &ip6->saddr, 16);
	__builtin_memcpy(key->daddr, &ip6->daddr, 16);
	/* traffic class is bits 4-11 of the first word: ECN is bits 4-5 of byte 1 */
	pkt->ecn = (b[1] >> 4) & FM_ECN_MASK;
	pkt->l4 = 1;
	next = ip6->nexthdr;
	*p = ip6 + 1;
	for (int i = 0; i < FM_IPV6_EXT_MAX && fm_ipv6_ext(next); i++) {
		if (next == FM_NEXTHDR_FRAGMENT) {
			struct frag_hdr *fh = *p;

			if ((void *)(fh + 1) > end)
				return -1;
			pkt->l4 = !(bpf_ntohs(fh->frag_off) & FM_IP6_OFFSET);
			next = fh->nexthdr;
			*p = fh + 1;
		} else {
			struct ipv6_opt_hdr *oh = *p;

			if ((void *)(oh + 1) > end)
				return -1;
			next = oh->nexthdr;
			/* RFC 8200 4.3: length in 8-octet units, not counting the first 8 */
			*p += (oh->hdrlen + 1) * 8;
		}
	}
	return fm_ipv6_ext(next) ? -1 : next;
}

/*
 * Parses up to and including the TCP or UDP header; *p ends after it.
 * Returns 0, or -1 if the packet is not IPv4/IPv6 TCP/UDP or is cut short.
 */
static __always_inline int fm_parse(void **p, void *end, struct fm_flow_key *key,
				    struct fm_pkt *pkt)
{
	__be16 eth_proto = fm_parse_eth(p, end);
	int proto;

	if (eth_proto == bpf_htons(ETH_P_IP))
		proto = fm_parse_ipv4(p, end, key, pkt);
	else if (eth_proto == bpf_htons(ETH_P_IPV6))
		proto = fm_parse_ipv6(p, end, key, pkt);
	else
		return -1;
	if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
		return -1;
	key->proto = proto;
	if (!pkt->l4)
		return 0;
	if (proto == IPPROTO_TCP) {
		struct tcphdr *th = *p;

		if ((void *)(th + 1) > end)
			return -1;
		key->sport = bpf_ntohs(th->source);
		key->dport = bpf_ntohs(th->dest);
		pkt->tcp_flags = ((__u8 *)th)[FM_TCP_FLAGS_OFF];
		*p = th + 1;
	} else {
		struct udphdr *uh = *p;

		if ((void *)(uh + 1) > end)
			return -1;
		key->sport = bpf_ntohs(uh->source);
		key->dport = bpf_ntohs(uh->dest);
		pkt->udp_len = bpf_ntohs(uh->len);
		*p = uh + 1;
	}
	return 0;
}

static __always_inline void fm_flow_count(const struct fm_flow_key *key, const struct fm_pkt *pkt,
					  __u32 len, __u64 now, struct fm_if_val *ifv)
{
	struct fm_flow_val init = { .first_ns = now };
	struct fm_flow_val *v;
	int created;

	v = fm_get(&fm_flows, key, &init, &created);
	if (ifv && created)
		ifv->flows_new++;
	if (!v) {
		if (ifv)
			ifv->flow_update_failed++;
		return;
	}
	fm_flow_add(v, pkt->ecn, pkt->tcp_flags, len, now);
}

/* log2 of the PMTU a READ request on QP key qk is counted by (fm_pmtu_shift()). */
static __always_inline __u32 fm_path_pmtu(const struct fm_qp_key *qk)
{
	struct fm_path_key pk = {};
	__u32 *learnt;

	fm_path_key_of(&pk, qk, 0);
	learnt = bpf_map_lookup_elem(&fm_paths, &pk);
	return fm_pmtu_shift(learnt ? *learnt : 0, fm_roce_pmtu_shift);
}

/* Keeps the largest PMTU the READ responses on QP key qk's path showed. */
static __always_inline void fm_path_learn(const struct fm_qp_key *qk, __u32 shift)
{
	struct fm_path_key pk = {};
	__u32 *learnt;
	int created;

	fm_path_key_of(&pk, qk, 1);
	learnt = fm_get(&fm_paths, &pk, &fm_path_zero, &created);
	if (learnt && *learnt < shift)
		*learnt = shift;
}

/*
 * Where a BTH can start for fm_roce_count(): the verifier lets a packet
 * pointer be read only while its largest offset plus what is read stays
 * within MAX_PACKET_OFF (0xffff, kernel/bpf/verifier.c); five IPv6
 * extension headers of the largest size (2 KiB each) end before this.
 */
#define FM_ROCE_OFF_MAX 0x8000

/* What fm_roce_count() did, for the interface's counts (struct fm_if_val). */
#define FM_ROCE_PARSED 0x1 /* roce */
#define FM_ROCE_UNPARSED 0x2 /* roce_unparsed */
#define FM_ROCE_QP_NEW 0x4 /* qps_new */
#define FM_ROCE_QP_FAILED 0x8 /* qp_update_failed */

/*
 * Counts the RoCEv2 packet whose BTH starts off bytes into skb's data, in
 * the UDP flow fk, seen at now; returns FM_ROCE_* bits. A global function,
 * which the verifier checks once, on its own: inlined it was checked again
 * after every way the parse can end (tags, IPv4 options, IPv6 extension
 * headers, before and after a pull), which passed the verifier's million
 * instructions once READ requests had a branch of their own.
 */
__noinline int fm_roce_count(struct __sk_buff *skb, __u64 off, const struct fm_flow_key *fk,
			     const struct fm_pkt *pkt, __u64 now)
{
	const __u8 *p = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct fm_qp_key key = {};
	struct fm_req rq = { .span = FM_SPAN_ONE };
	struct roce_bth bth;
	struct fm_qp_val *v;
	int created, r = FM_ROCE_PARSED;
	__u32 shift;

	if (!fk || !pkt || off > FM_ROCE_OFF_MAX)
		return 0;
	p += off;
	if (roce_parse_bth(p, end, &bth) < 0)
		return FM_ROCE_UNPARSED;
	key.ifindex = fk->ifindex;
	key.family = fk->family;
	key.dir = fk->dir;
	__builtin_memcpy(key.saddr, fk->saddr, sizeof(key.saddr));
	__builtin_memcpy(key.daddr, fk->daddr, sizeof(key.daddr));
	key.dest_qp = bth.dest_qp;
	v = fm_get(&fm_qps, &key, &fm_qp_zero, &created);
	if (created)
		r |= FM_ROCE_QP_NEW;
	if (!v)
		return r | FM_ROCE_QP_FAILED;
	if (roce_classify(bth.opcode) == ROCE_CLASS_READ_REQUEST) {
		rq.span = FM_SPAN_READ;
		if (roce_read_len(p, end, bth.opcode, &rq.read_len) < 0) {
			rq.span = FM_SPAN_NONE;
			r |= FM_ROCE_UNPARSED;
		}
	} else {
		shift = roce_pmtu_shift_of(&bth, pkt->udp_len);
		if (shift)
			fm_path_learn(&key, shift);
	}
	if (fm_qp_wants_pmtu(v, &bth))
		rq.pmtu_shift = fm_path_pmtu(&key);
	fm_qp_add(v, &bth, &rq, pkt->ecn, skb->len, now);
	if (!roce_has_aeth(bth.opcode))
		return r;
	/* IBTA 9.3.5: the syndrome is the AETH's first byte */
	if (p + ROCE_BTH_LEN + ROCE_AETH_LEN > end)
		return r | FM_ROCE_UNPARSED;
	fm_qp_aeth(v, p[ROCE_BTH_LEN]);
	return r;
}

/*
 * Parses the packet and counts it. With final 0 it gives up (returns -1,
 * counting nothing) where a pull of the headers could help: the parse ran
 * short, or a RoCEv2 packet's BTH, or the AETH or RETH it has, is out of
 * reach. With final 1 it counts whatever it can, unparsed included.
 */
static __always_inline int fm_account(struct __sk_buff *skb, enum fm_dir dir, struct fm_if_val *ifv,
				      int final)
{
	struct fm_flow_key key = { .ifindex = skb->ifindex, .dir = dir };
	void *p = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct fm_pkt pkt = {};
	int roce, r;
	__u64 now;

	if (fm_parse(&p, end, &key, &pkt) < 0) {
		if (!final)
			return -1;
		if (ifv)
			ifv->unparsed++;
		return 0;
	}
	roce = key.proto == IPPROTO_UDP && key.dport == ROCE_UDP_PORT && pkt.l4;
	if (roce && !final && (p + ROCE_BTH_LEN > end || p + roce_hdr_len(((__u8 *)p)[0]) > end))
		return -1;
	/* first and last seen only time out idle entries: a jiffy's
	 * resolution does, and the coarse clock is a variable's read where
	 * bpf_ktime_get_ns() reads the clock source (kvm-clock on a VM) */
	now = bpf_ktime_get_coarse_ns();
	fm_flow_count(&key, &pkt, skb->len, now, ifv);
	if (!roce)
		return 0;
	r = fm_roce_count(skb, (long)p - (long)skb->data, &key, &pkt, now);
	if (ifv) {
		ifv->roce += !!(r & FM_ROCE_PARSED);
		ifv->roce_unparsed += !!(r & FM_ROCE_UNPARSED);
		ifv->qps_new += !!(r & FM_ROCE_QP_NEW);
		ifv->qp_update_failed += !!(r & FM_ROCE_QP_FAILED);
	}
	return 0;
}

/*
 * The per-CPU totals of interface ifindex in direction dir: its array slot on
 * this CPU if free or its own, else its fm_ifstats entry. NULL if neither.
 * Claiming the slot needs no atomics: the value is this CPU's alone, and a
 * tc program is not preempted by another on the same CPU.
 */
static __always_inline struct fm_if_val *fm_if_get(__u32 ifindex, enum fm_dir dir)
{
	struct fm_if_key ik = { .ifindex = ifindex, .dir = dir };
	__u32 i = FM_IF_SLOT(ifindex, dir);
	struct fm_if_slot *s = bpf_map_lookup_elem(&fm_ifslots, &i);
	int created;

	if (s && s->ifindex == 0)
		s->ifindex = ifindex;
	if (s && s->ifindex == ifindex)
		return &s->v;
	return fm_get(&fm_ifstats, &ik, &fm_if_zero, &created);
}

static __always_inline int fm_tc(struct __sk_buff *skb, enum fm_dir dir)
{
	struct fm_if_val *ifv = fm_if_get(skb->ifindex, dir);

	/* per-CPU: plain increments, no atomics */
	if (ifv) {
		ifv->packets++;
		ifv->bytes += skb->len;
	}
	if (fm_account(skb, dir, ifv, 0) == 0)
		return TC_ACT_OK;
	/* The pull may move the packet data. Without the barrier clang reuses
	 * ctx addresses it computed before the call, which the verifier refuses. */
	(void)fm_pull_headers(skb);
	barrier_var(skb);
	/* the map value outlives the helper call: it is not packet memory */
	(void)fm_account(skb, dir, ifv, 1);
	return TC_ACT_OK;
}

/*
 * Both return TC_ACT_OK whatever the packet: a monitoring probe never drops
 * or alters traffic. TC_ACT_OK also ends the filter chain, which is why
 * collector/bpf/tc.c attaches behind the priorities other tools use.
 */
SEC("tc")
int fabmon_tc_ingress(struct __sk_buff *skb)
{
	return fm_tc(skb, FM_DIR_INGRESS);
}

SEC("tc")
int fabmon_tc_egress(struct __sk_buff *skb)
{
	return fm_tc(skb, FM_DIR_EGRESS);
}
