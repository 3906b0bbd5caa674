/* SPDX-License-Identifier: MIT */
/*
 * pcapgen: writes a classic pcap file of RoCEv2 traffic whose every count is
 * known, and prints those counts as one JSON object: the truth that
 * `fabmon replay` and tshark are checked against (tests/e2e/t_replay.sh).
 * Run with --help for the flags. Nothing is random: the same flags give the
 * same file, byte for byte.
 *
 * The capture is taken at the requesters. Queue pair i (from 0) runs from
 * host 2i + 1, the requester, to host 2i + 2, the responder; a host's number
 * gives its address (198.18.0.0 or 2001:db8:: plus the number) and its MAC.
 * Data packets go round-robin over the queue pairs, each an RC SEND only or
 * an RDMA WRITE only, in turn, or an RDMA READ request. The responder's READ
 * responses, Acknowledges (ACK, NAK, RNR NAK) and CNPs come back on the
 * requester's own QP number. Every
 * --X-every K counts one queue pair's data packets: the K-th, 2K-th, ...
 * data packet of each queue pair is the one marked or answered.
 *
 * The counts describe the packets as they were sent: --snaplen cuts what the
 * file keeps of each packet, not what is counted.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <net/ethernet.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <netinet/udp.h>
#include <netpacket/packet.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/roce.h"
#include "labtool.h"

/* The classic pcap file format (draft-ietf-opsawg-pcap, 4 and 5): version 2.4,
 * microsecond timestamps, the magic in the writer's byte order. */
#define PG_PCAP_MAGIC 0xa1b2c3d4u
#define PG_PCAP_MAJOR 2
#define PG_PCAP_MINOR 4
/* libpcap's MAXIMUM_SNAPLEN: readers refuse records longer than this. */
#define PG_SNAPLEN_MAX 262144u

#define PG_PACKETS_DEFAULT 1000
#define PG_PACKETS_MAX 1000000000ull
#define PG_QPS_DEFAULT 4
/* Two hosts a queue pair, all within 198.18.0.0/15 (RFC 2544). */
#define PG_QPS_MAX 65535
#define PG_EVERY_MAX 1000000000ull
#define PG_VLAN_MAX 4094 /* IEEE 802.1Q: VID 4095 is reserved */
#define PG_UNTAGGED ULLONG_MAX
#define PG_PAYLOAD_DEFAULT 1024
#define PG_PAYLOAD_MAX 4096 /* IBTA's largest path MTU */
/* IBTA path MTUs: 256 .. 4096, powers of two. 1024 is what a RoCE NIC
 * (and Soft-RoCE) uses on an Ethernet MTU of 1500. */
#define PG_PMTU_MIN 256
#define PG_PMTU_DEFAULT 1024
#define PG_PSN_START_DEFAULT 0xfffff0u /* 16 packets a queue pair before the wrap */
#define PG_TIME_START_DEFAULT 1700000000ull
#define PG_TIME_STEP_MAX 1000000ull
#define PG_USEC 1000000ull
/* At most one data packet, its READ response, an ACK, a NAK, an RNR NAK, a
 * CNP and a PFC frame per data packet. */
#define PG_RECORDS_PER_DATA (6 + PG_PAYLOAD_MAX / PG_PMTU_MIN)

#define PG_SLL_LEN 16
#define PG_SLL2_LEN 20
#define PG_VLAN_LEN 4 /* IEEE 802.1Q: TPID, then PCP|DEI|VID */
#define PG_VLAN_PCP 3 /* the priority RoCE fabrics usually make lossless */
#define PG_IPV4_NET 0xc6120000u /* 198.18.0.0/15 */
#define PG_TTL 64
/* AF31 (DSCP 26), where RoCE fabrics usually carry RDMA; ECN-capable, ECT(0),
 * but for the packets marked CE (RFC 3168). */
#define PG_DSCP IPTOS_DSCP_AF31
#define PG_IFINDEX 2

/* IBTA 9.2.1, table 38: the opcodes written here. */
#define PG_OP_SEND_ONLY 0x04
#define PG_OP_WRITE_ONLY 0x0a
#define PG_OP_READ_REQUEST 0x0c
#define PG_OP_READ_RESPONSE_FIRST 0x0d
#define PG_OP_READ_RESPONSE_MIDDLE 0x0e
#define PG_OP_READ_RESPONSE_LAST 0x0f
#define PG_OP_READ_RESPONSE_ONLY 0x10
#define PG_OP_ACK 0x11
#define PG_RETH_LEN 16 /* IBTA 9.3.3: virtual address, R_Key, DMA length */
#define PG_RETH_VA 0x7f0000000000ull
#define PG_RETH_RKEY 0x1234
#define PG_CNP_LEN 16 /* IBTA A17.9.3: a CNP carries 16 reserved bytes */
/* IEEE 802.1Qbb 36.1.3: MAC Control (IEEE 802.3 Annex 31B), opcode 0x0101,
 * a class-enable vector and 8 pause times, padded to the least Ethernet
 * payload (46 bytes), sent to the slow-protocols group address */
#define PG_ETH_P_MAC_CONTROL 0x8808
#define PG_MACC_PFC 0x0101
#define PG_PFC_LEN 46
#define PG_PRIORITIES 8
/* AETH syndromes (IBTA 9.3.5, table 44): an ACK with the credit count 0x1f
 * (end-to-end credits not used), a NAK for a PSN sequence error, and an RNR
 * NAK whose low bits are the RNR timer code (table 45; any code will do). */
#define PG_SYN_ACK (ROCE_AETH_ACK << 5 | 0x1f)
#define PG_SYN_NAK_PSN (ROCE_AETH_NAK << 5 | ROCE_NAK_PSN_SEQUENCE)
#define PG_SYN_RNR (ROCE_AETH_RNR_NAK << 5 | 0x0e)
#define PG_QPN_RESPONDER 0x11 /* queue pair i's responder has QPN 0x11 + i */
/* Requester QPNs in the upper half of the 24-bit space: no responder's. */
#define PG_QPN_REQUESTER 0x800000u

#define PG_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* RFC 8200 4.1's order of extension headers: --ipv6-ext N writes the first
 * N, each at its least, 8 octets. */
static const uint8_t pg_ipv6_ext_order[] = { IPPROTO_HOPOPTS, IPPROTO_DSTOPTS, IPPROTO_ROUTING,
					     IPPROTO_FRAGMENT, IPPROTO_DSTOPTS };
#define PG_IPV6_EXT_LEN 8
#define PG_IPV6_EXT_MAX PG_ARRAY_SIZE(pg_ipv6_ext_order)

#define PG_FRAME_MAX                                                                               \
	(PG_SLL2_LEN + PG_VLAN_LEN + sizeof(struct ip6_hdr) + PG_IPV6_EXT_MAX * PG_IPV6_EXT_LEN +  \
	 sizeof(struct udphdr) + ROCE_BTH_LEN + PG_RETH_LEN + PG_PAYLOAD_MAX + 3 + ROCE_ICRC_LEN)

/* The --X-every flags: what happens to every K-th data packet of a queue pair. */
enum pg_event {
	PG_EV_ACK, /* the responder acknowledges it (and its A bit is set) */
	PG_EV_NAK, /* the responder NAKs: PSN sequence error */
	PG_EV_RNR, /* the responder sends an RNR NAK */
	PG_EV_CNP, /* the responder sends a CNP */
	PG_EV_CE, /* it is ECN CE-marked */
	PG_EV_GAP, /* one PSN is skipped before it */
	PG_EV_DUP, /* it repeats the previous data packet's PSN */
	PG_EV_READ, /* it is an RDMA READ request, answered by its READ response */
	PG_EV_PFC, /* the switch port it crossed sends a PFC frame for its priority */
	PG_EV_COUNT,
};

enum pg_link_id { PG_LINK_ETHERNET, PG_LINK_SLL, PG_LINK_SLL2, PG_LINK_COUNT };

struct pg_opts {
	const char *output;
	unsigned long long packets, qps, every[PG_EV_COUNT];
	unsigned long long psn_start, snaplen, payload, pmtu, time_start, time_step;
	unsigned long long vlan; /* PG_UNTAGGED: none */
	unsigned long long ce_qp; /* 0: --ce-every marks every queue pair; else only this one */
	unsigned long long ipv6_ext; /* extension headers after the IPv6 header */
	enum pg_link_id link;
	int ipv6;
};

/* One direction of a queue pair. */
struct pg_path {
	uint32_t src, dst; /* host numbers */
	uint32_t dest_qp;
	uint16_t sport;
	int outgoing; /* sent by the host the capture is taken on */
};

struct pg_qp {
	struct pg_path req, resp; /* requester to responder, and back */
	uint32_t next_psn;
	unsigned long long sent; /* data packets so far */
};

struct pg_counts {
	unsigned long long packets, bytes, send, write, read_request, read_response, ack, cnp;
	unsigned long long acks, naks_psn, naks_rnr, ecn_ce, gaps, missing, dups;
	unsigned long long pfc, pfc_frames[PG_PRIORITIES], pfc_quanta[PG_PRIORITIES];
};

struct pg_rec {
	uint32_t ts_sec, ts_usec, caplen, len;
};

struct pg {
	struct pg_opts o;
	const struct pg_link *link;
	FILE *f;
	struct pg_qp *qp;
	struct pg_counts c;
	size_t len; /* of the frame being built */
	/* a record header and its frame, written with one fwrite */
	unsigned char rec[sizeof(struct pg_rec) + PG_FRAME_MAX];
	char iobuf[1 << 20];
};

/* ---- packets ---- */

static void pg_put16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)(v >> 8);
	p[1] = (unsigned char)v;
}

static void pg_put24(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 16);
	pg_put16(p + 1, (uint16_t)v);
}

static void pg_put32(unsigned char *p, uint32_t v)
{
	pg_put16(p, (uint16_t)(v >> 16));
	pg_put16(p + 2, (uint16_t)v);
}

/* A locally administered unicast MAC (IEEE 802: bit 1 of the first octet). */
static void pg_mac(unsigned char *p, uint32_t host)
{
	p[0] = 0x02;
	p[1] = p[2] = 0;
	pg_put24(p + 3, host);
}

/* Ethernet II: destination, source, EtherType. */
static void pg_link_ethernet(unsigned char *p, const struct pg_path *pa, uint16_t proto)
{
	pg_mac(p, pa->dst);
	pg_mac(p + ETH_ALEN, pa->src);
	pg_put16(p + 2 * ETH_ALEN, proto);
}

/* tcpdump.org/linktypes/LINKTYPE_LINUX_SLL.html: packet type, ARPHRD type,
 * address length, the sender's address in 8 bytes, protocol. */
static void pg_link_sll(unsigned char *p, const struct pg_path *pa, uint16_t proto)
{
	pg_put16(p, pa->outgoing ? PACKET_OUTGOING : PACKET_HOST);
	pg_put16(p + 2, ARPHRD_ETHER);
	pg_put16(p + 4, ETH_ALEN);
	pg_mac(p + 6, pa->src);
	pg_put16(p + 12, 0);
	pg_put16(p + 14, proto);
}

/* tcpdump.org/linktypes/LINKTYPE_LINUX_SLL2.html: protocol, reserved,
 * interface index, ARPHRD type, packet type, address length, the sender's
 * address in 8 bytes. */
static void pg_link_sll2(unsigned char *p, const struct pg_path *pa, uint16_t proto)
{
	pg_put16(p, proto);
	pg_put16(p + 2, 0);
	pg_put32(p + 4, PG_IFINDEX);
	pg_put16(p + 8, ARPHRD_ETHER);
	p[10] = pa->outgoing ? PACKET_OUTGOING : PACKET_HOST;
	p[11] = ETH_ALEN;
	pg_mac(p + 12, pa->src);
	pg_put16(p + 18, 0);
}

/* Link types: tcpdump.org/linktypes.html. */
static const struct pg_link {
	const char *name;
	uint32_t linktype;
	size_t len;
	void (*put)(unsigned char *p, const struct pg_path *pa, uint16_t proto);
} pg_links[PG_LINK_COUNT] = {
	{ "ethernet", 1, ETH_HLEN, pg_link_ethernet },
	{ "sll", 113, PG_SLL_LEN, pg_link_sll },
	{ "sll2", 276, PG_SLL2_LEN, pg_link_sll2 },
};

/* RFC 1071: the ones' complement of the ones' complement sum. */
static uint16_t pg_ip_checksum(const unsigned char *p, size_t len)
{
	uint32_t sum = 0;

	for (size_t i = 0; i < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* RFC 791. Don't Fragment, as RoCE NICs send. Returns the end of the header. */
static unsigned char *pg_ipv4(unsigned char *p, const struct pg_path *pa, uint8_t tos,
			      size_t payload)
{
	const size_t hl = sizeof(struct ip);

	p[0] = 0x40 | hl / 4;
	p[1] = tos;
	pg_put16(p + 2, (uint16_t)(hl + payload));
	pg_put16(p + 4, 0);
	pg_put16(p + 6, IP_DF);
	p[8] = PG_TTL;
	p[9] = IPPROTO_UDP;
	pg_put16(p + 10, 0);
	pg_put32(p + 12, PG_IPV4_NET + pa->src);
	pg_put32(p + 16, PG_IPV4_NET + pa->dst);
	pg_put16(p + 10, pg_ip_checksum(p, hl));
	return p + hl;
}

/* 2001:db8::/32 (RFC 3849) plus the host number. */
static void pg_ipv6_addr(unsigned char *p, uint32_t host)
{
	memset(p, 0, 12);
	pg_put16(p, 0x2001);
	pg_put16(p + 2, 0x0db8);
	pg_put32(p + 12, host);
}

/*
 * RFC 8200: version, traffic class, flow label 0, then the first ext of
 * pg_ipv6_ext_order: options headers with one PadN option (4.2), a routing
 * header with no segments left (4.4: to be ignored), an atomic fragment
 * header (offset 0, no more fragments: RFC 6946). Returns the end of the
 * headers.
 */
static unsigned char *pg_ipv6(unsigned char *p, const struct pg_path *pa, uint8_t tos,
			      size_t payload, unsigned ext)
{
	unsigned char *next = p + 6;

	pg_put32(p, 6u << 28 | (uint32_t)tos << 20);
	pg_put16(p + 4, (uint16_t)(ext * PG_IPV6_EXT_LEN + payload));
	p[7] = PG_TTL;
	pg_ipv6_addr(p + 8, pa->src);
	pg_ipv6_addr(p + 24, pa->dst);
	p += sizeof(struct ip6_hdr);
	for (unsigned i = 0; i < ext; p += PG_IPV6_EXT_LEN, i++) {
		*next = pg_ipv6_ext_order[i];
		next = p;
		memset(p, 0, PG_IPV6_EXT_LEN);
		if (pg_ipv6_ext_order[i] == IPPROTO_HOPOPTS ||
		    pg_ipv6_ext_order[i] == IPPROTO_DSTOPTS) {
			p[2] = 1; /* PadN over the other 4 bytes */
			p[3] = 4;
		} else if (pg_ipv6_ext_order[i] == IPPROTO_FRAGMENT) {
			pg_put32(p + 4, 1); /* identification */
		}
	}
	*next = IPPROTO_UDP;
	return p;
}

/* IBTA 9.2: opcode; SE|M|PadCnt|TVer; P_Key (default 0xffff); reserved
 * (FECN/BECN in RoCEv2); dest QP; A|reserved; PSN. */
static void pg_bth_put(unsigned char *p, const struct roce_bth *bth, unsigned pad)
{
	p[0] = bth->opcode;
	p[1] = (unsigned char)(pad << 4);
	pg_put16(p + 2, 0xffff);
	p[4] = 0;
	pg_put24(p + 5, bth->dest_qp);
	p[8] = bth->ack_req ? 0x80 : 0;
	pg_put24(p + 9, bth->psn);
}

/*
 * Builds a frame on path pa in pg->rec: link header, VLAN tag, IP, UDP, BTH,
 * then len bytes for the caller to fill (zero until then), the pad to a
 * multiple of 4 (IBTA 9.2: PadCnt) and the ICRC. Returns where the len bytes
 * go; the frame's length is in pg->len.
 */
static unsigned char *pg_frame(struct pg *pg, const struct pg_path *pa, const struct roce_bth *bth,
			       size_t len, int ce)
{
	const struct pg_opts *o = &pg->o;
	unsigned char *frame = pg->rec + sizeof(struct pg_rec), *p = frame;
	uint16_t l3 = o->ipv6 ? ETHERTYPE_IPV6 : ETHERTYPE_IP;
	uint8_t tos = PG_DSCP | (ce ? IPTOS_ECN_CE : IPTOS_ECN_ECT0);
	unsigned pad = -len & 3;
	/* the ICRC is left zero: what reads these files counts packets, it
	 * does not check them */
	size_t roce = ROCE_BTH_LEN + len + pad + ROCE_ICRC_LEN;
	size_t udp = sizeof(struct udphdr) + roce;

	pg->link->put(p, pa, o->vlan == PG_UNTAGGED ? l3 : ETHERTYPE_VLAN);
	p += pg->link->len;
	if (o->vlan != PG_UNTAGGED) {
		pg_put16(p, (uint16_t)(PG_VLAN_PCP << 13 | o->vlan));
		pg_put16(p + 2, l3);
		p += PG_VLAN_LEN;
	}
	p = o->ipv6 ? pg_ipv6(p, pa, tos, udp, (unsigned)o->ipv6_ext) : pg_ipv4(p, pa, tos, udp);
	/* The UDP checksum is zero, as RoCE NICs send it: the ICRC covers the
	 * packet (IBTA A17). */
	pg_put16(p, pa->sport);
	pg_put16(p + 2, ROCE_UDP_PORT);
	pg_put16(p + 4, (uint16_t)udp);
	pg_put16(p + 6, 0);
	p += sizeof(struct udphdr);
	pg_bth_put(p, bth, pad);
	memset(p + ROCE_BTH_LEN, 0, roce - ROCE_BTH_LEN);
	pg->len = (size_t)(p - frame) + roce;
	return p + ROCE_BTH_LEN;
}

/* -errno after a failed stdio call, which need not set errno. */
static int pg_errno(void)
{
	return errno ? -errno : -EIO;
}

/* Writes the frame built last as the file's next record. Returns 0 or -errno. */
static int pg_record(struct pg *pg)
{
	unsigned long long t = pg->o.time_start * PG_USEC + pg->c.packets * pg->o.time_step;
	struct pg_rec r = {
		.ts_sec = (uint32_t)(t / PG_USEC),
		.ts_usec = (uint32_t)(t % PG_USEC),
		.caplen = (uint32_t)(pg->len < pg->o.snaplen ? pg->len : pg->o.snaplen),
		.len = (uint32_t)pg->len,
	};

	memcpy(pg->rec, &r, sizeof(r));
	if (fwrite(pg->rec, sizeof(r) + r.caplen, 1, pg->f) != 1)
		return pg_errno();
	pg->c.packets++;
	pg->c.bytes += pg->len;
	return 0;
}

static int pg_every(unsigned long long k, unsigned long long n)
{
	return k && n % k == 0;
}

/*
 * Writes the responder's READ response to queue pair q's READ request with
 * PSN psn, for --payload bytes: packets of --pmtu bytes but the last (one
 * only packet for 0 bytes), READ response first, middle, last or only, with
 * an AETH (an ACK) on all but the middle ones. The request took their PSNs
 * (IBTA 9.7.2): the next is psn plus their count.
 */
static int pg_read_response(struct pg *pg, struct pg_qp *q, uint32_t psn)
{
	const struct pg_opts *o = &pg->o;
	unsigned long long n = o->payload ? (o->payload + o->pmtu - 1) / o->pmtu : 1;
	int err = 0;

	for (unsigned long long i = 0; !err && i < n; i++) {
		uint8_t op = n == 1	 ? PG_OP_READ_RESPONSE_ONLY
			     : i == 0	 ? PG_OP_READ_RESPONSE_FIRST
			     : i + 1 < n ? PG_OP_READ_RESPONSE_MIDDLE
					 : PG_OP_READ_RESPONSE_LAST;
		size_t aeth = op == PG_OP_READ_RESPONSE_MIDDLE ? 0 : ROCE_AETH_LEN;
		struct roce_bth bth = { .opcode = op,
					.dest_qp = q->resp.dest_qp,
					.psn = (uint32_t)(psn + i) & ROCE_PSN_MASK };
		unsigned char *p =
			pg_frame(pg, &q->resp, &bth,
				 aeth + (i + 1 < n ? o->pmtu : o->payload - i * o->pmtu), 0);

		if (aeth) {
			/* IBTA 9.3.5: syndrome, 24-bit MSN */
			p[0] = PG_SYN_ACK;
			pg_put24(p + 1, (uint32_t)q->sent);
			pg->c.acks++;
		}
		pg->c.read_response++;
		err = pg_record(pg);
	}
	q->next_psn = (uint32_t)(psn + n) & ROCE_PSN_MASK;
	return err;
}

/*
 * Writes queue pair q's next data packet, and the READ response if it is a
 * READ request. The first packet of a queue pair has no PSN before it, so
 * neither a gap nor a duplicate can be seen on it; a packet that is due both
 * repeats the previous PSN and skips none.
 */
static int pg_data(struct pg *pg, struct pg_qp *q)
{
	const struct pg_opts *o = &pg->o;
	unsigned long long n = ++q->sent;
	int dup = n > 1 && pg_every(o->every[PG_EV_DUP], n);
	int gap = n > 1 && !dup && pg_every(o->every[PG_EV_GAP], n);
	int read = pg_every(o->every[PG_EV_READ], n);
	/* one congested receiver (an incast) or the whole fabric */
	int ce = pg_every(o->every[PG_EV_CE], n) &&
		 (!o->ce_qp || (unsigned long long)(q - pg->qp) + 1 == o->ce_qp);
	struct roce_bth bth = {
		.opcode = read	  ? PG_OP_READ_REQUEST
			  : n % 2 ? PG_OP_SEND_ONLY
				  : PG_OP_WRITE_ONLY,
		.ack_req = pg_every(o->every[PG_EV_ACK], n),
		.dest_qp = q->req.dest_qp,
		.psn = (q->next_psn - dup + gap) & ROCE_PSN_MASK,
	};
	size_t reth = bth.opcode == PG_OP_SEND_ONLY ? 0 : PG_RETH_LEN;
	unsigned char *p = pg_frame(pg, &q->req, &bth, reth + (read ? 0 : o->payload), ce);
	int err;

	if (reth) {
		/* IBTA 9.3.3: where the payload goes, or comes from, in a region
		 * of its own */
		pg_put32(p, (uint32_t)(PG_RETH_VA >> 32));
		pg_put32(p + 4, (uint32_t)PG_RETH_VA);
		pg_put32(p + 8, PG_RETH_RKEY);
		pg_put32(p + 12, (uint32_t)o->payload);
	}
	if (read)
		pg->c.read_request++;
	else if (reth)
		pg->c.write++;
	else
		pg->c.send++;
	q->next_psn = (bth.psn + 1) & ROCE_PSN_MASK;
	pg->c.dups += dup;
	pg->c.gaps += gap;
	pg->c.missing += gap;
	pg->c.ecn_ce += ce;
	err = pg_record(pg);
	if (!err && read)
		err = pg_read_response(pg, q, bth.psn);
	return err;
}

/* Writes the responder's Acknowledge with this AETH syndrome and counts it
 * in *count. The MSN is the count of messages received: one a packet. */
static int pg_ack(struct pg *pg, const struct pg_qp *q, uint8_t syndrome, uint32_t psn,
		  unsigned long long *count)
{
	struct roce_bth bth = { .opcode = PG_OP_ACK, .dest_qp = q->resp.dest_qp, .psn = psn };
	unsigned char *p = pg_frame(pg, &q->resp, &bth, ROCE_AETH_LEN, 0);

	/* IBTA 9.3.5: syndrome, 24-bit MSN */
	p[0] = syndrome;
	pg_put24(p + 1, (uint32_t)q->sent);
	pg->c.ack++;
	(*count)++;
	return pg_record(pg);
}

/*
 * Writes a PFC frame pausing PG_VLAN_PCP, the priority the RoCE traffic
 * uses, from the switch port toward the requester: XOFF with a pause time
 * that varies from frame to frame, and every fourth an XON (0).
 */
static int pg_pfc(struct pg *pg, const struct pg_qp *q)
{
	static const unsigned char group[ETH_ALEN] = { 0x01, 0x80, 0xc2, 0x00, 0x00, 0x01 };
	unsigned char *frame = pg->rec + sizeof(struct pg_rec), *p = frame;
	uint16_t quanta = pg->c.pfc % 4 == 3 ? 0 : (uint16_t)(0xffff - pg->c.pfc * 257);

	pg->link->put(p, &q->resp, PG_ETH_P_MAC_CONTROL);
	if (pg->link == &pg_links[PG_LINK_ETHERNET])
		memcpy(p, group, ETH_ALEN);
	p += pg->link->len;
	memset(p, 0, PG_PFC_LEN);
	pg_put16(p, PG_MACC_PFC);
	pg_put16(p + 2, 1u << PG_VLAN_PCP);
	pg_put16(p + 4 + 2 * PG_VLAN_PCP, quanta);
	pg->len = (size_t)(p - frame) + PG_PFC_LEN;
	pg->c.pfc++;
	pg->c.pfc_frames[PG_VLAN_PCP]++;
	pg->c.pfc_quanta[PG_VLAN_PCP] += quanta;
	return pg_record(pg);
}

/* Writes what the responder sends back after queue pair q's latest data packet. */
static int pg_replies(struct pg *pg, struct pg_qp *q)
{
	const unsigned long long *every = pg->o.every;
	uint32_t psn = (q->next_psn - 1) & ROCE_PSN_MASK;
	struct roce_bth cnp = { .opcode = ROCE_OPCODE_CNP, .dest_qp = q->resp.dest_qp };
	int err = 0;

	if (pg_every(every[PG_EV_ACK], q->sent))
		err = pg_ack(pg, q, PG_SYN_ACK, psn, &pg->c.acks);
	/* a PSN sequence error NAK carries the PSN the responder expects */
	if (!err && pg_every(every[PG_EV_NAK], q->sent))
		err = pg_ack(pg, q, PG_SYN_NAK_PSN, q->next_psn, &pg->c.naks_psn);
	if (!err && pg_every(every[PG_EV_RNR], q->sent))
		err = pg_ack(pg, q, PG_SYN_RNR, psn, &pg->c.naks_rnr);
	if (!err && pg_every(every[PG_EV_CNP], q->sent)) {
		/* IBTA A17.9.3: to the requester's QP, PSN and A bit zero */
		(void)pg_frame(pg, &q->resp, &cnp, PG_CNP_LEN, 0);
		pg->c.cnp++;
		err = pg_record(pg);
	}
	if (!err && pg_every(every[PG_EV_PFC], q->sent))
		err = pg_pfc(pg, q);
	return err;
}

/* ---- the file ---- */

static void pg_qp_init(struct pg_qp *q, uint32_t i, uint32_t psn_start)
{
	uint32_t qpn = PG_QPN_RESPONDER + i;
	/* from the dynamic range (RFC 6335), one a QP, as NICs spread RoCE
	 * flows over ECMP paths */
	uint16_t sport = (uint16_t)(0xc000 | (qpn & 0x3fff));

	q->req = (struct pg_path){
		.src = 2 * i + 1, .dst = 2 * i + 2, .dest_qp = qpn, .sport = sport, .outgoing = 1
	};
	q->resp = (struct pg_path){ .src = 2 * i + 2,
				    .dst = 2 * i + 1,
				    .dest_qp = PG_QPN_REQUESTER | qpn,
				    .sport = sport };
	q->next_psn = psn_start;
	q->sent = 0;
}

/* Opens the output and writes the file header. Returns 0 or -errno. */
static int pg_open(struct pg *pg)
{
	const struct pg_opts *o = &pg->o;
	struct {
		uint32_t magic;
		uint16_t major, minor;
		int32_t thiszone;
		uint32_t sigfigs, snaplen, linktype;
	} h = { .magic = PG_PCAP_MAGIC,
		.major = PG_PCAP_MAJOR,
		.minor = PG_PCAP_MINOR,
		.snaplen = (uint32_t)o->snaplen,
		.linktype = pg->link->linktype };

	pg->qp = calloc(o->qps, sizeof(*pg->qp));
	if (!pg->qp)
		return -ENOMEM;
	for (uint32_t i = 0; i < o->qps; i++)
		pg_qp_init(&pg->qp[i], i, (uint32_t)o->psn_start);
	pg->f = fopen(o->output, "wb");
	if (!pg->f)
		return -errno;
	setvbuf(pg->f, pg->iobuf, _IOFBF, sizeof(pg->iobuf));
	if (fwrite(&h, sizeof(h), 1, pg->f) != 1)
		return pg_errno();
	return 0;
}

static int pg_run(struct pg *pg)
{
	int err = 0;

	for (unsigned long long j = 0; !err && j < pg->o.packets; j++) {
		struct pg_qp *q = &pg->qp[j % pg->o.qps];

		err = pg_data(pg, q);
		if (!err)
			err = pg_replies(pg, q);
	}
	return err;
}

/* Closes the output and returns err, or the close's error. */
static int pg_close(struct pg *pg, int err)
{
	if (pg->f && fclose(pg->f) && !err)
		err = pg_errno();
	free(pg->qp);
	return err;
}

/* ,"NAME":[the 8 values] */
static void pg_print_array(const char *name, const unsigned long long *v)
{
	printf(",\"%s\":[", name);
	for (unsigned i = 0; i < PG_PRIORITIES; i++)
		printf("%s%llu", i ? "," : "", v[i]);
	printf("]");
}

static void pg_print_json(const struct pg *pg)
{
	const struct pg_counts *c = &pg->c;
	unsigned long long qps = pg->o.packets < pg->o.qps ? pg->o.packets : pg->o.qps;

	/* Every packet but the PFC frames is RoCE. Nothing here sends a NAK of
	 * another kind or a PSN behind the last: a reader must count none (the
	 * wrap of the PSN must not look like one). */
	printf("{\"packets\":%llu,\"bytes\":%llu,\"roce_packets\":%llu,\"qps\":%llu,\"send\":%llu,"
	       "\"write\":%llu,\"read_request\":%llu,\"read_response\":%llu,\"ack\":%llu,"
	       "\"cnp\":%llu,\"acks\":%llu,\"naks_psn_sequence\":%llu,\"naks_rnr\":%llu,"
	       "\"naks_other\":0,\"ecn_ce\":%llu,\"psn_gaps\":%llu,\"psn_missing\":%llu,"
	       "\"psn_duplicates\":%llu,\"psn_behind\":0",
	       c->packets, c->bytes, c->packets - c->pfc, qps, c->send, c->write, c->read_request,
	       c->read_response, c->ack, c->cnp, c->acks, c->naks_psn, c->naks_rnr, c->ecn_ce,
	       c->gaps, c->missing, c->dups);
	pg_print_array("pfc_frames", c->pfc_frames);
	pg_print_array("pfc_quanta", c->pfc_quanta);
	printf("}\n");
}

/* ---- command line ---- */

static void pg_usage(FILE *f)
{
	fprintf(f,
		"usage: pcapgen --output FILE [--packets N] [--qps N] [--ipv6 [--ipv6-ext N]]\n"
		"               [--vlan ID]\n"
		"               [--link ethernet|sll|sll2] [--payload N] [--psn-start X]\n"
		"               [--ack-every K] [--nak-every K] [--rnr-every K] [--cnp-every K]\n"
		"               [--ce-every K [--ce-qp N]] [--gap-every K] [--dup-every K]\n"
		"               [--read-every K [--pmtu N]] [--pfc-every K]\n"
		"               [--snaplen N]\n"
		"               [--time-start SECONDS] [--time-step USEC]\n"
		"\n"
		"Writes a pcap file (microsecond timestamps) of RoCEv2 traffic and prints what\n"
		"it holds as one JSON object: packets, bytes (original lengths), roce_packets,\n"
		"qps, send, write, read_request, read_response, ack, cnp, acks (AETH ACKs, READ\n"
		"responses' too), naks_psn_sequence, naks_rnr, naks_other, ecn_ce, psn_gaps,\n"
		"psn_missing, psn_duplicates, psn_behind, and pfc_frames and pfc_quanta (per\n"
		"priority, 0..7).\n"
		"\n"
		"  --output FILE        the capture to write (replaced if it exists)\n"
		"  --packets N          data packets in all, round-robin over the queue pairs,\n"
		"                       RC SEND only and RDMA WRITE only in turn (default %d)\n"
		"  --qps N              queue pairs, each its own pair of addresses and QPNs\n"
		"                       (1..%d, default %d)\n"
		"  --ipv6               addresses in 2001:db8::/32 (default: 198.18.0.0/15)\n"
		"  --ipv6-ext N         the first N (0..%zu) of RFC 8200 4.1's extension headers\n"
		"                       after the IPv6 header: hop-by-hop, destination options,\n"
		"                       routing, fragment, destination options\n"
		"  --vlan ID            an IEEE 802.1Q tag, priority %d (0..%d)\n"
		"  --link NAME          ethernet (LINKTYPE_ETHERNET), sll (LINKTYPE_LINUX_SLL)\n"
		"                       or sll2 (LINKTYPE_LINUX_SLL2); default ethernet\n"
		"  --payload N          payload bytes a data packet (0..%d, default %d)\n"
		"  --psn-start X        first PSN of every queue pair (default 0x%x: wraps)\n"
		"Every K-th data packet of each queue pair (K >= 1; 0, the default, never):\n"
		"  --ack-every K        has the A bit set and is ACKed by the responder\n"
		"  --nak-every K        is followed by a NAK, PSN sequence error\n"
		"  --rnr-every K        is followed by an RNR NAK\n"
		"  --cnp-every K        is followed by a CNP to the requester\n"
		"  --ce-every K         is marked ECN CE (with --ce-qp N, of queue pair N only:\n"
		"                       its responder is congested, the others not)\n"
		"  --gap-every K        comes after one skipped PSN (a gap, one PSN missing)\n"
		"  --dup-every K        repeats the previous PSN (a duplicate; wins over a gap)\n"
		"  --read-every K       is an RDMA READ request for --payload bytes, answered by\n"
		"                       READ response packets of --pmtu bytes (256, 512, 1024,\n"
		"                       2048 or 4096; default %d), one PSN each\n"
		"  --pfc-every K        is followed by a PFC frame from the switch for its\n"
		"                       priority (%d): XOFF, a pause time that varies, every\n"
		"                       fourth an XON\n"
		"Gaps and duplicates are never put on a queue pair's first packet; duplicates\n"
		"do not go with READs.\n"
		"  --snaplen N          keep at most N bytes of each packet, and its original\n"
		"                       length (1..%u, default %u); counts unchanged\n"
		"  --time-start SECONDS the first timestamp (default %llu)\n"
		"  --time-step USEC     from one packet to the next (0..%llu, default 1)\n"
		"Numbers are decimal or 0x hexadecimal.\n"
		"Exit status: 0 written, 1 the file could not be written, 2 usage error.\n",
		PG_PACKETS_DEFAULT, PG_QPS_MAX, PG_QPS_DEFAULT, PG_IPV6_EXT_MAX, PG_VLAN_PCP,
		PG_VLAN_MAX, PG_PAYLOAD_MAX, PG_PAYLOAD_DEFAULT, PG_PSN_START_DEFAULT,
		PG_PMTU_DEFAULT, PG_VLAN_PCP, PG_SNAPLEN_MAX, PG_SNAPLEN_MAX, PG_TIME_START_DEFAULT,
		PG_TIME_STEP_MAX);
}

/* The flags that take a number: its range, and the field of struct pg_opts it sets. */
static const struct pg_num_flag {
	const char *name;
	unsigned long long min, max;
	size_t off; /* of an unsigned long long */
} pg_num_flags[] = {
	{ "packets", 0, PG_PACKETS_MAX, offsetof(struct pg_opts, packets) },
	{ "qps", 1, PG_QPS_MAX, offsetof(struct pg_opts, qps) },
	{ "vlan", 0, PG_VLAN_MAX, offsetof(struct pg_opts, vlan) },
	{ "payload", 0, PG_PAYLOAD_MAX, offsetof(struct pg_opts, payload) },
	{ "psn-start", 0, ROCE_PSN_MASK, offsetof(struct pg_opts, psn_start) },
	{ "snaplen", 1, PG_SNAPLEN_MAX, offsetof(struct pg_opts, snaplen) },
	{ "time-start", 0, UINT32_MAX, offsetof(struct pg_opts, time_start) },
	{ "time-step", 0, PG_TIME_STEP_MAX, offsetof(struct pg_opts, time_step) },
	{ "ce-qp", 0, PG_QPS_MAX, offsetof(struct pg_opts, ce_qp) },
	{ "ipv6-ext", 0, PG_IPV6_EXT_MAX, offsetof(struct pg_opts, ipv6_ext) },
	{ "ack-every", 0, PG_EVERY_MAX, offsetof(struct pg_opts, every[PG_EV_ACK]) },
	{ "nak-every", 0, PG_EVERY_MAX, offsetof(struct pg_opts, every[PG_EV_NAK]) },
	{ "rnr-every", 0, PG_EVERY_MAX, offsetof(struct pg_opts, every[PG_EV_RNR]) },
	{ "cnp-every", 0, PG_EVERY_MAX, offsetof(struct pg_opts, every[PG_EV_CNP]) },
	{ "ce-every", 0, PG_EVERY_MAX, offsetof(struct pg_opts, every[PG_EV_CE]) },
	{ "gap-every", 0, PG_EVERY_MAX, offsetof(struct pg_opts, every[PG_EV_GAP]) },
	{ "dup-every", 0, PG_EVERY_MAX, offsetof(struct pg_opts, every[PG_EV_DUP]) },
	{ "read-every", 0, PG_EVERY_MAX, offsetof(struct pg_opts, every[PG_EV_READ]) },
	{ "pmtu", PG_PMTU_MIN, PG_PAYLOAD_MAX, offsetof(struct pg_opts, pmtu) },
	{ "pfc-every", 0, PG_EVERY_MAX, offsetof(struct pg_opts, every[PG_EV_PFC]) },
};

/* Sets the field of *o that flag f sets from s, decimal or 0x hexadecimal. */
static int pg_parse_num(const struct pg_num_flag *f, const char *s, struct pg_opts *o)
{
	int hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, hex ? 16 : 10);
	if (!isdigit((unsigned char)*s) || errno || *end || v < f->min || v > f->max)
		return labtool_usage_error("pcapgen",
					   "--%s: expected a whole number %llu..%llu, got '%s'",
					   f->name, f->min, f->max, s);
	*(unsigned long long *)((char *)o + f->off) = v;
	return 0;
}

static int pg_parse_link(const char *s, enum pg_link_id *ret)
{
	for (int i = 0; i < PG_LINK_COUNT; i++)
		if (!strcmp(s, pg_links[i].name)) {
			*ret = (enum pg_link_id)i;
			return 0;
		}
	return labtool_usage_error("pcapgen", "--link: expected ethernet, sll or sll2, got '%s'",
				   s);
}

/* Fills *o from argv. Returns 0, 1 after --help, or -EINVAL (said why). */
static int pg_parse(int argc, char **argv, struct pg_opts *o)
{
	enum { O_OUTPUT = 256, O_IPV6, O_LINK, O_HELP, O_NUM /* + index in pg_num_flags */ };
	static const struct option fixed[] = {
		{ "output", required_argument, NULL, O_OUTPUT },
		{ "ipv6", no_argument, NULL, O_IPV6 },
		{ "link", required_argument, NULL, O_LINK },
		{ "help", no_argument, NULL, O_HELP },
	};
	struct option longopts[PG_ARRAY_SIZE(fixed) + PG_ARRAY_SIZE(pg_num_flags) + 1] = { 0 };
	unsigned long long last;
	int c, err = 0;

	memcpy(longopts, fixed, sizeof(fixed));
	for (size_t i = 0; i < PG_ARRAY_SIZE(pg_num_flags); i++)
		longopts[PG_ARRAY_SIZE(fixed) + i] =
			(struct option){ pg_num_flags[i].name, required_argument, NULL,
					 O_NUM + (int)i };
	*o = (struct pg_opts){ .packets = PG_PACKETS_DEFAULT,
			       .qps = PG_QPS_DEFAULT,
			       .psn_start = PG_PSN_START_DEFAULT,
			       .snaplen = PG_SNAPLEN_MAX,
			       .payload = PG_PAYLOAD_DEFAULT,
			       .pmtu = PG_PMTU_DEFAULT,
			       .time_start = PG_TIME_START_DEFAULT,
			       .time_step = 1,
			       .vlan = PG_UNTAGGED };
	opterr = 0;
	while (!err && (c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case O_OUTPUT:
			o->output = optarg;
			break;
		case O_IPV6:
			o->ipv6 = 1;
			break;
		case O_LINK:
			err = pg_parse_link(optarg, &o->link);
			break;
		case O_HELP:
			pg_usage(stdout);
			return 1;
		default:
			if (c >= O_NUM)
				err = pg_parse_num(&pg_num_flags[c - O_NUM], optarg, o);
			else
				err = labtool_usage_error("pcapgen",
							  "unknown or incomplete option '%s'",
							  argv[optind - 1]);
		}
	}
	if (err)
		return err;
	if (optind < argc)
		return labtool_usage_error("pcapgen", "unexpected argument '%s'", argv[optind]);
	if (!o->output)
		return labtool_usage_error("pcapgen", "--output is required");
	if (o->ipv6_ext && !o->ipv6)
		return labtool_usage_error("pcapgen", "--ipv6-ext needs --ipv6");
	if (o->pmtu & (o->pmtu - 1))
		return labtool_usage_error("pcapgen", "--pmtu: expected a power of 2, got %llu",
					   o->pmtu);
	/* a duplicate repeats the PSN before next_psn, which a READ does not own */
	if (o->every[PG_EV_DUP] && o->every[PG_EV_READ])
		return labtool_usage_error("pcapgen", "--dup-every and --read-every: not both");
	/* pcap's timestamps are 32-bit seconds: the last must not pass 2106 */
	last = o->time_start + o->packets * PG_RECORDS_PER_DATA * o->time_step / PG_USEC;
	if (last > UINT32_MAX)
		return labtool_usage_error(
			"pcapgen",
			"--time-start %llu and --time-step %llu: timestamps would "
			"pass 2^32 seconds",
			o->time_start, o->time_step);
	return 0;
}

int main(int argc, char **argv)
{
	static struct pg pg;
	int err;

	err = pg_parse(argc, argv, &pg.o);
	if (err)
		return err > 0 ? 0 : 2;
	pg.link = &pg_links[pg.o.link];
	err = pg_open(&pg);
	if (!err)
		err = pg_run(&pg);
	err = pg_close(&pg, err);
	if (err) {
		fprintf(stderr, "pcapgen: unable to write '%s': %s\n", pg.o.output, strerror(-err));
		return 1;
	}
	pg_print_json(&pg);
	return 0;
}
