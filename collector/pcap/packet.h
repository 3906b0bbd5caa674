/* SPDX-License-Identifier: MIT */
#ifndef FABMON_PACKET_H
#define FABMON_PACKET_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/fabmon.h"

/*
 * The user-space parse of one captured frame, for the libpcap path (capture
 * files and mirror ports): what the tc probe learns in the kernel
 * (bpf/flow.bpf.c), from a byte buffer instead of an skb, plus LLDP. The
 * RoCEv2 headers are read by bpf/roce.h, the same code the probe runs.
 */

/* The link types read (LINKTYPE_* of https://www.tcpdump.org/linktypes.html). */
#define PACKET_LINK_ETHERNET 1
#define PACKET_LINK_LINUX_SLL 113 /* "Linux cooked capture" v1: 16-byte header */
#define PACKET_LINK_LINUX_SLL2 276 /* v2: 20-byte header */

/* IEEE 802.1AB: the LLDP ethertype. */
#define PACKET_ETH_P_LLDP 0x88cc

/* IEEE 802.3 Annex 31B (MAC Control): its ethertype, and the opcodes of a
 * PAUSE (31B.3: one pause time, for the whole link) and of a priority
 * flow control frame (IEEE 802.1Qbb 36.1.3, opcode 0x0101: a class-enable
 * vector, then a pause time for each of the 8 priorities). A pause time is
 * in quanta of 512 bit times at the link's speed; 0 resumes at once (XON). */
#define PACKET_ETH_P_MAC_CONTROL 0x8808
#define PACKET_MACC_PAUSE 0x0001
#define PACKET_MACC_PFC 0x0101
/* The pause slot of the whole link (802.3x PAUSE), after the 8 priorities'. */
#define PACKET_PAUSE_LINK 8
#define PACKET_PAUSE_SLOTS 9

enum packet_kind {
	PACKET_OTHER, /* parsed as far as needed: not IP TCP/UDP, not LLDP (ARP, ...) */
	PACKET_FLOW, /* IPv4/IPv6 TCP or UDP: flow is filled */
	PACKET_ROCE, /* a flow to UDP 4791 whose BTH parsed: flow and bth too */
	PACKET_LLDP, /* an LLDP frame: lldp/lldp_len hold the LLDPDU */
	PACKET_PAUSE, /* a PAUSE or PFC frame: pause_slots, pause_quanta */
};

struct packet {
	enum packet_kind kind;
	/* ifindex and dir are left 0: a capture has neither */
	struct fm_flow_key flow;
	uint8_t ecn; /* RFC 3168 bits of TOS / traffic class */
	uint8_t tcp_flags; /* byte 13 of the TCP header; 0 for UDP */
	uint8_t l4; /* the transport header was read (not a later fragment) */
	uint16_t vlan; /* outermost 802.1Q/802.1ad VLAN ID; 0 untagged */
	struct roce_bth bth; /* PACKET_ROCE */
	int has_aeth; /* PACKET_ROCE: the opcode carries an AETH and it was read */
	uint8_t aeth_syndrome;
	int has_reth; /* PACKET_ROCE: an RDMA READ request whose RETH was read */
	uint32_t read_len; /* has_reth: its DMA length */
	uint16_t udp_len; /* UDP: the header's length field (header included) */
	/* UDP 4791 but the BTH (then PACKET_FLOW), or the AETH or RETH its
	 * opcode has (then PACKET_ROCE without has_aeth or has_reth), is cut
	 * short: the probe's fabmon_bpf_roce_unparsed_packets_total */
	int roce_unparsed;
	const uint8_t *lldp; /* PACKET_LLDP: the LLDPDU (after the ethertype) */
	size_t lldp_len;
	/* PACKET_PAUSE: bit i for each slot the frame names (a PFC frame's
	 * enabled priorities, or PACKET_PAUSE_LINK), and the pause time it
	 * asks of each, in quanta */
	uint16_t pause_slots;
	uint16_t pause_quanta[PACKET_PAUSE_SLOTS];
};

/*
 * Parses the frame data[0..caplen) of link type linktype. Returns 0 and fills
 * *ret, or a negative errno with *ret_why set to a static message:
 *  -EPROTONOSUPPORT  a link type not listed above;
 *  -EMSGSIZE         the frame is cut short before a header it needs (a
 *                    snaplen-cut or truncated record): "IPv4 header cut short";
 *  -EBADMSG          a header is malformed: "IPv4 version 7", "IPv4 header
 *                    length 12".
 * A frame that is none of those (ARP, another MAC Control opcode, an unknown
 * ethertype) is PACKET_OTHER, not an error. Never reads outside
 * data[0..caplen). Pure.
 */
int packet_parse(int linktype, const uint8_t *data, size_t caplen, struct packet *ret,
		 const char **ret_why);

#endif
