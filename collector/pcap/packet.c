/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "collector/pcap/packet.h"
#include "bpf/account.h"

/* IEEE 802.3 / 802.1Q ethertypes (include/uapi/linux/if_ether.h) */
#define ETH_P_IPV4 0x0800
#define ETH_P_IPV6 0x86dd
#define ETH_P_VLAN 0x8100
#define ETH_P_QINQ 0x88a8
#define ETH_HLEN 14
/* 802.1ad outer + 802.1Q inner, as the probe (bpf/flow.bpf.c) */
#define VLAN_MAX 2
#define VLAN_HLEN 4
#define VLAN_VID_MASK 0x0fff
/* https://www.tcpdump.org/linktypes/LINKTYPE_LINUX_SLL.html: the protocol
 * is the header's last 2 bytes; LINKTYPE_LINUX_SLL2.html: its first 2 */
#define SLL_HLEN 16
#define SLL_PROTO_OFF 14
#define SLL2_HLEN 20
#define IPV4_HLEN 20
#define IPV4_OFFSET_MASK 0x1fff /* RFC 791: fragment offset bits */
#define IPV6_HLEN 40
/* RFC 8200 4.1: hop-by-hop, destination options, routing, fragment and
 * destination options again (once before routing, once before the upper
 * layer), as the probe (bpf/flow.bpf.c) */
#define IPV6_EXT_MAX 5
#define IPV6_FRAG_OFFSET_MASK 0xfff8
#define TCP_HLEN 20
#define UDP_HLEN 8

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* A frame being parsed: where we are, where the capture ends. */
struct cursor {
	const uint8_t *p, *end;
	const char **why;
};

/* Fails the parse: cut short (have fewer than want bytes) or malformed. */
static int cut(struct cursor *c, const char *why)
{
	*c->why = why;
	return -EMSGSIZE;
}

static int bad(struct cursor *c, const char *why)
{
	*c->why = why;
	return -EBADMSG;
}

static int need(const struct cursor *c, size_t n)
{
	return (size_t)(c->end - c->p) >= n;
}

/*
 * Moves past the link header to the network layer and any VLAN tags.
 * Returns the ethertype, or a negative errno.
 */
static int parse_link(int linktype, struct cursor *c, struct packet *pkt)
{
	int type;

	switch (linktype) {
	case PACKET_LINK_ETHERNET:
		if (!need(c, ETH_HLEN))
			return cut(c, "Ethernet header cut short");
		type = get16(c->p + 12);
		c->p += ETH_HLEN;
		break;
	case PACKET_LINK_LINUX_SLL:
		if (!need(c, SLL_HLEN))
			return cut(c, "Linux cooked (SLL) header cut short");
		type = get16(c->p + SLL_PROTO_OFF);
		c->p += SLL_HLEN;
		break;
	case PACKET_LINK_LINUX_SLL2:
		if (!need(c, SLL2_HLEN))
			return cut(c, "Linux cooked (SLL2) header cut short");
		type = get16(c->p);
		c->p += SLL2_HLEN;
		break;
	default:
		*c->why = "link type not supported (Ethernet, Linux SLL and SLL2 are)";
		return -EPROTONOSUPPORT;
	}
	/* a tag is TCI then the encapsulated ethertype, in Ethernet and, as
	 * libpcap puts tags back into cooked captures, in SLL alike */
	for (int i = 0; i < VLAN_MAX && (type == ETH_P_VLAN || type == ETH_P_QINQ); i++) {
		if (!need(c, VLAN_HLEN))
			return cut(c, "VLAN tag cut short");
		if (i == 0)
			pkt->vlan = get16(c->p) & VLAN_VID_MASK;
		type = get16(c->p + 2);
		c->p += VLAN_HLEN;
	}
	return type;
}

/* Moves past the IPv4 header; returns the protocol or a negative errno. */
static int parse_ipv4(struct cursor *c, struct packet *pkt)
{
	const uint8_t *ip = c->p;
	size_t hlen;

	if (!need(c, IPV4_HLEN))
		return cut(c, "IPv4 header cut short");
	if (ip[0] >> 4 != 4)
		return bad(c, "IPv4 header with another version");
	hlen = (size_t)(ip[0] & 0xf) * 4;
	if (hlen < IPV4_HLEN)
		return bad(c, "IPv4 header length under 20");
	if (!need(c, hlen))
		return cut(c, "IPv4 options cut short");
	pkt->flow.family = FM_FAMILY_IPV4;
	memcpy(pkt->flow.saddr, ip + 12, 4);
	memcpy(pkt->flow.daddr, ip + 16, 4);
	pkt->ecn = ip[1] & FM_ECN_MASK;
	/* later fragments carry no transport header */
	pkt->l4 = !(get16(ip + 6) & IPV4_OFFSET_MASK);
	c->p += hlen;
	return ip[9];
}

/* True for the extension headers skipped to reach the transport header. */
static int ipv6_ext(int next)
{
	return next == IPPROTO_HOPOPTS || next == IPPROTO_ROUTING || next == IPPROTO_FRAGMENT ||
	       next == IPPROTO_DSTOPTS;
}

/* Moves past the IPv6 header and the extension headers before the
 * transport; returns the next header or a negative errno. */
static int parse_ipv6(struct cursor *c, struct packet *pkt)
{
	const uint8_t *ip = c->p;
	int next;

	if (!need(c, IPV6_HLEN))
		return cut(c, "IPv6 header cut short");
	if (ip[0] >> 4 != 6)
		return bad(c, "IPv6 header with another version");
	pkt->flow.family = FM_FAMILY_IPV6;
	memcpy(pkt->flow.saddr, ip + 8, 16);
	memcpy(pkt->flow.daddr, ip + 24, 16);
	/* traffic class is bits 4-11 of the first word: ECN is bits 4-5 of byte 1 */
	pkt->ecn = (ip[1] >> 4) & FM_ECN_MASK;
	pkt->l4 = 1;
	next = ip[6];
	c->p += IPV6_HLEN;
	for (int i = 0; i < IPV6_EXT_MAX && ipv6_ext(next); i++) {
		size_t len;

		if (!need(c, 8))
			return cut(c, "IPv6 extension header cut short");
		if (next == IPPROTO_FRAGMENT) {
			pkt->l4 = !(get16(c->p + 2) & IPV6_FRAG_OFFSET_MASK);
			len = 8;
		} else {
			/* RFC 8200 4.3: in 8-octet units, not counting the first 8 */
			len = ((size_t)c->p[1] + 1) * 8;
		}
		if (!need(c, len))
			return cut(c, "IPv6 extension header cut short");
		next = c->p[0];
		c->p += len;
	}
	if (ipv6_ext(next))
		return bad(c, "more IPv6 extension headers than the 5 of RFC 8200 4.1");
	return next;
}

/* The BTH (and AETH or RETH) after a UDP header to port 4791. */
static void parse_roce(struct cursor *c, struct packet *pkt)
{
	if (roce_parse_bth(c->p, c->end, &pkt->bth) < 0) {
		pkt->roce_unparsed = 1;
		return;
	}
	pkt->kind = PACKET_ROCE;
	if (roce_classify(pkt->bth.opcode) == ROCE_CLASS_READ_REQUEST) {
		pkt->has_reth = roce_read_len(c->p, c->end, pkt->bth.opcode, &pkt->read_len) == 0;
		pkt->roce_unparsed = !pkt->has_reth;
		return;
	}
	if (!roce_has_aeth(pkt->bth.opcode))
		return;
	if (!need(c, ROCE_BTH_LEN + ROCE_AETH_LEN)) {
		pkt->roce_unparsed = 1;
		return;
	}
	/* IBTA 9.3.5: the syndrome is the AETH's first byte */
	pkt->aeth_syndrome = c->p[ROCE_BTH_LEN];
	pkt->has_aeth = 1;
}

/* A MAC Control frame at c: PACKET_PAUSE for a PAUSE or PFC frame, else
 * PACKET_OTHER. */
static int parse_mac_control(struct cursor *c, struct packet *pkt)
{
	unsigned opcode, vector;

	if (!need(c, 2))
		return cut(c, "MAC Control opcode cut short");
	opcode = get16(c->p);
	if (opcode == PACKET_MACC_PAUSE) {
		if (!need(c, 4))
			return cut(c, "PAUSE time cut short");
		pkt->pause_slots = 1u << PACKET_PAUSE_LINK;
		pkt->pause_quanta[PACKET_PAUSE_LINK] = get16(c->p + 2);
	} else if (opcode == PACKET_MACC_PFC) {
		if (!need(c, 4 + 2 * PACKET_PAUSE_LINK))
			return cut(c, "PFC pause times cut short");
		/* 802.1Qbb 36.1.3.2: the vector's low 8 bits, one a priority */
		vector = get16(c->p + 2) & 0xff;
		pkt->pause_slots = (uint16_t)vector;
		for (unsigned i = 0; i < PACKET_PAUSE_LINK; i++)
			if (vector & 1u << i)
				pkt->pause_quanta[i] = get16(c->p + 4 + 2 * i);
	} else {
		return 0;
	}
	pkt->kind = PACKET_PAUSE;
	return 0;
}

int packet_parse(int linktype, const uint8_t *data, size_t caplen, struct packet *ret,
		 const char **ret_why)
{
	struct cursor c = { data, data + caplen, ret_why };
	int type, proto;

	memset(ret, 0, sizeof(*ret));
	*ret_why = "";
	type = parse_link(linktype, &c, ret);
	if (type < 0)
		return type;
	if (type == PACKET_ETH_P_LLDP) {
		ret->kind = PACKET_LLDP;
		ret->lldp = c.p;
		ret->lldp_len = (size_t)(c.end - c.p);
		return 0;
	}
	if (type == PACKET_ETH_P_MAC_CONTROL)
		return parse_mac_control(&c, ret);
	if (type == ETH_P_IPV4)
		proto = parse_ipv4(&c, ret);
	else if (type == ETH_P_IPV6)
		proto = parse_ipv6(&c, ret);
	else
		return 0; /* PACKET_OTHER */
	if (proto < 0)
		return proto;
	if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
		return 0;
	ret->flow.proto = (uint8_t)proto;
	ret->kind = PACKET_FLOW;
	if (!ret->l4)
		return 0;
	if (!need(&c, proto == IPPROTO_TCP ? TCP_HLEN : UDP_HLEN))
		return cut(&c,
			   proto == IPPROTO_TCP ? "TCP header cut short" : "UDP header cut short");
	ret->flow.sport = get16(c.p);
	ret->flow.dport = get16(c.p + 2);
	if (proto == IPPROTO_TCP) {
		ret->tcp_flags = c.p[FM_TCP_FLAGS_OFF];
		return 0;
	}
	ret->udp_len = get16(c.p + 4);
	c.p += UDP_HLEN;
	if (ret->flow.dport == ROCE_UDP_PORT)
		parse_roce(&c, ret);
	return 0;
}
