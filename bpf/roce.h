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
 * 9.3.3 (RETH), 9.3.5 (AETH); RoCEv2 is the IBTA annex A17: BTH in UDP,
 * destination port 4791, followed by the payload and a 4-byte ICRC.
 */

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define ROCE_UDP_PORT 4791
#define ROCE_BTH_LEN 12 /* IBTA 9.2 */
#define ROCE_AETH_LEN 4 /* IBTA 9.3.5 */
#define ROCE_ICRC_LEN 4 /* IBTA A17: invariant CRC after the payload */
#define ROCE_RETH_LEN 16 /* IBTA 9.3.3: virtual address 8, R_Key 4, DMA length 4 */
#define ROCE_RETH_DMA_LEN_OFF 12 /* where in the RETH the DMA length is */
#define ROCE_RDETH_LEN 4 /* IBTA 9.3.1 */
#define ROCE_DETH_LEN 8 /* IBTA 9.3.2 */
#define ROCE_XRCETH_LEN 4 /* IBTA annex A14: XRC's SRQ number, right after the BTH */
#define ROCE_UDP_HLEN 8
/* IBTA path MTUs are 256, 512, 1024, 2048 and 4096 bytes: 2^8 .. 2^12 */
#define ROCE_PMTU_SHIFT_MIN 8
#define ROCE_PMTU_SHIFT_MAX 12
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
	__u8 pad; /* PadCnt: bytes after the payload that round it up to 4 */
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
	ret->pad = (p[1] >> 4) & 0x3;
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

/* Where the RETH of an RDMA READ request starts, from the BTH: after the
 * headers its transport puts first (IBTA 9.2, table 38's header columns). */
static inline __attribute__((always_inline)) __u32 roce_reth_off(__u8 opcode)
{
	if (ROCE_TRANSPORT(opcode) == ROCE_TRANSPORT_XRC)
		return ROCE_BTH_LEN + ROCE_XRCETH_LEN;
	if (ROCE_TRANSPORT(opcode) == ROCE_TRANSPORT_RD)
		return ROCE_BTH_LEN + ROCE_RDETH_LEN + ROCE_DETH_LEN;
	return ROCE_BTH_LEN;
}

/* How far from the BTH's start the headers fabmon reads reach for this
 * opcode: the BTH, and the AETH or a READ request's RETH. */
static inline __attribute__((always_inline)) __u32 roce_hdr_len(__u8 opcode)
{
	if (roce_has_aeth(opcode))
		return ROCE_BTH_LEN + ROCE_AETH_LEN;
	if (roce_classify(opcode) == ROCE_CLASS_READ_REQUEST)
		return roce_reth_off(opcode) + ROCE_RETH_LEN;
	return ROCE_BTH_LEN;
}

/*
 * Reads the DMA length of the RDMA READ request whose BTH (opcode opcode)
 * starts at p. Returns 0 and sets *ret_len, or -1 if the RETH is cut short.
 */
static inline __attribute__((always_inline)) int roce_read_len(const __u8 *p, const __u8 *end,
							       __u8 opcode, __u32 *ret_len)
{
	const __u8 *len = p + roce_reth_off(opcode) + ROCE_RETH_DMA_LEN_OFF;

	if (len + 4 > end)
		return -1;
	*ret_len = ((__u32)len[0] << 24) | ((__u32)len[1] << 16) | ((__u32)len[2] << 8) | len[3];
	return 0;
}

/* log2 of an IBTA path MTU of pmtu bytes; 0 if pmtu is none of them. */
static inline __attribute__((always_inline)) __u32 roce_pmtu_shift(__u32 pmtu)
{
	switch (pmtu) {
	case 256:
		return 8;
	case 512:
		return 9;
	case 1024:
		return 10;
	case 2048:
		return 11;
	case 4096:
		return 12;
	}
	return 0;
}

/*
 * The PSNs an RDMA READ request of len bytes takes at a path MTU of
 * 2^pmtu_shift: one per response packet, ceil(len / PMTU), and one for a
 * zero-length READ, answered by a single packet (IBTA 9.7.2: the
 * requester's next PSN is the READ's plus that count).
 */
static inline __attribute__((always_inline)) __u32 roce_read_psns(__u32 len, __u32 pmtu_shift)
{
	__u64 n = ((__u64)len + (1u << pmtu_shift) - 1) >> pmtu_shift;

	return n ? (__u32)n : 1;
}

/*
 * log2 of the path MTU a READ response packet of udp_len UDP bytes (header
 * included) shows, or 0 if it shows none. Every packet of a multi-packet
 * READ response but the last carries exactly PMTU bytes of payload (IBTA
 * 9.7: a message is cut into PMTU-sized packets), so the first (which has
 * an AETH) and the middle ones show it: the payload is what the UDP length
 * leaves after the UDP header, the BTH, the AETH, the pad and the ICRC. RC
 * and XRC only: RD's responses carry more headers (roce_has_aeth()).
 */
static inline __attribute__((always_inline)) __u32 roce_pmtu_shift_of(const struct roce_bth *bth,
								      __u32 udp_len)
{
	__u8 op = bth->opcode & 0x1f;
	__u32 hdrs = ROCE_UDP_HLEN + ROCE_BTH_LEN + bth->pad + ROCE_ICRC_LEN;

	if (ROCE_TRANSPORT(bth->opcode) != ROCE_TRANSPORT_RC &&
	    ROCE_TRANSPORT(bth->opcode) != ROCE_TRANSPORT_XRC)
		return 0;
	if (op == 0x0d) /* READ response first */
		hdrs += ROCE_AETH_LEN;
	else if (op != 0x0e) /* READ response middle */
		return 0;
	return udp_len > hdrs ? roce_pmtu_shift(udp_len - hdrs) : 0;
}

/* True for requests whose PSNs a requester sends in sequence: the packets
 * whose order we check (responses and ACKs echo the requester's PSNs). */
static inline __attribute__((always_inline)) int roce_is_request(enum roce_class c)
{
	return c == ROCE_CLASS_SEND || c == ROCE_CLASS_WRITE || c == ROCE_CLASS_READ_REQUEST ||
	       c == ROCE_CLASS_ATOMIC || c == ROCE_CLASS_UD_SEND;
}

/* Where a request's PSN falls against the last request in the same direction. */
enum roce_psn_order {
	ROCE_PSN_NEXT, /* the first PSN after the last request's: in order */
	ROCE_PSN_GAP, /* ahead of that: packets are missing */
	ROCE_PSN_DUP, /* the last request's PSN: sent again */
	ROCE_PSN_BEHIND, /* behind it, or inside the PSNs it took: late or retransmitted */
};

/*
 * Compares psn with last, the PSN of the last request, which took span PSNs
 * (1, or more for an RDMA READ: roce_read_psns(); at least 1), in 24-bit
 * serial arithmetic: a distance under half the PSN space (2^23) forward is
 * ahead, otherwise behind, so 0xffffff -> 0 is in order. For ROCE_PSN_GAP
 * *ret_missing is how many PSNs were skipped.
 */
static inline __attribute__((always_inline)) enum roce_psn_order
roce_psn_order(__u32 last, __u32 span, __u32 psn, __u32 *ret_missing)
{
	__u32 d = (psn - last) & ROCE_PSN_MASK;

	*ret_missing = 0;
	if (d == span)
		return ROCE_PSN_NEXT;
	if (d == 0)
		return ROCE_PSN_DUP;
	if (d > span && d < (1u << 23)) {
		*ret_missing = d - span;
		return ROCE_PSN_GAP;
	}
	return ROCE_PSN_BEHIND;
}

#endif
