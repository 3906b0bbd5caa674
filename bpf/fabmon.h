/* SPDX-License-Identifier: MIT */
#ifndef FABMON_BPF_H
#define FABMON_BPF_H

/*
 * Map layouts shared by the probes (bpf/NAME.bpf.c) and their reader
 * (collector/bpf/). Only types both sides need live here. All fields are
 * host byte order except addresses, which stay as on the wire.
 */

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "roce.h"

enum fm_dir { FM_DIR_INGRESS = 0, FM_DIR_EGRESS = 1, FM_DIR_COUNT };

/* Address families as stored in keys (not AF_*: one byte, same on both sides). */
#define FM_FAMILY_IPV4 4
#define FM_FAMILY_IPV6 6

/*
 * One direction of one flow seen by the tc probe on one interface. saddr and
 * daddr are as in the packet (for ingress the peer is saddr, for egress
 * daddr); IPv4 addresses use the first 4 bytes, the rest zero.
 */
struct fm_flow_key {
	__u8 saddr[16];
	__u8 daddr[16];
	__u16 sport; /* host order */
	__u16 dport;
	__u32 ifindex;
	__u8 family; /* FM_FAMILY_* */
	__u8 proto; /* IPPROTO_TCP or IPPROTO_UDP */
	__u8 dir; /* enum fm_dir */
	__u8 pad;
};

struct fm_flow_val {
	__u64 bytes; /* skb->len: the L2 frame as the stack sees it */
	__u64 packets;
	__u64 ect; /* packets marked ECT(0) or ECT(1) (RFC 3168) */
	__u64 ce; /* packets marked CE */
	__u32 syn, fin, rst;
	__u32 pad;
	__u64 first_ns; /* bpf_ktime_get_coarse_ns() of the first and last packet */
	__u64 last_ns;
};

/*
 * Per interface and direction, per CPU (user space sums the CPUs). Counted in
 * a per-CPU array slot (struct fm_if_slot) where the interface's slot is free
 * on that CPU, else in a per-CPU hash keyed by struct fm_if_key.
 */
struct fm_if_key {
	__u32 ifindex;
	__u32 dir;
};

struct fm_if_val {
	__u64 packets;
	__u64 bytes;
	__u64 unparsed; /* not IPv4/IPv6 TCP/UDP, or cut short: counted, passed */
	__u64 flows_new; /* flow entries this probe created (fill and eviction accounting) */
	__u64 flow_update_failed; /* a new flow could not be stored */
	__u64 roce; /* RoCEv2 packets */
	__u64 roce_unparsed; /* UDP 4791 too short for its BTH, or the AETH or RETH it has */
	__u64 qps_new; /* QP entries this probe created */
	__u64 qp_update_failed; /* a new QP could not be stored */
};

/*
 * fm_ifslots holds FM_IF_SLOTS slots: interface ifindex, direction dir counts
 * in slot FM_IF_SLOT(ifindex, dir) on a CPU whose slot there is still free
 * (ifindex 0) or already its own. Interfaces whose ifindex agrees in the low
 * bits share a slot; the first to use it on a CPU keeps it (until the agent
 * reloads the probe), the others count in the hash. The selected interfaces
 * of a node are few, so 32 ifindex values a direction keep the user side's
 * read of every slot on every CPU small.
 */
#define FM_IF_SLOTS 64
/* fm_ifstats' capacity: interfaces a direction whose slot another took */
#define FM_IF_HASH_MAX 256
#define FM_IF_SLOT(ifindex, dir) ((((ifindex) & (FM_IF_SLOTS / 2 - 1)) << 1) | (dir))

struct fm_if_slot {
	__u32 ifindex; /* the interface whose counts these are; 0: free */
	__u32 pad;
	struct fm_if_val v;
};

/* What the last request of a QP took from its PSN on (fm_qp_val.last_span). */
enum fm_span {
	FM_SPAN_NONE, /* no request yet, or a READ whose RETH was cut: the next starts again */
	FM_SPAN_ONE, /* one PSN */
	/* an RDMA READ of last_read_len bytes: a PSN per response packet,
	 * counted when the next request comes, by the PMTU its path has shown
	 * by then (its own responses usually come first) */
	FM_SPAN_READ,
};

/* One RoCEv2 queue pair, seen in one direction between two addresses. */
struct fm_qp_key {
	__u8 saddr[16];
	__u8 daddr[16];
	__u32 ifindex;
	__u32 dest_qp; /* BTH destination QP, 24 bits */
	__u8 family;
	__u8 dir;
	__u8 pad[2];
};

struct fm_qp_val {
	__u64 bytes;
	__u64 packets;
	__u64 by_class[ROCE_CLASS_COUNT]; /* packets per enum roce_class */
	__u64 acks; /* AETH syndrome ACK */
	__u64 nak_psn; /* NAK: PSN sequence error */
	__u64 nak_rnr; /* RNR NAK */
	__u64 nak_invalid; /* NAK: invalid request */
	__u64 nak_access; /* NAK: remote access error */
	__u64 nak_operation; /* NAK: remote operational error */
	__u64 nak_other; /* other NAK codes (invalid RD request, reserved) */
	__u64 psn_gaps; /* requests ahead of the PSN after the last request's */
	__u64 psn_missing; /* PSNs skipped over by those gaps */
	__u64 psn_dups; /* requests with the last PSN again */
	__u64 psn_behind; /* requests behind the last PSN */
	__u64 ce; /* ECN CE-marked packets */
	__u32 last_psn; /* of the last request */
	__u32 last_span; /* enum fm_span: what it took from last_psn on */
	__u32 last_read_len; /* FM_SPAN_READ: its DMA length */
	__u32 pad;
	__u64 last_ns;
};

/*
 * The path between a READ requester and its responder, keyed by their
 * addresses: the BTH names only the destination QP, so a READ response
 * (to the requester's QP) cannot be tied to the QP its request went to,
 * but both cross this path. Its value is the log2 of the largest path MTU
 * the READ responses on it showed (roce_pmtu_shift_of()).
 */
struct fm_path_key {
	__u8 requester[16];
	__u8 responder[16];
	__u8 family;
	__u8 pad[3];
};

/* Network namespaces the TCP probes can be limited to (bpf_netns). */
#define FM_NETNS_MAX 64

/* A wait for ack progress this long, data in flight, is a loss's: acks of
 * data that moves come a round trip apart (50 ms at most through the lab's
 * queues), and every retransmission timeout waits longer (Linux's least RTO
 * is 200 ms, TCP_RTO_MIN; RFC 6298 2.4 allows it). */
#define FM_ACK_WAIT_NS (100 * 1000000ULL)

/* Transfer duration buckets (struct fm_tcp_val): 1 ms .. 16.384 s, and the rest. */
#define FM_XFER_BUCKETS 16
#define FM_XFER_BUCKET0_NS 1000000ULL
/* Smaller transfers are requests and replies, not hand-offs. */
#define FM_XFER_MIN_BYTES 65536

/*
 * One TCP connection as the tracepoints see it, keyed from the local side:
 * saddr/sport are this host's.
 */
struct fm_tcp_key {
	__u8 saddr[16];
	__u8 daddr[16];
	__u16 sport;
	__u16 dport;
	__u32 netns; /* network namespace inode number, as stat(/proc/PID/ns/net) gives */
	__u8 family; /* FM_FAMILY_* */
	__u8 pad[3];
};

struct fm_tcp_val {
	__u64 retransmits; /* tcp:tcp_retransmit_skb */
	__u64 probes; /* tcp:tcp_probe events (ACKs processed) */
	__u32 srtt_us; /* smoothed RTT, microseconds (tcp_sock srtt_us >> 3) */
	__u32 snd_cwnd; /* segments */
	__u32 in_flight; /* snd_nxt - snd_una, bytes */
	__u32 snd_una; /* to see ack progress */
	__u64 progress_ns; /* when snd_una last moved forward, or the first tcp_probe */
	__u64 last_ns; /* last event */
	__u32 unsent; /* write_seq - snd_nxt: queued, not yet sent (a zero window holds it) */
	__u32 snd_wnd; /* the peer's last advertised window, bytes */
	__u32 closed; /* the connection began to close: nothing pending any more */
	/*
	 * Whether the peer's application reads. snd_una + snd_wnd, the right
	 * edge of the peer's window, moves as it reads (RFC 9293 3.8.6), but
	 * also as its kernel grows the window it offers (tcp_grow_window()),
	 * read or not. A read is counted when the edge moved at least half as
	 * far as the acknowledged data since the last read: a paused reader's
	 * window grew by 2 MB while 26 MB were acked (lab, 24 MB window).
	 */
	__u32 read_edge; /* the edge at the last read */
	__u32 read_una; /* snd_una then */
	__u64 read_ns; /* when, or the first tcp_probe */
	/*
	 * When ack progress last resumed after FM_ACK_WAIT_NS or more without
	 * it, data in flight: a retransmission timeout's, or a path's back up.
	 * The ACK that ends such a wait carries the window edge of before the
	 * receiver could read what it fills in, so it is no sign of a reader
	 * that stopped (collector/bpf/tcp_waits.h). 0: none.
	 */
	__u64 resumed_ns;
	__u64 bytes_acked; /* sum of snd_una's advances: data the peer took */
	/*
	 * The kernel's delivery rate estimate (net/ipv4/tcp_rate.c, what `ss -i`
	 * shows as delivery_rate), bytes per second; 0 until the first sample.
	 */
	__u64 delivery_rate;
	/*
	 * Bulk transfers: from the moment data became pending on an idle
	 * connection until the last of it was acknowledged, if at least
	 * FM_XFER_MIN_BYTES were. The start is seen at the first ACK, and
	 * taken as the send time of the first segment (tcp_sock's
	 * first_tx_mstamp), or one smoothed RTT earlier without it. Durations go to a histogram whose
	 * bucket i counts transfers of at most 1 ms * 2^i (the last: any).
	 */
	__u64 xfer_start_ns; /* 0: idle */
	__u64 xfer_acked0; /* bytes_acked when the transfer began */
	__u64 xfers;
	__u64 xfer_ns; /* summed durations */
	__u64 xfer_bytes; /* summed bytes */
	__u64 xfer_hist[FM_XFER_BUCKETS];
	/*
	 * The same periods of any size, summed: how long the connection had
	 * data to move. Bytes acknowledged over it is the path's rate while
	 * busy, which idle time between a collective's steps does not dilute.
	 * A period under way counts from xfer_start_ns to last_ns.
	 */
	__u64 busy_ns;
};

/* skb:kfree_skb reasons are an enum of about 100 values (include/net/dropreason-core.h);
 * larger ones are counted in the last slot. */
#define FM_DROP_REASONS 256

#endif
