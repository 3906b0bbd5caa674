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
 * or PACKET_PAUSE_LINK for the whole link's; the pause time they asked, in
 * quanta of 512 bit times; and, where the link's speed is known, the time
 * they paused it. */
struct capture_pause {
	uint64_t frames[PACKET_PAUSE_SLOTS], quanta[PACKET_PAUSE_SLOTS];
	/* the last timed frame's time and the end of the pause it asked, and
	 * the time paused before it (timed frames only) */
	uint64_t last_ns[PACKET_PAUSE_SLOTS], until_ns[PACKET_PAUSE_SLOTS];
	uint64_t paused_ns[PACKET_PAUSE_SLOTS];
	uint64_t timed; /* the slots with a timed frame: bit i for slot i */
};

/*
 * Counts pkt (PACKET_PAUSE), captured at ts_ns, into p, once in each slot it
 * names. On a link of link_mbps Mb/s (0: unknown, and the frame is counted
 * but not timed) each frame sets its slots' pause to end its own time on
 * (802.1Qbb 36.1.3.3, 802.3 31B.3.1: a new frame replaces the pause under
 * way, 0 ends it): the time paused is the union of the frames' pauses, each
 * cut short by the next. A frame stamped before the last counts as at it.
 */
void capture_pause_add(struct capture_pause *p, const struct packet *pkt, uint64_t ts_ns,
		       unsigned link_mbps);

/* Slot i's time paused up to now_ns, in ns: a counter while now_ns does not
 * go back. 0 for a slot with no timed frame. */
uint64_t capture_pause_paused_ns(const struct capture_pause *p, unsigned i, uint64_t now_ns);

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
 * 512, 1024, 2048 or 4096. link_mbps times the stats' PAUSE and PFC frames
 * (capture_pause_add()). NULL on allocation failure or another roce_pmtu.
 */
struct capture *capture_new(unsigned max_entries, unsigned roce_pmtu, unsigned link_mbps);
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
