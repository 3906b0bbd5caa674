/* SPDX-License-Identifier: MIT */
#ifndef FABMON_CAPTURE_H
#define FABMON_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/fabmon.h"
#include "collector/kmap.h"
#include "collector/pcap/packet.h"

/*
 * Counts captured frames (libpcap: a capture file or a mirror port) into
 * per-flow and per-queue-pair tables laid out as the tc probe's maps
 * (struct fm_flow_key/val, fm_qp_key/val), updated by the probe's own
 * accounting (bpf/account.h). A capture has no direction: every packet
 * counts towards its destination (keys have dir FM_DIR_EGRESS, whose peer
 * is the destination), so both directions of a conversation are two flows
 * told apart by their addresses. The interface is the one captured on (0
 * for a file).
 */

/* PAUSE and PFC frames (packet.h's PACKET_PAUSE), per slot: a priority's,
 * or PACKET_PAUSE_LINK for the whole link's; and the pause time they asked,
 * in quanta of 512 bit times. */
struct capture_pause {
	uint64_t frames[PACKET_PAUSE_SLOTS], quanta[PACKET_PAUSE_SLOTS];
};

/* Counts pkt (PACKET_PAUSE) into p, once in each slot it names. */
void capture_pause_add(struct capture_pause *p, const struct packet *pkt);

struct capture_stats {
	uint64_t packets, bytes; /* every frame, original length */
	/* not IPv4/IPv6 TCP/UDP, LLDP, PAUSE or PFC, or cut short (the probe's
	 * unparsed) */
	uint64_t unparsed;
	uint64_t roce; /* RoCEv2 packets whose BTH parsed */
	/* UDP 4791 frames cut short (the probe's roce_unparsed is their sum):
	 * before the BTH, so not among the RoCEv2 packets (counted per flow
	 * only), or after it, before the AETH or RETH their opcode has, so
	 * among them (counted per QP without their ACK, NAK or READ length) */
	uint64_t roce_cut_bth, roce_cut_after_bth;
	uint64_t lldp; /* LLDP frames */
	struct capture_pause pause;
	uint64_t flows_full, qps_full; /* frames not counted per flow / QP: table full */
};

struct capture;

/*
 * Tables of up to max_entries flows, as many QPs and as many READ paths.
 * roce_pmtu is the path MTU an RDMA READ's PSNs are counted by until READ
 * responses on its path show one (bpf/account.h, fm_read_span()): 256,
 * 512, 1024, 2048 or 4096. NULL on allocation failure or another roce_pmtu.
 */
struct capture *capture_new(unsigned max_entries, unsigned roce_pmtu);
void capture_free(struct capture *c);

/*
 * Counts the frame data[0..caplen), len bytes on the wire, of link type
 * linktype, captured on interface ifindex at ts_ns; *ret_pkt is its parse. Returns 0, or the
 * negative errno of packet_parse() with *ret_why (the frame then counts as
 * unparsed; a frame of an unsupported link type counts as nothing else).
 * A UDP 4791 frame cut before its BTH, AETH or RETH (ret_pkt->roce_unparsed) is
 * counted as far as it goes and returns 0 with *ret_why saying what was cut.
 */
int capture_packet(struct capture *c, uint32_t ifindex, int linktype, const uint8_t *data,
		   size_t caplen, size_t len, uint64_t ts_ns, struct packet *ret_pkt,
		   const char **ret_why);

const struct capture_stats *capture_stats(const struct capture *c);

/* The tables, for reading (kmap_sweep with a callback that returns 1). */
struct kmap *capture_flows(struct capture *c);
struct kmap *capture_qps(struct capture *c);

#endif
