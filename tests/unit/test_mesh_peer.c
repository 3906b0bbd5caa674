/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "suites.h"
#include "testutil.h"

#include "collector/mesh/mesh_allow.h"
#include "collector/mesh/mesh_peer.h"
#include "collector/mesh/mesh_wire.h"

#define MS 1000000LL

/* each test starts from this one (fork mode) */
static struct mesh_flow flows[8];
static struct mesh_peer peer = { .addr = 0xc6120102, .flow = flows }; /* 198.18.1.2 */

static struct mesh_msg reply_to(unsigned flow, uint32_t seq, int64_t sent_ns)
{
	return (struct mesh_msg){ .type = MESH_REPLY,
				  .flow = (uint8_t)flow,
				  .seq = seq,
				  .send_ns = (uint64_t)sent_ns,
				  .rx_ns = 1000,
				  .tx_ns = 1000 + 20000 };
}

/* A datagram is a probe of exactly MESH_WIRE_LEN bytes: shorter, longer or
 * foreign ones are refused whole. */
START_TEST(test_wire_round_trip_and_refusal)
{
	struct mesh_msg m = { .type = MESH_PROBE,
			      .flow = 7,
			      .ttl = 3,
			      .seq = 0xdeadbeef,
			      .send_ns = 1234567890123ULL },
			back;
	uint8_t buf[MESH_WIRE_LEN + 8] = { 0 };

	mesh_wire_encode(&m, buf);
	ck_assert_int_eq(mesh_wire_decode(buf, MESH_WIRE_LEN, &back), 0);
	ck_assert_uint_eq(back.seq, 0xdeadbeef);
	ck_assert_uint_eq(back.flow, 7);
	ck_assert_uint_eq(back.ttl, 3);
	ck_assert_uint_eq(back.send_ns, 1234567890123ULL);
	ck_assert_int_eq(mesh_wire_decode(buf, MESH_WIRE_LEN - 1, &back), -EBADMSG);
	ck_assert_int_eq(mesh_wire_decode(buf, MESH_WIRE_LEN + 1, &back), -EBADMSG);
	buf[0] = 'X';
	ck_assert_int_eq(mesh_wire_decode(buf, MESH_WIRE_LEN, &back), -EBADMSG);
}
END_TEST

START_TEST(test_allow_cidrs)
{
	struct mesh_cidr c[4];
	char why[128] = "";

	ck_assert_int_eq(mesh_allow_parse("198.18.0.0/15, 10.0.0.7", c, 4, why, sizeof(why)), 2);
	ck_assert(mesh_allow_match(c, 2, 0xc6130001)); /* 198.19.0.1 */
	ck_assert(!mesh_allow_match(c, 2, 0xc6140001)); /* 198.20.0.1 */
	ck_assert(mesh_allow_match(c, 2, 0x0a000007));
	ck_assert(!mesh_allow_match(c, 2, 0x0a000008));
	ck_assert_int_eq(mesh_allow_parse("198.18.0.0/33", c, 4, why, sizeof(why)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "198.18.0.0/33"));
	ck_assert_int_eq(mesh_allow_parse("1.1.1.1,2.2.2.2", c, 1, why, sizeof(why)), -E2BIG);
}
END_TEST

/* An answer in time is an RTT, split into the network's and the responder's. */
START_TEST(test_reply_counts_rtt_and_delay)
{
	uint32_t seq = mesh_peer_sent(&peer, 2, 1000 * MS);
	struct mesh_msg r = reply_to(2, seq, 1000 * MS);

	ck_assert_int_eq(mesh_peer_reply(&peer, &r, 8, 1000 * MS + 300000), 0);
	ck_assert_uint_eq(peer.answered, 1);
	ck_assert_uint_eq(peer.rtt_sum_ns, 300000);
	ck_assert_uint_eq(peer.delay_sum_ns, 20000);
	/* 300 us is in the 500 us bucket (index 5) */
	ck_assert_uint_eq(peer.buckets[5], 1);
	/* the same reply again answers nothing */
	ck_assert_int_eq(mesh_peer_reply(&peer, &r, 8, 1000 * MS + 400000), -ENOENT);
}
END_TEST

START_TEST(test_wrong_sequence_is_refused)
{
	uint32_t seq = mesh_peer_sent(&peer, 0, 1000 * MS);
	struct mesh_msg r = reply_to(0, seq + 1, 1000 * MS);

	ck_assert_int_eq(mesh_peer_reply(&peer, &r, 8, 1001 * MS), -ENOENT);
	r = reply_to(0, seq, 999 * MS); /* right sequence, forged send time */
	ck_assert_int_eq(mesh_peer_reply(&peer, &r, 8, 1001 * MS), -ENOENT);
	r = reply_to(9, seq, 1000 * MS);
	ck_assert_int_eq(mesh_peer_reply(&peer, &r, 8, 1001 * MS), -ERANGE);
	ck_assert_uint_eq(peer.answered, 0);
}
END_TEST

/* Unanswered past the timeout is lost, on its flow only, and the flow's path
 * is due a trace at once. */
START_TEST(test_loss_is_per_flow)
{
	for (unsigned f = 0; f < 4; f++)
		(void)mesh_peer_sent(&peer, f, 1000 * MS);
	for (unsigned f = 1; f < 4; f++) {
		struct mesh_msg r = reply_to(f, 0, 1000 * MS);

		ck_assert_int_eq(mesh_peer_reply(&peer, &r, 4, 1000 * MS + 50000), 0);
	}
	peer.flow[0].path.next_ns = 99999 * MS;
	ck_assert_uint_eq(mesh_peer_expire(&peer, 4, 1400 * MS, 500 * MS), 0);
	ck_assert_uint_eq(mesh_peer_expire(&peer, 4, 1600 * MS, 500 * MS), 1);
	ck_assert_uint_eq(peer.flow[0].lost, 1);
	ck_assert_uint_eq(peer.flow[1].lost, 0);
	ck_assert_uint_eq(peer.lost, 1);
	ck_assert_int_eq(peer.flow[0].path.next_ns, 1600 * MS);
	ck_assert_uint_eq(mesh_peer_differing(&peer, 4, 1000 * MS), 1 << 0);
	/* losing while its other flows answer: a suspect, probed faster; a
	 * peer that stopped answering is not, nor one whose loss is old */
	ck_assert(mesh_peer_suspect(&peer, 4, 1000 * MS, 1000 * MS));
	ck_assert(!mesh_peer_suspect(&peer, 4, 1000 * MS, 1001 * MS));
	ck_assert(!mesh_peer_suspect(&peer, 4, 1601 * MS, 1000 * MS));
}
END_TEST

/* A round's probes unanswered together are one loss round, however many
 * of them; a round that lost none is none. */
START_TEST(test_loss_rounds)
{
	for (unsigned f = 0; f < 4; f++)
		(void)mesh_peer_sent(&peer, f, 1000 * MS);
	(void)mesh_peer_expire(&peer, 4, 1600 * MS, 500 * MS);
	ck_assert_uint_eq(peer.lost, 4);
	ck_assert_uint_eq(peer.loss_rounds, 1);
	for (unsigned f = 0; f < 4; f++) {
		struct mesh_msg r;

		(void)mesh_peer_sent(&peer, f, 2000 * MS);
		r = reply_to(f, 1, 2000 * MS);
		ck_assert_int_eq(mesh_peer_reply(&peer, &r, 4, 2000 * MS + 50000), 0);
	}
	(void)mesh_peer_expire(&peer, 4, 2600 * MS, 500 * MS);
	ck_assert_uint_eq(peer.loss_rounds, 1);
	(void)mesh_peer_sent(&peer, 2, 3000 * MS);
	(void)mesh_peer_expire(&peer, 4, 3600 * MS, 500 * MS);
	ck_assert_uint_eq(peer.lost, 5);
	ck_assert_uint_eq(peer.loss_rounds, 2);
}
END_TEST

/* Round seq of probes on 4 flows at t_ms, every flow but lose's answered
 * (lose -1: none lost, 4: all), fwd_ns on the way there and rev_ns back,
 * the responder's clock 5 s ahead (its offset cancels), then expired. */
static void round_of(uint32_t seq, int64_t t_ms, int64_t fwd_ns, int64_t rev_ns, int lose)
{
	for (unsigned f = 0; f < 4; f++)
		(void)mesh_peer_sent(&peer, f, t_ms * MS);
	for (unsigned f = 0; f < 4; f++) {
		struct mesh_msg r = reply_to(f, seq, t_ms * MS);

		r.rx_ns = (uint64_t)(t_ms * MS + fwd_ns + 5000 * MS);
		r.tx_ns = r.rx_ns + 20000;
		if ((int)f != lose && lose != 4)
			ck_assert_int_eq(
				mesh_peer_reply(&peer, &r, 4, t_ms * MS + fwd_ns + 20000 + rev_ns),
				0);
	}
	(void)mesh_peer_expire(&peer, 4, (t_ms + 600) * MS, 500 * MS);
}

/* A probe lost while either way of the path stands in a spike (over
 * halfway from its least to its most) and the peer answers later ones is a
 * full queue's; one lost on a path at its least, or with nothing answered
 * after it (an outage, spike or not), is not. */
START_TEST(test_queue_drops_in_a_spike)
{
	for (uint32_t k = 0; k < 3; k++)
		round_of(k, 1000 + 1000 * k, 50000, 50000, -1);
	ck_assert_uint_eq(peer.queued, 0);
	round_of(3, 4000, 50 * MS, 50000, 0); /* a queue of 50 ms there: a spike */
	ck_assert_uint_eq(peer.lost, 1);
	ck_assert_uint_eq(peer.lost_queued, 1);
	ck_assert_uint_eq(peer.queued, 4);
	round_of(4, 5000, 50000, 50000, 0); /* back at its least */
	ck_assert_uint_eq(peer.lost, 2);
	ck_assert_uint_eq(peer.lost_queued, 1);
	ck_assert_uint_eq(peer.queued, 4);
	round_of(5, 6000, 50000, 40 * MS, 0); /* a queue on the way back */
	ck_assert_uint_eq(peer.lost_queued, 2);
	round_of(6, 7000, 50000, 40 * MS, 4); /* nothing answered */
	ck_assert_uint_eq(peer.lost, 7);
	ck_assert_uint_eq(peer.lost_queued, 2);
	ck_assert_uint_eq(peer.queued, 8);
}
END_TEST

/* With a queue both ways, one way full shows a spike that the round trip,
 * halfway from its least to its most, would not; and a path that never
 * queues over MESH_SPIKE_FLOOR_NS has none, however it varies under it. */
START_TEST(test_spike_one_way_of_two)
{
	round_of(0, 1000, 50000, 50000, -1);
	round_of(1, 2000, 40 * MS, 40 * MS, -1); /* both ways full: a spike */
	round_of(2, 3000, 2 * MS, 2 * MS, -1); /* drained */
	ck_assert_uint_eq(peer.queued, 4);
	round_of(3, 4000, 30 * MS, 2 * MS, 0); /* one way: 32 ms of a round trip's 80 */
	ck_assert_uint_eq(peer.lost_queued, 1);
}
END_TEST

START_TEST(test_jitter_is_no_spike)
{
	round_of(0, 1000, 50000, 50000, -1);
	round_of(1, 2000, 900000, 50000, 0);
	round_of(2, 3000, 50000, 900000, 0);
	ck_assert_uint_eq(peer.lost, 2);
	ck_assert_uint_eq(peer.queued, 0);
}
END_TEST

/* The responder's clock drifting 0.5 ms a second (NTP slewing) moves one
 * way up and the other down, the round trip not: no spike. */
START_TEST(test_clock_drift_is_no_spike)
{
	for (uint32_t k = 0; k < 30; k++)
		round_of(k, 1000 + 1000 * k, 50000 + 500000 * (int64_t)k,
			 50000 - 500000 * (int64_t)k, k % 2 ? 0 : -1);
	ck_assert_uint_eq(peer.lost, 15);
	ck_assert_uint_eq(peer.queued, 0);
}
END_TEST

/* A flow far slower than its siblings for MESH_RECENT answers stands out;
 * one a little slower does not, nor one with fewer answers (a path's first
 * answer pays for neighbour lookups on its way). */
START_TEST(test_slow_flow_differs)
{
	int64_t t = 1000 * MS;

	for (unsigned i = 0; i < MESH_RECENT; i++, t += 1000 * MS) {
		ck_assert_uint_eq(mesh_peer_differing(&peer, 4, 0), 0);
		/* no figure to export yet either: a flow that loses from its
		 * start is shown, and its first answer judged by the detector */
		ck_assert(mesh_flow_rtt(&peer.flow[3]) == 0);
		for (unsigned f = 0; f < 4; f++) {
			uint32_t seq = mesh_peer_sent(&peer, f, t);
			struct mesh_msg r = reply_to(f, seq, t);

			(void)mesh_peer_reply(&peer, &r, 4,
					      t + (f == 3   ? 900000
						   : f == 2 ? 130000
							    : 100000));
		}
	}
	ck_assert_uint_eq(mesh_peer_differing(&peer, 4, 0), 1 << 3);
	ck_assert_double_eq_tol(mesh_flow_rtt(&peer.flow[3]), 880e-6, 1e-9);
}
END_TEST

/* Hops that answer are recorded by TTL, silent ones stay unknown, and the
 * path ends where the peer answered. */
START_TEST(test_trace_hops)
{
	uint32_t seq = mesh_peer_trace_start(&peer, 1, 1000 * MS, 1500 * MS);
	struct mesh_msg probe = { .type = MESH_PROBE, .flow = 1, .seq = seq };
	struct mesh_msg reply = { .type = MESH_REPLY, .flow = 1, .seq = seq };

	probe.ttl = 1;
	ck_assert_int_eq(mesh_peer_hop(&peer, &probe, 8, 0xc6120001), 0);
	probe.ttl = 3;
	ck_assert_int_eq(mesh_peer_hop(&peer, &probe, 8, 0xc6130003), 0);
	reply.ttl = 5;
	ck_assert_int_eq(mesh_peer_reply(&peer, &reply, 8, 0), 0);
	reply.ttl = 4;
	ck_assert_int_eq(mesh_peer_reply(&peer, &reply, 8, 0), 0);
	probe.seq = seq + 1; /* another trace's */
	ck_assert_int_eq(mesh_peer_hop(&peer, &probe, 8, 0x01010101), -ENOENT);
	(void)mesh_peer_expire(&peer, 8, 1500 * MS, 500 * MS);
	ck_assert_uint_eq(peer.flow[1].path.n, 4);
	ck_assert_uint_eq(peer.flow[1].path.hop[0], 0xc6120001);
	ck_assert_uint_eq(peer.flow[1].path.hop[1], 0); /* unknown */
	ck_assert_uint_eq(peer.flow[1].path.hop[2], 0xc6130003);
	ck_assert_uint_eq(peer.flow[1].path.hop[3], peer.addr);
	ck_assert_uint_ne(peer.flow[1].path.id, 0);
	/* a hop of some paths to the peer, not of all: flow 2 known, avoiding
	 * 198.19.0.3; flows with no path known avoid nothing */
	ck_assert(mesh_flow_crosses(&peer.flow[1], 0xc6130003));
	ck_assert(!mesh_flow_crosses(&peer.flow[1], 0));
	ck_assert(!mesh_peer_hop_avoided(&peer, 8, 0xc6130003));
	peer.flow[2].path.n = 2;
	peer.flow[2].path.hop[0] = 0xc6120001;
	peer.flow[2].path.hop[1] = peer.addr;
	ck_assert(mesh_peer_hop_avoided(&peer, 8, 0xc6130003));
	ck_assert(!mesh_peer_hop_avoided(&peer, 8, 0xc6120001));
	/* the hops past the first, once each; unknown ones are none */
	{
		uint32_t hops[4];

		ck_assert_uint_eq(mesh_peer_hops(&peer, 8, hops, 4), 2);
		ck_assert_uint_eq(hops[0], 0xc6130003);
		ck_assert_uint_eq(hops[1], peer.addr);
		ck_assert_uint_eq(mesh_peer_hops(&peer, 8, hops, 1), 1);
		/* a peer on this segment: its one hop is itself */
		peer.flow[1].path.n = 0;
		peer.flow[2].path.n = 1;
		peer.flow[2].path.hop[0] = peer.addr;
		ck_assert_uint_eq(mesh_peer_hops(&peer, 8, hops, 4), 1);
		ck_assert_uint_eq(hops[0], peer.addr);
	}
}
END_TEST

/* The buckets' "le" labels are their bounds as the text format writes them. */
START_TEST(test_rtt_le_labels)
{
	char le[24];

	for (unsigned b = 0; b < MESH_RTT_BUCKETS; b++) {
		snprintf(le, sizeof(le), "%g", mesh_rtt_bounds[b]);
		ck_assert_str_eq(mesh_rtt_le[b], le);
	}
	ck_assert_str_eq(mesh_rtt_le[MESH_RTT_BUCKETS], "+Inf");
}
END_TEST

Suite *mesh_peer_suite(void)
{
	const struct testutil_case cases[] = {
		{ "wire_round_trip_and_refusal", test_wire_round_trip_and_refusal, 0 },
		{ "allow_cidrs", test_allow_cidrs, 0 },
		{ "reply_counts_rtt_and_delay", test_reply_counts_rtt_and_delay, 0 },
		{ "wrong_sequence_is_refused", test_wrong_sequence_is_refused, 0 },
		{ "loss_rounds", test_loss_rounds, 0 },
		{ "loss_is_per_flow", test_loss_is_per_flow, 0 },
		{ "queue_drops_in_a_spike", test_queue_drops_in_a_spike, 0 },
		{ "spike_one_way_of_two", test_spike_one_way_of_two, 0 },
		{ "jitter_is_no_spike", test_jitter_is_no_spike, 0 },
		{ "clock_drift_is_no_spike", test_clock_drift_is_no_spike, 0 },
		{ "slow_flow_differs", test_slow_flow_differs, 0 },
		{ "trace_hops", test_trace_hops, 0 },
		{ "rtt_le_labels", test_rtt_le_labels, 0 },
	};

	return TESTUTIL_SUITE("mesh_peer", cases);
}
