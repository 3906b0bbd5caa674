/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "collector/pcap/capture.h"
#include "collector/pcap/packet.h"
#include "suites.h"
#include "testutil.h"

/*
 * MAC Control frames built by hand after IEEE 802.3 Annex 31B (PAUSE) and
 * IEEE 802.1Qbb 36.1.3 (PFC): the slow-protocols group address, a source,
 * ethertype 0x8808, opcode, then the pause times, padded to 60 bytes.
 * tests/e2e/t_replay.sh checks the same fields against tshark.
 */
#define MACC_HEAD "\x01\x80\xc2\x00\x00\x01\x02\x00\x00\x00\x00\x02\x88\x08"

/* the header plus body, zero-padded to a minimum frame, into f; its length */
static size_t frame(uint8_t *f, const char *body, size_t body_len)
{
	memset(f, 0, 60);
	memcpy(f, MACC_HEAD, 14);
	memcpy(f + 14, body, body_len);
	return 60;
}

/* PFC: the priorities the vector enables, each with its time; a disabled
 * priority's time is not read (802.1Qbb 36.1.3.2). Counted per priority. */
START_TEST(test_pfc_frame)
{
	static const char body[] = "\x01\x01\x00\x21" /* PFC, priorities 0 and 5 */
				   "\xff\xff\x00\x20\x00\x00\x00\x00" /* times 0-3 */
				   "\x00\x00\xcc\x22\x00\x00\x00\x00"; /* 4-7 */
	struct capture_pause p = { { 0 }, { 0 } };
	struct packet pkt;
	const char *why;
	uint8_t f[60];
	size_t len = frame(f, body, sizeof(body) - 1);

	ck_assert_int_eq(packet_parse(PACKET_LINK_ETHERNET, f, len, &pkt, &why), 0);
	ck_assert_int_eq(pkt.kind, PACKET_PAUSE);
	ck_assert_uint_eq(pkt.pause_slots, 0x21);
	ck_assert_uint_eq(pkt.pause_quanta[0], 0xffff);
	ck_assert_uint_eq(pkt.pause_quanta[1], 0); /* 0x20 given, not enabled */
	ck_assert_uint_eq(pkt.pause_quanta[5], 0xcc22);
	capture_pause_add(&p, &pkt);
	capture_pause_add(&p, &pkt);
	ck_assert_uint_eq(p.frames[0], 2);
	ck_assert_uint_eq(p.quanta[0], 2 * 0xffff);
	ck_assert_uint_eq(p.frames[5], 2);
	ck_assert_uint_eq(p.frames[1], 0);
	ck_assert_uint_eq(p.frames[PACKET_PAUSE_LINK], 0);
	/* cut before the last priority's time: an error, not a guess */
	ck_assert_int_eq(packet_parse(PACKET_LINK_ETHERNET, f, 14 + 4 + 14, &pkt, &why), -EMSGSIZE);
	ck_assert_str_eq(why, "PFC pause times cut short");
}
END_TEST

/* 802.3x PAUSE: the whole link's slot; another MAC Control opcode (a GATE
 * of 802.3 Clause 64) is some other frame, not an error. */
START_TEST(test_link_pause_and_other_opcodes)
{
	uint8_t f[60];
	struct packet pkt;
	const char *why;
	size_t len = frame(f, "\x00\x01\x12\x34", 4);

	ck_assert_int_eq(packet_parse(PACKET_LINK_ETHERNET, f, len, &pkt, &why), 0);
	ck_assert_int_eq(pkt.kind, PACKET_PAUSE);
	ck_assert_uint_eq(pkt.pause_slots, 1u << PACKET_PAUSE_LINK);
	ck_assert_uint_eq(pkt.pause_quanta[PACKET_PAUSE_LINK], 0x1234);
	ck_assert_int_eq(packet_parse(PACKET_LINK_ETHERNET, f, 14 + 3, &pkt, &why), -EMSGSIZE);
	ck_assert_int_eq(packet_parse(PACKET_LINK_ETHERNET, f, 14 + 1, &pkt, &why), -EMSGSIZE);
	len = frame(f, "\x00\x02\x00\x00", 4);
	ck_assert_int_eq(packet_parse(PACKET_LINK_ETHERNET, f, len, &pkt, &why), 0);
	ck_assert_int_eq(pkt.kind, PACKET_OTHER);
}
END_TEST

Suite *packet_suite(void)
{
	const struct testutil_case cases[] = {
		{ "pfc_frame", test_pfc_frame, 0 },
		{ "link_pause_and_other_opcodes", test_link_pause_and_other_opcodes, 0 },
	};

	return TESTUTIL_SUITE("packet", cases);
}
