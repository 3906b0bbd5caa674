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
	struct capture_pause p;
	struct packet pkt;
	const char *why;
	uint8_t f[60];
	size_t len = frame(f, body, sizeof(body) - 1);

	memset(&p, 0, sizeof(p));
	ck_assert_int_eq(packet_parse(PACKET_LINK_ETHERNET, f, len, &pkt, &why), 0);
	ck_assert_int_eq(pkt.kind, PACKET_PAUSE);
	ck_assert_uint_eq(pkt.pause_slots, 0x21);
	ck_assert_uint_eq(pkt.pause_quanta[0], 0xffff);
	ck_assert_uint_eq(pkt.pause_quanta[1], 0); /* 0x20 given, not enabled */
	ck_assert_uint_eq(pkt.pause_quanta[5], 0xcc22);
	capture_pause_add(&p, &pkt, 1000, 0);
	capture_pause_add(&p, &pkt, 2000, 0);
	ck_assert_uint_eq(p.frames[0], 2);
	ck_assert_uint_eq(p.quanta[0], 2 * 0xffff);
	ck_assert_uint_eq(p.frames[5], 2);
	ck_assert_uint_eq(p.frames[1], 0);
	ck_assert_uint_eq(p.frames[PACKET_PAUSE_LINK], 0);
	/* the link's speed unknown: counted, not timed */
	ck_assert_uint_eq(capture_pause_paused_ns(&p, 0, 5000), 0);
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

/* A PFC frame on priority 3 alone asking quanta, parsed into *pkt. */
static void pfc3(struct packet *pkt, uint16_t quanta)
{
	char body[20] = "\x01\x01\x00\x08";
	const char *why;
	uint8_t f[60];

	memset(body + 4, 0, 16);
	body[10] = (char)(quanta >> 8);
	body[11] = (char)(quanta & 0xff);
	ck_assert_int_eq(packet_parse(PACKET_LINK_ETHERNET, f, frame(f, body, 20), pkt, &why), 0);
	ck_assert_uint_eq(pkt->pause_quanta[3], quanta);
}

/* Time paused at 1 Gb/s (a quantum is 512 ns): each frame replaces the
 * pause under way (802.1Qbb 36.1.3.3), an XON ends it, and a frame stamped
 * before the last counts as at it; the counter never goes back. */
START_TEST(test_pause_time)
{
	struct capture_pause p;
	struct packet pkt;
	const char *why;
	uint8_t f[60];

	memset(&p, 0, sizeof(p));
	pfc3(&pkt, 1000);
	capture_pause_add(&p, &pkt, 0, 1000); /* to 512000 */
	ck_assert_uint_eq(capture_pause_paused_ns(&p, 3, 200000), 200000);
	capture_pause_add(&p, &pkt, 100000, 1000); /* refreshed: to 612000 */
	ck_assert_uint_eq(capture_pause_paused_ns(&p, 3, 1000000), 612000);
	pfc3(&pkt, 100);
	capture_pause_add(&p, &pkt, 700000, 1000); /* after a gap: to 751200 */
	ck_assert_uint_eq(capture_pause_paused_ns(&p, 3, 710000), 622000);
	pfc3(&pkt, 0);
	capture_pause_add(&p, &pkt, 720000, 1000); /* XON */
	ck_assert_uint_eq(capture_pause_paused_ns(&p, 3, 1000000), 632000);
	pfc3(&pkt, 10);
	capture_pause_add(&p, &pkt, 600000, 1000); /* stamped early: at 720000 */
	ck_assert_uint_eq(capture_pause_paused_ns(&p, 3, 1000000), 637120);
	ck_assert_uint_eq(p.frames[3], 5);
	ck_assert_uint_eq(capture_pause_paused_ns(&p, 2, 1000000), 0);
	/* a PAUSE of 0xffff quanta at 10 Gb/s: 3.355392 ms, cut at the clock */
	ck_assert_int_eq(
		packet_parse(PACKET_LINK_ETHERNET, f, frame(f, "\x00\x01\xff\xff", 4), &pkt, &why),
		0);
	capture_pause_add(&p, &pkt, 5000000, 10000);
	ck_assert_uint_eq(capture_pause_paused_ns(&p, PACKET_PAUSE_LINK, 6000000), 1000000);
	ck_assert_uint_eq(capture_pause_paused_ns(&p, PACKET_PAUSE_LINK, 20000000), 3355392);
}
END_TEST

Suite *packet_suite(void)
{
	const struct testutil_case cases[] = {
		{ "pfc_frame", test_pfc_frame, 0 },
		{ "link_pause_and_other_opcodes", test_link_pause_and_other_opcodes, 0 },
		{ "pause_time", test_pause_time, 0 },
	};

	return TESTUTIL_SUITE("packet", cases);
}
