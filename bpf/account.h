/* SPDX-License-Identifier: MIT */
#ifndef FABMON_ACCOUNT_H
#define FABMON_ACCOUNT_H

/*
 * How one packet changes its flow's and its queue pair's counts, shared by
 * the tc probe (bpf/flow.bpf.c) and the libpcap path (collector/pcap/capture.c)
 * so that a capture file and the kernel count the same traffic the same way.
 *
 * In the probe a flow or QP value lives in an LRU map that every CPU updates,
 * so counters are added atomically; user space has one thread per table and
 * adds plainly.
 */

#include "fabmon.h"

#ifdef __bpf__
#define FM_ADD(p, n) __sync_fetch_and_add((p), (n))
#else
#define FM_ADD(p, n) (*(p) += (n))
#endif

/* RFC 9293 3.1: the flags are byte 13 of the TCP header */
#define FM_TCP_FLAGS_OFF 13
#define FM_TCP_FIN 0x01
#define FM_TCP_SYN 0x02
#define FM_TCP_RST 0x04
/* RFC 3168 5: the low two bits of TOS / traffic class; 01 and 10 are ECT, 11 is CE */
#define FM_ECN_MASK 0x3
#define FM_ECN_CE 0x3

/* Counts one packet of len bytes with ECN bits ecn and TCP flags tcp_flags
 * (0 for UDP) seen at now. */
static inline __attribute__((always_inline)) void fm_flow_add(struct fm_flow_val *v, __u8 ecn,
							      __u8 tcp_flags, __u32 len, __u64 now)
{
	FM_ADD(&v->bytes, len);
	FM_ADD(&v->packets, 1);
	if (ecn == FM_ECN_CE)
		FM_ADD(&v->ce, 1);
	else if (ecn)
		FM_ADD(&v->ect, 1);
	if (tcp_flags & FM_TCP_SYN)
		FM_ADD(&v->syn, 1);
	if (tcp_flags & FM_TCP_FIN)
		FM_ADD(&v->fin, 1);
	if (tcp_flags & FM_TCP_RST)
		FM_ADD(&v->rst, 1);
	v->last_ns = now;
}

/* Counts an AETH syndrome (IBTA 9.3.5, table 44). */
static inline __attribute__((always_inline)) void fm_qp_aeth(struct fm_qp_val *v, __u8 syndrome)
{
	switch (syndrome >> 5) {
	case ROCE_AETH_ACK:
		FM_ADD(&v->acks, 1);
		break;
	case ROCE_AETH_RNR_NAK:
		FM_ADD(&v->nak_rnr, 1);
		break;
	case ROCE_AETH_NAK:
		switch (syndrome & 0x1f) {
		case ROCE_NAK_PSN_SEQUENCE:
			FM_ADD(&v->nak_psn, 1);
			break;
		case ROCE_NAK_INVALID_REQUEST:
			FM_ADD(&v->nak_invalid, 1);
			break;
		case ROCE_NAK_REMOTE_ACCESS:
			FM_ADD(&v->nak_access, 1);
			break;
		case ROCE_NAK_REMOTE_OPERATION:
			FM_ADD(&v->nak_operation, 1);
			break;
		default:
			FM_ADD(&v->nak_other, 1);
			break;
		}
		break;
	}
}

/* A request as the PSN order sees it (fm_qp_add()). */
struct fm_req {
	__u32 span; /* enum fm_span: what it takes */
	__u32 read_len; /* FM_SPAN_READ: its DMA length */
	__u32 pmtu_shift; /* if fm_qp_wants_pmtu(): log2 of its path's PMTU (fm_pmtu_shift()) */
};

/*
 * Places a request's PSN against the last request's. Unlike the counters
 * this is not atomic in the probe: two CPUs could interleave their read and
 * write of last_psn. That is accepted: one QP's packets normally land on one
 * CPU (RSS hashes the UDP source port, which RoCEv2 senders pick per QP, to
 * one RX queue; a QP's sends leave from one context), and a lost race costs
 * a miscount, never a packet.
 */
static inline __attribute__((always_inline)) void fm_qp_psn(struct fm_qp_val *v, __u32 psn,
							    const struct fm_req *rq)
{
	__u32 span = 1, missing;

	if (v->last_span == FM_SPAN_READ)
		span = roce_read_psns(v->last_read_len, rq->pmtu_shift);
	switch (v->last_span == FM_SPAN_NONE ? ROCE_PSN_NEXT
					     : roce_psn_order(v->last_psn, span, psn, &missing)) {
	case ROCE_PSN_NEXT:
		break;
	case ROCE_PSN_GAP:
		FM_ADD(&v->psn_gaps, 1);
		FM_ADD(&v->psn_missing, missing);
		break;
	case ROCE_PSN_DUP:
		FM_ADD(&v->psn_dups, 1);
		return;
	case ROCE_PSN_BEHIND:
		/* a retransmission or reordering must not move the sequence back */
		FM_ADD(&v->psn_behind, 1);
		return;
	}
	v->last_psn = psn;
	v->last_span = rq->span;
	v->last_read_len = rq->read_len;
}

/* True if placing the packet with BTH bth needs its path's PMTU (struct fm_req). */
static inline __attribute__((always_inline)) int fm_qp_wants_pmtu(const struct fm_qp_val *v,
								  const struct roce_bth *bth)
{
	return v->last_span == FM_SPAN_READ && roce_is_request(roce_classify(bth->opcode));
}

/* Counts one RoCEv2 packet of len bytes with BTH bth, seen at now; a
 * request rq is placed in the PSN order. The AETH syndrome is counted apart
 * (fm_qp_aeth), once it has been read. */
static inline __attribute__((always_inline)) void fm_qp_add(struct fm_qp_val *v,
							    const struct roce_bth *bth,
							    const struct fm_req *rq, __u8 ecn,
							    __u32 len, __u64 now)
{
	enum roce_class c = roce_classify(bth->opcode);

	FM_ADD(&v->bytes, len);
	FM_ADD(&v->packets, 1);
	FM_ADD(&v->by_class[c], 1);
	if (ecn == FM_ECN_CE)
		FM_ADD(&v->ce, 1);
	if (roce_is_request(c))
		fm_qp_psn(v, bth->psn, rq);
	v->last_ns = now;
}

/*
 * Fills *ret with the READ path (fabmon.h) of a packet on QP key qk: a
 * request goes from the requester, a READ response (response 1) to it.
 */
static inline __attribute__((always_inline)) void
fm_path_key_of(struct fm_path_key *ret, const struct fm_qp_key *qk, int response)
{
	__builtin_memcpy(ret->requester, response ? qk->daddr : qk->saddr, sizeof(ret->requester));
	__builtin_memcpy(ret->responder, response ? qk->saddr : qk->daddr, sizeof(ret->responder));
	ret->family = qk->family;
	ret->pad[0] = ret->pad[1] = ret->pad[2] = 0;
}

/*
 * log2 of the PMTU a READ is counted by: learnt, what its path's READ
 * responses showed (0: none yet), else dflt, the configured PMTU's. That
 * is IBTA's largest by default, so a READ larger than a smaller real PMTU,
 * followed by the next request before any response on its path was seen,
 * is counted as taking too few PSNs: the next request shows as a gap.
 */
static inline __attribute__((always_inline)) __u32 fm_pmtu_shift(__u32 learnt, __u32 dflt)
{
	return learnt >= ROCE_PMTU_SHIFT_MIN && learnt <= ROCE_PMTU_SHIFT_MAX ? learnt : dflt;
}

#endif
