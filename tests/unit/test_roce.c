/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <stdint.h>

#include "bpf/roce.h"
#include "suites.h"
#include "testutil.h"

START_TEST(test_parse_bth)
{
	/* RC SEND only, SE=0, M=1, pad 2, P_Key 0xffff, dest QP 0x000123, A=1, PSN 0xabcdef */
	const __u8 bth[12] = {
		0x04, 0x60, 0xff, 0xff, 0, 0x00, 0x01, 0x23, 0x80, 0xab, 0xcd, 0xef
	};
	struct roce_bth b;

	ck_assert_int_eq(roce_parse_bth(bth, bth + sizeof(bth), &b), 0);
	ck_assert_uint_eq(b.opcode, 0x04);
	ck_assert_uint_eq(b.dest_qp, 0x123);
	ck_assert_uint_eq(b.ack_req, 1);
	ck_assert_uint_eq(b.psn, 0xabcdef);
	ck_assert_uint_eq(b.pad, 2);
	ck_assert_int_eq(roce_parse_bth(bth, bth + 11, &b), -1); /* cut short */
}
END_TEST

START_TEST(test_classify)
{
	const struct {
		__u8 opcode;
		enum roce_class want;
		int aeth;
	} cases[] = {
		/* IBTA vol. 1, 9.2.1 table 38; Linux include/rdma/ib_pack.h */
		{ 0x00, ROCE_CLASS_SEND, 0 },
		{ 0x04, ROCE_CLASS_SEND, 0 },
		{ 0x06, ROCE_CLASS_WRITE, 0 },
		{ 0x0a, ROCE_CLASS_WRITE, 0 },
		{ 0x0c, ROCE_CLASS_READ_REQUEST, 0 },
		{ 0x0d, ROCE_CLASS_READ_RESPONSE, 1 },
		{ 0x0e, ROCE_CLASS_READ_RESPONSE, 0 },
		{ 0x10, ROCE_CLASS_READ_RESPONSE, 1 },
		{ 0x11, ROCE_CLASS_ACK, 1 },
		{ 0x12, ROCE_CLASS_ACK, 1 },
		{ 0x13, ROCE_CLASS_ATOMIC, 0 },
		{ 0x17, ROCE_CLASS_SEND, 0 },
		{ 0x64, ROCE_CLASS_UD_SEND, 0 },
		{ 0x81, ROCE_CLASS_CNP, 0 },
		{ 0xb1, ROCE_CLASS_ACK, 1 } /* XRC Acknowledge */,
		{ 0xe0, ROCE_CLASS_OTHER, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_msg(roce_classify(cases[i].opcode) == cases[i].want, "opcode 0x%02x",
			      cases[i].opcode);
		ck_assert_msg(roce_has_aeth(cases[i].opcode) == cases[i].aeth, "aeth 0x%02x",
			      cases[i].opcode);
	}
}
END_TEST

START_TEST(test_psn_order)
{
	__u32 missing;

	ck_assert(roce_psn_order(5, 1, 6, &missing) == ROCE_PSN_NEXT);
	ck_assert(roce_psn_order(0xffffff, 1, 0, &missing) == ROCE_PSN_NEXT); /* 24-bit wrap */
	ck_assert(roce_psn_order(5, 1, 9, &missing) == ROCE_PSN_GAP);
	ck_assert_uint_eq(missing, 3);
	ck_assert(roce_psn_order(0xfffffe, 1, 2, &missing) == ROCE_PSN_GAP);
	ck_assert_uint_eq(missing, 3);
	ck_assert(roce_psn_order(7, 1, 7, &missing) == ROCE_PSN_DUP);
	ck_assert(roce_psn_order(7, 1, 3, &missing) == ROCE_PSN_BEHIND);
	ck_assert(roce_psn_order(2, 1, 0xfffffe, &missing) == ROCE_PSN_BEHIND);
	/* after a READ that took 4 PSNs (IBTA 9.7.2) */
	ck_assert(roce_psn_order(10, 4, 14, &missing) == ROCE_PSN_NEXT);
	ck_assert(roce_psn_order(0xfffffe, 4, 2, &missing) == ROCE_PSN_NEXT);
	ck_assert(roce_psn_order(10, 4, 10, &missing) == ROCE_PSN_DUP);
	ck_assert(roce_psn_order(10, 4, 12, &missing) == ROCE_PSN_BEHIND); /* one of its PSNs */
	ck_assert(roce_psn_order(10, 4, 16, &missing) == ROCE_PSN_GAP);
	ck_assert_uint_eq(missing, 2);
}
END_TEST

/* A READ takes a PSN per response packet, ceil(length / PMTU), and one for 0 bytes. */
START_TEST(test_read_psns)
{
	ck_assert_uint_eq(roce_read_psns(4096, 10), 4);
	ck_assert_uint_eq(roce_read_psns(4097, 10), 5);
	ck_assert_uint_eq(roce_read_psns(4096, 12), 1);
	ck_assert_uint_eq(roce_read_psns(1, 8), 1);
	ck_assert_uint_eq(roce_read_psns(0, 12), 1);
	ck_assert_uint_eq(roce_read_psns(0x80000000u, 8), 1u << 23); /* IBTA's largest, 2 GiB */
	ck_assert_uint_eq(roce_read_psns(0xffffffffu, 8), 1u << 24); /* no overflow */
	ck_assert_uint_eq(roce_pmtu_shift(256), 8);
	ck_assert_uint_eq(roce_pmtu_shift(4096), 12);
	ck_assert_uint_eq(roce_pmtu_shift(1500), 0);
	ck_assert_uint_eq(roce_pmtu_shift(8192), 0);
}
END_TEST

/* The RETH's DMA length, after the headers each transport puts first. */
START_TEST(test_read_len)
{
	/* RC READ request: BTH, RETH (VA, R_Key, DMA length 0x00011000) */
	__u8 rc[ROCE_BTH_LEN + ROCE_RETH_LEN] = { 0x0c };
	/* XRC READ request (0xac): BTH, XRCETH, RETH */
	__u8 xrc[ROCE_BTH_LEN + ROCE_XRCETH_LEN + ROCE_RETH_LEN] = { 0xac };
	__u32 len = 0;

	rc[ROCE_BTH_LEN + 13] = 0x01;
	rc[ROCE_BTH_LEN + 14] = 0x10;
	xrc[ROCE_BTH_LEN + ROCE_XRCETH_LEN + 15] = 0x40;
	ck_assert_int_eq(roce_read_len(rc, rc + sizeof(rc), rc[0], &len), 0);
	ck_assert_uint_eq(len, 0x11000);
	ck_assert_int_eq(roce_read_len(xrc, xrc + sizeof(xrc), xrc[0], &len), 0);
	ck_assert_uint_eq(len, 0x40);
	ck_assert_int_eq(roce_read_len(rc, rc + sizeof(rc) - 1, rc[0], &len), -1); /* cut */
	ck_assert_uint_eq(roce_hdr_len(0x0c), ROCE_BTH_LEN + ROCE_RETH_LEN);
	ck_assert_uint_eq(roce_hdr_len(0xac), ROCE_BTH_LEN + ROCE_XRCETH_LEN + ROCE_RETH_LEN);
	ck_assert_uint_eq(roce_hdr_len(0x11), ROCE_BTH_LEN + ROCE_AETH_LEN);
	ck_assert_uint_eq(roce_hdr_len(0x04), ROCE_BTH_LEN);
}
END_TEST

/*
 * READ response first and middle packets carry exactly the PMTU: UDP length
 * = UDP 8 + BTH 12 (+ AETH 4 on the first) + PMTU + ICRC 4. Last and only
 * packets, other opcodes and sizes that are no PMTU show none.
 */
START_TEST(test_pmtu_shift_of)
{
	const struct {
		__u8 opcode, pad;
		__u32 udp_len, want;
	} cases[] = {
		{ 0x0d, 0, 8 + 12 + 4 + 1024 + 4, 10 }, /* first */
		{ 0x0e, 0, 8 + 12 + 4096 + 4, 12 }, /* middle */
		{ 0xad, 0, 8 + 12 + 4 + 256 + 4, 8 }, /* XRC first */
		{ 0x0e, 3, 8 + 12 + 512 + 3 + 4, 9 }, /* padded (not in practice) */
		{ 0x0f, 0, 8 + 12 + 4 + 1024 + 4, 0 }, /* last: up to the PMTU */
		{ 0x10, 0, 8 + 12 + 4 + 1024 + 4, 0 }, /* only */
		{ 0x0e, 0, 8 + 12 + 1000 + 4, 0 }, /* no PMTU */
		{ 0x0e, 0, 8 + 12 + 8192 + 4, 0 },
		{ 0x0e, 0, 10, 0 }, /* shorter than its headers */
		{ 0x04, 0, 8 + 12 + 1024 + 4, 0 }, /* SEND only */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct roce_bth b = { .opcode = cases[i].opcode, .pad = cases[i].pad };

		ck_assert_msg(roce_pmtu_shift_of(&b, cases[i].udp_len) == cases[i].want, "case %zu",
			      i);
	}
}
END_TEST

Suite *roce_suite(void)
{
	const struct testutil_case cases[] = {
		{ "parse_bth", test_parse_bth, 0 }, { "classify", test_classify, 0 },
		{ "psn_order", test_psn_order, 0 }, { "read_psns", test_read_psns, 0 },
		{ "read_len", test_read_len, 0 },   { "pmtu_shift_of", test_pmtu_shift_of, 0 },
	};

	return TESTUTIL_SUITE("roce", cases);
}
