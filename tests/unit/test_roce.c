/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <stdint.h>

#include "../../bpf/roce.h"
#include "suites.h"
#include "testutil.h"

START_TEST(test_parse_bth)
{
	/* RC SEND only, SE=0, P_Key 0xffff, dest QP 0x000123, A=1, PSN 0xabcdef */
	const __u8 bth[12] = {
		0x04, 0x40, 0xff, 0xff, 0, 0x00, 0x01, 0x23, 0x80, 0xab, 0xcd, 0xef
	};
	struct roce_bth b;

	ck_assert_int_eq(roce_parse_bth(bth, bth + sizeof(bth), &b), 0);
	ck_assert_uint_eq(b.opcode, 0x04);
	ck_assert_uint_eq(b.dest_qp, 0x123);
	ck_assert_uint_eq(b.ack_req, 1);
	ck_assert_uint_eq(b.psn, 0xabcdef);
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

	ck_assert(roce_psn_order(5, 6, &missing) == ROCE_PSN_NEXT);
	ck_assert(roce_psn_order(0xffffff, 0, &missing) == ROCE_PSN_NEXT); /* 24-bit wrap */
	ck_assert(roce_psn_order(5, 9, &missing) == ROCE_PSN_GAP);
	ck_assert_uint_eq(missing, 3);
	ck_assert(roce_psn_order(0xfffffe, 2, &missing) == ROCE_PSN_GAP);
	ck_assert_uint_eq(missing, 3);
	ck_assert(roce_psn_order(7, 7, &missing) == ROCE_PSN_DUP);
	ck_assert(roce_psn_order(7, 3, &missing) == ROCE_PSN_BEHIND);
	ck_assert(roce_psn_order(2, 0xfffffe, &missing) == ROCE_PSN_BEHIND);
}
END_TEST

Suite *roce_suite(void)
{
	const struct testutil_case cases[] = {
		{ "parse_bth", test_parse_bth, 0 },
		{ "classify", test_classify, 0 },
		{ "psn_order", test_psn_order, 0 },
	};

	return TESTUTIL_SUITE("roce", cases);
}
