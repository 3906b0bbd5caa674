/* SPDX-License-Identifier: MIT */
#ifndef FABMON_ROCE_H
#define FABMON_ROCE_H

/*
 * RoCEv2 transport headers and their parse, shared by the tc probe
 * (bpf/flow.bpf.c) and user space (the libpcap path): every function is a
 * static inline over a byte pointer and an end pointer, which the BPF
 * verifier can bound and plain C can call.
 *
 * Layouts: InfiniBand Architecture Specification vol. 1 (IBTA), 9.2 (BTH),
 * 9.3.5 (AETH); RoCEv2 is the IBTA annex A17: BTH in UDP, destination port
 * 4791, followed by the payload and a 4-byte ICRC.
 */

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define ROCE_UDP_PORT 4791
#define ROCE_BTH_LEN 12 /* IBTA 9.2 */
#define ROCE_AETH_LEN 4 /* IBTA 9.3.5 */
#define ROCE_ICRC_LEN 4 /* IBTA A17: invariant CRC after the payload */
#define ROCE_PSN_MASK 0xffffffu /* PSNs are 24 bits and wrap */
#define ROCE_OPCODE_CNP 0x81 /* IBTA A17.9.3: congestion notification packet */

/* Opcode bits 7:5 are the transport service (IBTA 9.2.1, table 38). */
#define ROCE_TRANSPORT(op) ((op) >> 5)
#define ROCE_TRANSPORT_RC 0
#define ROCE_TRANSPORT_UC 1
#define ROCE_TRANSPORT_RD 2
#define ROCE_TRANSPORT_UD 3
#define ROCE_TRANSPORT_CNP 4
#define ROCE_TRANSPORT_XRC 5

/* What fabmon counts packets by: a coarse view of the operation. */
enum roce_class {
	ROCE_CLASS_SEND,
	ROCE_CLASS_WRITE,
	ROCE_CLASS_READ_REQUEST,
	ROCE_CLASS_READ_RESPONSE,
	ROCE_CLASS_ACK,
	ROCE_CLASS_ATOMIC,
	ROCE_CLASS_CNP,
	ROCE_CLASS_UD_SEND,
	ROCE_CLASS_OTHER,
	ROCE_CLASS_COUNT,
};

/* AETH syndrome bits 7:5 (IBTA 9.3.5, table 44). */
#define ROCE_AETH_ACK 0
#define ROCE_AETH_RNR_NAK 1
#define ROCE_AETH_NAK 3
/* NAK codes, syndrome bits 4:0 when bits 7:5 are NAK. */
#define ROCE_NAK_PSN_SEQUENCE 0
#define ROCE_NAK_INVALID_REQUEST 1
#define ROCE_NAK_REMOTE_ACCESS 2
#define ROCE_NAK_REMOTE_OPERATION 3
#define ROCE_NAK_INVALID_RD_REQUEST 4

struct roce_bth {
	__u8 opcode;
	__u8 ack_req; /* the A bit: the requester asks for an ACK */
	__u32 dest_qp; /* 24 bits */
	__u32 psn; /* 24 bits */
};

/*
 * Parses the BTH at p (p + 12 must not pass end). Returns 0 and fills *ret,
 * or -1 if the header is cut short.
 */
static inline __attribute__((always_inline)) int roce_parse_bth(const __u8 *p, const __u8 *end,
								struct roce_bth *ret)
{
	if (p + ROCE_BTH_LEN > end)
		return -1;
	/* byte 0 opcode; 1 SE|M|Pad|TVer; 2-3 P_Key; 4 reserved (FECN/BECN in
	 * RoCEv2); 5-7 destination QP; 8 A|reserved; 9-11 PSN */
	ret->opcode = p[0];
	ret->dest_qp = ((__u32)p[5] << 16) | ((__u32)p[6] << 8) | p[7];
	ret->ack_req = p[8] >> 7;
	ret->psn = ((__u32)p[9] << 16) | ((__u32)p[10] << 8) | p[11];
	return 0;
}

/* Maps an opcode to its class (IBTA 9.2.1, table 38, operation bits 4:0). */
static inline __attribute__((always_inline)) enum roce_class roce_classify(__u8 opcode)
{
	__u8 op = opcode & 0x1f, t = ROCE_TRANSPORT(opcode);

	if (opcode == ROCE_OPCODE_CNP)
		return ROCE_CLASS_CNP;
	if (t == ROCE_TRANSPORT_UD)
		return op == 0x04 || op == 0x05 ? ROCE_CLASS_UD_SEND : ROCE_CLASS_OTHER;
	if (t == ROCE_TRANSPORT_CNP || t > ROCE_TRANSPORT_XRC)
		return ROCE_CLASS_OTHER;
	if (op <= 0x05 || op == 0x16 || op == 0x17) /* SEND first..only, SEND w/ invalidate */
		return ROCE_CLASS_SEND;
	if (op <= 0x0b)
		return ROCE_CLASS_WRITE;
	if (op == 0x0c)
		return ROCE_CLASS_READ_REQUEST;
	if (op <= 0x10) /* READ response first, middle, last, only */
		return ROCE_CLASS_READ_RESPONSE;
	if (op == 0x11 || op == 0x12) /* Acknowledge, ATOMIC Acknowledge */
		return ROCE_CLASS_ACK;
	if (op == 0x13 || op == 0x14) /* CmpSwap, FetchAdd requests */
		return ROCE_CLASS_ATOMIC;
	return ROCE_CLASS_OTHER;
}

/* True if packets of this opcode carry an AETH right after the BTH: READ
 * response first/last/only, Acknowledge, ATOMIC Acknowledge (IBTA 9.3.5). */
static inline __attribute__((always_inline)) int roce_has_aeth(__u8 opcode)
{
	__u8 op = opcode & 0x1f;

	if (ROCE_TRANSPORT(opcode) != ROCE_TRANSPORT_RC &&
	    ROCE_TRANSPORT(opcode) != ROCE_TRANSPORT_XRC)
		return 0;
	return op == 0x0d || op == 0x0f || op == 0x10 || op == 0x11 || op == 0x12;
}

/* True for requests whose PSNs a requester sends in sequence: the packets
 * whose order we check (responses and ACKs echo the requester's PSNs). */
static inline __attribute__((always_inline)) int roce_is_request(enum roce_class c)
{
	return c == ROCE_CLASS_SEND || c == ROCE_CLASS_WRITE || c == ROCE_CLASS_READ_REQUEST ||
	       c == ROCE_CLASS_ATOMIC || c == ROCE_CLASS_UD_SEND;
}

/* Where a PSN falls against the last one seen in the same direction. */
enum roce_psn_order {
	ROCE_PSN_NEXT, /* last + 1: in order */
	ROCE_PSN_GAP, /* ahead of last + 1: packets are missing */
	ROCE_PSN_DUP, /* equal to last: sent again */
	ROCE_PSN_BEHIND, /* behind last: late or retransmitted */
};

/*
 * Compares psn with last in 24-bit serial arithmetic: a distance under half
 * the PSN space (2^23) forward is ahead, otherwise behind, so 0xffffff -> 0
 * is in order. For ROCE_PSN_GAP *ret_missing is how many PSNs were skipped.
 */
static inline __attribute__((always_inline)) enum roce_psn_order
roce_psn_order(__u32 last, __u32 psn, __u32 *ret_missing)
{
	__u32 d = (psn - last) & ROCE_PSN_MASK;

	*ret_missing = 0;
	if (d == 1)
		return ROCE_PSN_NEXT;
	if (d == 0)
		return ROCE_PSN_DUP;
	if (d < (1u << 23)) {
		*ret_missing = d - 1;
		return ROCE_PSN_GAP;
	}
	return ROCE_PSN_BEHIND;
}

#endif
