/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "suites.h"
#include "testutil.h"

#include "agent/config.h"
#include "agent/detect/detect.h"
#include "agent/detect/mesh.h"
#include "agent/registry/registry.h"
#include "collector/metric_names.h"

/* large: one of each for the process (fork mode gives each test its own) */
static struct mesh_gather g;
static struct mesh_history h;

/* Makes o peer 198.18.2.N behind the other leaf, probed on 8 flows a
 * second: those in spine1 cross spine 1 (198.19.11.2, then leaf 2's side
 * of that link 198.19.21.1), the others spine 2. */
static void behind_leaf_2(struct mesh_obs *o, unsigned n, unsigned spine1)
{
	snprintf(o->peer, sizeof(o->peer), "198.18.2.%u", n);
	o->addr = 0xc6120200 + n;
	for (int f = 0; f < 8; f++) {
		int spine = spine1 >> f & 1 ? 1 : 2;
		uint32_t *hop = mesh_obs_flows(&g, o)->hop[f];

		hop[0] = 0xc6120101; /* 198.18.1.1, this host's leaf */
		hop[1] = 0xc6130002 + (uint32_t)((10 + spine) << 8); /* 198.19.1S.2 */
		hop[2] = 0xc6130001 + (uint32_t)((20 + spine) << 8); /* 198.19.2S.1 */
		hop[3] = 0xc6120200 + n; /* the peer */
	}
	o->known_flows = 0xff;
	o->sent = 8;
	o->rtt_sum = 8 * 100e-6;
	o->rtt_count = 8;
}

/* One peer behind the other leaf, flows 0-3 across spine 1. */
static struct mesh_obs *leaf_spine_peer(void)
{
	memset(&g, 0, sizeof(g));
	h.flows = 8;
	g.n = 1;
	behind_leaf_2(&g.obs[0], 11, 0x0f);
	return &g.obs[0];
}

/* Feeds ticks step_ms apart from t0 with the gather as it is; returns the
 * verdicts of the last. */
static size_t run_every(int64_t t0, int ticks, int64_t step_ms, struct event_verdict *v, size_t max)
{
	size_t n = 0;

	for (int i = 0; i < ticks; i++) {
		mesh_history_update(&h, &g, t0 + i * step_ms);
		n = detect_mesh(&h, &g, t0 + i * step_ms, v, max);
	}
	return n;
}

static size_t run(int64_t t0, int ticks, struct event_verdict *v, size_t max)
{
	return run_every(t0, ticks, 1000, v, max);
}

/* n peers from the first silent (every probe lost, none answered). */
static void silence(size_t from, size_t n)
{
	for (size_t i = from; i < n; i++) {
		g.obs[i].lost = 8;
		g.obs[i].lost_flows = 0xff;
		g.obs[i].rtt_count = g.obs[i].rtt_sum = 0;
	}
}

/* v is of kind, on subject, of the cause the kind has. */
static void verdict_is(const struct event_verdict *v, enum event_kind kind, const char *subject,
		       enum event_cause cause)
{
	ck_assert_int_eq(v->kind, kind);
	ck_assert_str_eq(v->subject, subject);
	ck_assert_int_eq(event_kind_cause(v->kind), cause);
}

START_TEST(test_clean_is_quiet)
{
	struct event_verdict v[4];

	(void)leaf_spine_peer();
	ck_assert_uint_eq(run(1000, 12, v, 4), 0);
}
END_TEST

/* Loss on the flows through spine 1 only: a lossy_link naming the hops those
 * flows share and the others do not. */
START_TEST(test_loss_names_the_hops)
{
	struct mesh_obs *o = leaf_spine_peer();
	struct event_verdict v[4];

	o->lost = 0.5;
	o->lost_flows = 1 << 0 | 1 << 2;
	ck_assert_uint_eq(run(1000, 6, v, 4), 1);
	ck_assert_int_eq(v[0].kind, EVENT_LOSSY_LINK);
	ck_assert_str_eq(v[0].subject, "peer=198.18.2.11,hops=198.19.11.2+198.19.21.1");
	ck_assert_int_eq(v[0].weight, VERDICT_AT_ONCE);
	ck_assert_ptr_nonnull(strstr(v[0].evidence, "\"flows_losing\":2"));
	/* a re-trace of a losing flow whose probe past the bad link was lost
	 * leaves that hop unknown: it does not take the hop off the subject */
	mesh_obs_flows(&g, &g.obs[0])->hop[2][2] = 0;
	ck_assert_uint_eq(run(7000, 1, v, 4), 1);
	ck_assert_str_eq(v[0].subject, "peer=198.18.2.11,hops=198.19.11.2+198.19.21.1");
}
END_TEST

/* One lost probe is chance, not a link. */
START_TEST(test_one_loss_is_not_a_link)
{
	struct mesh_obs *o = leaf_spine_peer();
	struct event_verdict v[4];

	(void)run(1000, 3, v, 4);
	o->lost = 1;
	o->lost_flows = 1;
	(void)run(4000, 1, v, 4);
	o->lost = 0;
	o->lost_flows = 0;
	ck_assert_uint_eq(run(5000, 3, v, 4), 0);
}
END_TEST

/* The loss window is 10 s at any tick: at 100 ms ticks, two losses 9 s
 * ago still count (the ring grows to hold them). */
START_TEST(test_window_holds_fast_ticks)
{
	struct mesh_obs *o = leaf_spine_peer();
	struct event_verdict v[4];

	(void)run_every(1000, 5, 100, v, 4);
	o->lost = 10; /* one probe in each of the next 2 ticks */
	o->lost_flows = 1;
	(void)run_every(1500, 2, 100, v, 4);
	o->lost = 0;
	o->lost_flows = 0;
	ck_assert_uint_eq(run_every(1700, 88, 100, v, 4), 1);
	ck_assert_int_eq(v[0].kind, EVENT_LOSSY_LINK);
	ck_assert_uint_ge(h.ring, 100);
	mesh_history_free(&h);
}
END_TEST

/* Two losses in a window are a link at the defaults' 80 probes, and chance
 * among the 800 of a peer probed every 12.5 ms, where three are not; two
 * on the flows of one spine are not, among the 400 across it. */
START_TEST(test_two_losses_against_probes_sent)
{
	struct mesh_obs *o = leaf_spine_peer();
	struct event_verdict v[4];

	(void)run(1000, 10, v, 4);
	o->lost = 1;
	o->lost_flows = 1;
	(void)run(11000, 1, v, 4);
	ck_assert_uint_eq(run(12000, 1, v, 4), 1);
	ck_assert_int_eq(v[0].kind, EVENT_LOSSY_LINK);

	mesh_history_free(&h);
	o->sent = 80;
	o->lost = 0;
	(void)run(1000, 10, v, 4);
	o->lost = 1;
	(void)run(11000, 1, v, 4);
	o->lost_flows = 1 << 4;
	ck_assert_uint_eq(run(12000, 1, v, 4), 0);
	ck_assert_uint_eq(run(13000, 1, v, 4), 1);
	o->lost_flows = 1;
	ck_assert_uint_eq(run(14000, 1, v, 4), 1);

	mesh_history_free(&h);
	o->lost = 0;
	(void)run(1000, 10, v, 4);
	o->lost = 1;
	(void)run(11000, 1, v, 4);
	ck_assert_uint_eq(run(12000, 1, v, 4), 1);
	ck_assert_ptr_nonnull(strstr(v[0].evidence, "\"hop_sent\":400,\"hop_lost\":2"));
}
END_TEST

/* Every flow unanswered at once: unreachable, not lossy, on no tick
 * (the first loses half, as a pause comes mid-tick). */
START_TEST(test_silent_peer_is_unreachable)
{
	struct mesh_obs *o = leaf_spine_peer();
	struct event_verdict v[4];

	(void)run(1000, 3, v, 4);
	o->lost = 4;
	o->lost_flows = 0xff;
	ck_assert_uint_eq(run(4000, 1, v, 4), 0);
	o->lost = 8;
	o->rtt_count = o->rtt_sum = 0;
	ck_assert_uint_eq(run(5000, 2, v, 4), 0);
	ck_assert_uint_eq(run(7000, 1, v, 4), 1);
	verdict_is(&v[0], EVENT_UNREACHABLE, "peer=198.18.2.11", EVENT_CAUSE_HOST);
}
END_TEST

/* Silent as above, and its kernel too: a knock unanswered for its whole
 * timeout (0.5 s) says the path is cut (a stall, network); a kernel silent
 * for less leaves a host that stopped. */
START_TEST(test_silent_kernel_is_a_stall)
{
	struct mesh_obs *o = leaf_spine_peer();
	struct event_verdict v[4];

	(void)run(1000, 3, v, 4);
	o->lost = 8;
	o->lost_flows = 0xff;
	o->rtt_count = o->rtt_sum = 0;
	o->kernel_silent_s = 0.4;
	ck_assert_uint_eq(run(4000, 3, v, 4), 1);
	verdict_is(&v[0], EVENT_UNREACHABLE, "peer=198.18.2.11", EVENT_CAUSE_HOST);
	o->kernel_silent_s = 1.9;
	ck_assert_uint_eq(run(7000, 1, v, 4), 1);
	verdict_is(&v[0], EVENT_STALL, "peer=198.18.2.11", EVENT_CAUSE_NETWORK);
	ck_assert_ptr_nonnull(strstr(v[0].evidence, "\"kernel_silent_seconds\":1.9"));
}
END_TEST

/* The leaf-spine peer probed 8 times a second, of which queued in a
 * queue's spike (the collector's), losing lost a second on flow 0, of
 * which lost_queued in a spike; v holds the verdicts of 6 ticks of that.
 * Returns their count. */
static size_t spiked_peer(double queued, double lost, double lost_queued, struct event_verdict *v)
{
	struct mesh_obs *o = leaf_spine_peer();

	h.flows = 8;
	(void)run(1000, 3, v, 4);
	o->sent_queued = queued;
	o->lost = lost;
	o->lost_queued = lost_queued;
	o->lost_flows = 1;
	return run(4000, 6, v, 4);
}

/* Losses in a spike are a full queue's drops: congestion, not a lossy
 * link. The same losses outside one, later, are a link's. */
START_TEST(test_loss_in_a_spike_is_congestion)
{
	struct event_verdict v[4];

	ck_assert_uint_eq(spiked_peer(8, 0.5, 0.5, v), 0);
	g.obs[0].sent_queued = g.obs[0].lost_queued = 0;
	ck_assert_uint_eq(run(20000, 12, v, 4), 1);
	ck_assert_int_eq(v[0].kind, EVENT_LOSSY_LINK);
}
END_TEST

/* A busy link goes bad too: half its probes queued, its losses outside
 * the spikes are a link's. */
START_TEST(test_loss_outside_a_spike_is_a_link)
{
	struct event_verdict v[4];

	ck_assert_uint_eq(spiked_peer(4, 0.5, 0, v), 1);
	verdict_is(&v[0], EVENT_LOSSY_LINK, "peer=198.18.2.11,hops=198.19.11.2+198.19.21.1",
		   EVENT_CAUSE_NETWORK);
}
END_TEST

/* A peer back from an outage: the window's losses are the outage's, not
 * a lossy link's. */
START_TEST(test_outage_is_not_a_lossy_link)
{
	struct mesh_obs *o = leaf_spine_peer();
	struct event_verdict v[4];

	(void)run(1000, 3, v, 4);
	silence(0, 1);
	ck_assert_uint_eq(run(4000, 4, v, 4), 1);
	ck_assert_int_eq(v[0].kind, EVENT_UNREACHABLE);
	o->lost = 0;
	o->lost_flows = 0;
	o->rtt_count = 8;
	o->rtt_sum = 8 * 100e-6;
	for (int i = 0; i < 12; i++)
		ck_assert_uint_eq(run(8000 + i * 1000, 1, v, 4), 0);
}
END_TEST

/*
 * An outage under a second (an agent restarted on the peer, or one that
 * came up after its prober): every flow of two rounds lost, at 100 ms
 * ticks, then answers. No second was silent, yet losing every flow at once
 * is no link's: no lossy_link while the window holds it.
 */
START_TEST(test_short_outage_is_not_a_lossy_link)
{
	struct mesh_obs *o = leaf_spine_peer();
	struct event_verdict v[4];

	h.flows = 8;
	o->sent = o->rtt_count = 80; /* a round every 100 ms */
	o->rtt_sum = 80 * 100e-6;
	(void)run_every(1000, 20, 100, v, 4);
	o->lost = 80;
	o->lost_flows = 0xff;
	o->rtt_count = o->rtt_sum = 0;
	(void)run_every(3000, 2, 100, v, 4);
	o->lost = 0;
	o->lost_flows = 0;
	o->rtt_count = 80;
	o->rtt_sum = 80 * 100e-6;
	for (int i = 0; i < 100; i++)
		ck_assert_uint_eq(run_every(3200 + i * 100, 1, 100, v, 4), 0);
}
END_TEST

/* A peer that never answered has no responder (yet): not gone. Nor is one
 * silent for under 3 s since its last answer, however few ticks the
 * history holds (an agent that just started). */
START_TEST(test_unreachable_after_3_s_of_silence)
{
	struct event_verdict v[4];

	(void)leaf_spine_peer();
	silence(0, 1);
	ck_assert_uint_eq(run(1000, 6, v, 4), 0);
	mesh_history_free(&h);
	(void)leaf_spine_peer();
	(void)run(1000, 1, v, 4);
	silence(0, 1);
	ck_assert_uint_eq(run(2000, 2, v, 4), 0);
	ck_assert_uint_eq(run(4000, 1, v, 4), 1);
	ck_assert_int_eq(v[0].kind, EVENT_UNREACHABLE);
}
END_TEST

/* A flow ten times slower than its siblings: path_latency on its hops. */
START_TEST(test_slow_flow_is_path_latency)
{
	struct mesh_obs *o = leaf_spine_peer();
	struct event_verdict v[4];

	o->rtt_sum = 7 * 100e-6 + 1e-3;
	mesh_obs_flows(&g, o)->rtt[5] = 1e-3;
	ck_assert_uint_eq(run(1000, 2, v, 4), 1);
	ck_assert_int_eq(v[0].kind, EVENT_PATH_LATENCY);
	ck_assert_int_eq(v[0].weight, VERDICT_OVER);
	/* the hops flow 5 crosses and flows 0-3 avoid: spine 2 and its link */
	ck_assert_str_eq(v[0].subject, "peer=198.18.2.11,hops=198.19.12.2+198.19.22.1");
	ck_assert_int_eq(event_kind_cause(v[0].kind), EVENT_CAUSE_NETWORK);
}
END_TEST

/* A flow slower than siblings that cross the same hops, or whose hops no
 * trace learnt, is its hosts' (receive queues are picked by port): no
 * path_latency. */
START_TEST(test_slow_flow_on_shared_hops_is_not_a_path)
{
	struct mesh_obs *o = &g.obs[0];
	struct event_verdict v[4];

	memset(&g, 0, sizeof(g));
	g.n = 1;
	behind_leaf_2(o, 11, 0xff); /* every flow across spine 1 */
	o->rtt_sum = 7 * 100e-6 + 1e-3;
	mesh_obs_flows(&g, o)->rtt[5] = 1e-3;
	ck_assert_uint_eq(run(1000, 3, v, 4), 0);
	o->known_flows = 0; /* no trace answered */
	memset(o->flows->hop, 0, sizeof(o->flows->hop));
	ck_assert_uint_eq(run(4000, 3, v, 4), 0);
}
END_TEST

/* n peers on eth0 (198.18.0.2...), each probed on 8 flows a second and
 * losing lost probes of them a second; no hops known (one bridge). */
static void eth0_peers(size_t n, double lost)
{
	memset(&g, 0, sizeof(g));
	mesh_history_free(&h);
	g.n = n;
	for (size_t i = 0; i < n; i++) {
		struct mesh_obs *o = &g.obs[i];

		snprintf(o->peer, sizeof(o->peer), "198.18.0.%zu", i + 2);
		o->addr = 0xc6120002 + (uint32_t)i;
		strcpy(o->ifname, "eth0");
		o->sent = 8;
		o->lost = lost;
		o->lost_flows = lost > 0 ? 1 : 0;
		o->rtt_sum = 8 * 100e-6;
		o->rtt_count = 8;
	}
}

/* Every peer eth0 carries losing: eth0's own link, in one lossy_link
 * naming it, not one a peer. */
START_TEST(test_every_peer_losing_is_the_own_link)
{
	struct event_verdict v[8];

	eth0_peers(3, 0.5);
	ck_assert_uint_eq(run(1000, 6, v, 8), 1);
	ck_assert_int_eq(v[0].kind, EVENT_LOSSY_LINK);
	ck_assert_str_eq(v[0].subject, "interface=eth0");
	ck_assert_ptr_nonnull(strstr(v[0].evidence, "\"peers\":3,\"peers_failing\":3"));
	/* one peer of four clean: each losing peer is its own */
	eth0_peers(4, 0.5);
	g.obs[3].lost = 0;
	g.obs[3].lost_flows = 0;
	ck_assert_uint_eq(run(1000, 6, v, 8), 3);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(strncmp(v[i].subject, "peer=", 5), 0);
	/* two peers: two faults as likely as one */
	eth0_peers(2, 0.5);
	ck_assert_uint_eq(run(1000, 6, v, 8), 2);
	ck_assert_int_eq(strncmp(v[0].subject, "peer=", 5), 0);
}
END_TEST

/* An own link that fails its peers a few seconds apart: the first ones'
 * lossy_link verdicts wait for the rest, and the interface is named, not
 * the peers one by one, and stays named while most of them lose. A fabric
 * link that fails most of them, not all: each its own, after the wait. */
START_TEST(test_own_link_fails_peers_in_turn)
{
	struct event_verdict v[8];

	eth0_peers(6, 0.5);
	g.obs[5].lost = 0;
	g.obs[5].lost_flows = 0;
	for (int64_t t = 1000; t <= 4000; t += 1000)
		ck_assert_uint_eq(run(t, 1, v, 8), 0);
	g.obs[5].lost = 0.5;
	g.obs[5].lost_flows = 1;
	ck_assert_uint_eq(run(5000, 1, v, 8), 1);
	verdict_is(&v[0], EVENT_LOSSY_LINK, "interface=eth0", EVENT_CAUSE_NETWORK);
	/* named, it stays so while one peer's window comes out clean */
	g.obs[0].lost = 0;
	g.obs[0].lost_flows = 0;
	ck_assert_uint_eq(run(6000, 12, v, 8), 1);
	verdict_is(&v[0], EVENT_LOSSY_LINK, "interface=eth0", EVENT_CAUSE_NETWORK);

	eth0_peers(6, 0.5);
	g.obs[5].lost = 0;
	g.obs[5].lost_flows = 0;
	ck_assert_uint_eq(run(1000, 4, v, 8), 0);
	ck_assert_uint_eq(run(5000, 1, v, 8), 5);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(strncmp(v[i].subject, "peer=", 5), 0);
}
END_TEST

/* Peers of eth0 on its own segment: each flow's one hop is the peer. */
static void eth0_segment(size_t n)
{
	eth0_peers(n, 0);
	for (size_t i = 0; i < n; i++) {
		for (int f = 0; f < 8; f++)
			mesh_obs_flows(&g, &g.obs[i])->hop[f][0] = g.obs[i].addr;
		g.obs[i].known_flows = 0xff;
	}
}

/* Peers i and up to n lose a probe a tick, each on its own flow; the rest
 * none. */
static void segment_lose(size_t from, size_t to)
{
	for (size_t i = 0; i < g.n; i++) {
		g.obs[i].lost = i >= from && i < to;
		g.obs[i].lost_flows = i >= from && i < to ? 1ULL << (i % 8) : 0;
	}
}

/* Peers that share no hop losing together are an own link's first: their
 * verdicts wait, and once most of the interface's peers lose it is named,
 * before every one has. One peer losing alone is its own at once; peers
 * that lose but share a hop are the fabric's (test_losses_across_one_hop_pool).
 * Spread losses that never reach most of the peers speak after the wait. */
START_TEST(test_spread_losses_await_the_own_link)
{
	struct event_verdict v[8];

	eth0_segment(7);
	(void)run(1000, 3, v, 8);
	segment_lose(0, 2);
	ck_assert_uint_eq(run(4000, 2, v, 8), 0);
	segment_lose(0, 6);
	ck_assert_uint_eq(run(6000, 1, v, 8), 1);
	verdict_is(&v[0], EVENT_LOSSY_LINK, "interface=eth0", EVENT_CAUSE_NETWORK);

	eth0_segment(7);
	(void)run(1000, 3, v, 8);
	segment_lose(0, 1);
	ck_assert_uint_eq(run(4000, 2, v, 8), 1);
	verdict_is(&v[0], EVENT_LOSSY_LINK, "peer=198.18.0.2", EVENT_CAUSE_NETWORK);

	eth0_segment(7);
	(void)run(1000, 3, v, 8);
	segment_lose(0, 3);
	ck_assert_uint_eq(run(4000, 3, v, 8), 0);
	ck_assert_uint_eq(run(7000, 1, v, 8), 3);
	verdict_is(&v[2], EVENT_LOSSY_LINK, "peer=198.18.0.4", EVENT_CAUSE_NETWORK);

	/* another peer's losses in a queue's spike (a full queue's, not a
	 * link's at random) are no sign of the own link: peer 0 at once */
	eth0_segment(7);
	(void)run(1000, 3, v, 8);
	segment_lose(0, 2);
	g.obs[1].sent_queued = 4;
	g.obs[1].lost_queued = 1;
	ck_assert_uint_eq(run(4000, 2, v, 8), 1);
	verdict_is(&v[0], EVENT_LOSSY_LINK, "peer=198.18.0.2", EVENT_CAUSE_NETWORK);
}
END_TEST

/* At 200 ms ticks, peer 0 of eth0's four losing a probe a tick of the 16
 * the collector sends it once it lost (6.25 %), and the others, probed
 * sibling_sent a second, clean from the start (from tick `from`, sibling 1
 * losing one a tick too). Returns the tick, counted from the first loss,
 * whose verdicts first name something (0: none in 20), with them in v.
 * (Observations are rates a second.) */
static int lone_loss(double sibling_sent, int from, struct event_verdict *v, size_t *n)
{
	eth0_segment(4);
	h.answer_wait_ms = 500; /* at the default 1 s interval */
	for (size_t i = 0; i < 4; i++)
		g.obs[i].sent = g.obs[i].rtt_count = 8;
	(void)run_every(1000, 5, 200, v, 8);
	g.obs[0].sent = 80;
	g.obs[0].lost = 5;
	g.obs[0].lost_flows = 1;
	for (size_t i = 1; i < 4; i++)
		g.obs[i].sent = g.obs[i].rtt_count = sibling_sent;
	for (int k = 1; k <= 20; k++) {
		if (k == from) {
			g.obs[1].lost = 5;
			g.obs[1].lost_flows = 2;
		}
		*n = run_every(2000 + k * 200, 1, 200, v, 8);
		if (*n)
			return k;
	}
	return 0;
}

/* One peer losing alone is its path's once the interface's other peers
 * answered enough probes since its first loss that the same rate would
 * have shown on them: within a second where the collector probes them as
 * fast, a few where it does not (no later than the 3 s wait). Before
 * that it may be this host's own link, whose losses reach the others a
 * probe or two later, and then the own-link wait holds it. */
START_TEST(test_lone_loss_waits_for_its_siblings)
{
	struct event_verdict v[8];
	size_t n;
	int k;

	/* the siblings' probes count once their answers are due (500 ms):
	 * (1 - 1/16)^(3 x 16 (k - 2.5)) under 0.05 at k 4 */
	ck_assert_int_eq(lone_loss(80, 0, v, &n), 4);
	ck_assert_uint_eq(n, 1);
	verdict_is(&v[0], EVENT_LOSSY_LINK, "peer=198.18.0.2", EVENT_CAUSE_NETWORK);
	/* siblings at 8 a second: (1 - 1/16)^(3 x 1.6 (k - 2.5)) at k 13 */
	k = lone_loss(8, 0, v, &n);
	ck_assert_int_ge(k, 12);
	ck_assert_int_le(k, 14);
	verdict_is(&v[0], EVENT_LOSSY_LINK, "peer=198.18.0.2", EVENT_CAUSE_NETWORK);
	/* a sibling that loses too, as an own link's do: the own-link wait
	 * (3 s), then, two of four being no most, each its own */
	k = lone_loss(80, 2, v, &n);
	ck_assert_int_ge(k, 16);
	ck_assert_uint_eq(n, 2);
}
END_TEST

/* Every peer eth0 carries gone, a tick apart: eth0 cut off, a stall of the
 * network, not every peer's host unreachable, nor the first one gone; and
 * once it heals, no lossy link. */
START_TEST(test_every_peer_gone_is_a_cut_link)
{
	struct event_verdict v[8];

	eth0_peers(3, 0);
	(void)run(1000, 3, v, 8);
	silence(0, 1);
	(void)run(4000, 1, v, 8);
	silence(1, 3);
	ck_assert_uint_eq(run(5000, 2, v, 8), 0);
	ck_assert_uint_eq(run(7000, 1, v, 8), 1);
	verdict_is(&v[0], EVENT_STALL, "interface=eth0", EVENT_CAUSE_NETWORK);
	/* healed: the window's losses are the outage's, not a lossy link */
	for (size_t i = 0; i < 3; i++) {
		g.obs[i].lost = 0;
		g.obs[i].lost_flows = 0;
		g.obs[i].rtt_count = 8;
		g.obs[i].rtt_sum = 8 * 100e-6;
	}
	for (int64_t t = 8000; t < 14000; t += 1000)
		ck_assert_uint_eq(run(t, 1, v, 8), 0);
}
END_TEST

/* n peers behind the other leaf (198.18.2.11...), of whose 8 flows only
 * flow 0 crosses spine 1. */
static void one_flow_over_spine_1(size_t n)
{
	memset(&g, 0, sizeof(g));
	mesh_history_free(&h);
	h.flows = 8;
	g.n = n;
	for (size_t i = 0; i < n; i++)
		behind_leaf_2(&g.obs[i], (unsigned)i + 11, 0x01);
}

/* Peer i loses one probe this tick, on flow f. */
static void lose_one(size_t i, int f)
{
	for (size_t k = 0; k < g.n; k++) {
		g.obs[k].lost = k == i;
		g.obs[k].lost_flows = k == i ? 1ULL << f : 0;
	}
}

/* A link two peers' few flows cross, each losing once, a tick apart: by
 * each peer's probes chance, by those across the link (10 a second, not
 * 80) a lossy link, on each of them, naming it. Two losses on different
 * spines are chance on each. */
START_TEST(test_losses_across_one_hop_pool)
{
	struct event_verdict v[8];

	one_flow_over_spine_1(4);
	(void)run(1000, 3, v, 8);
	lose_one(0, 0);
	ck_assert_uint_eq(run(4000, 1, v, 8), 0);
	lose_one(2, 0);
	ck_assert_uint_eq(run(5000, 1, v, 8), 2);
	verdict_is(&v[0], EVENT_LOSSY_LINK, "peer=198.18.2.11,hops=198.19.11.2+198.19.21.1",
		   EVENT_CAUSE_NETWORK);
	verdict_is(&v[1], EVENT_LOSSY_LINK, "peer=198.18.2.13,hops=198.19.11.2+198.19.21.1",
		   EVENT_CAUSE_NETWORK);
	ck_assert_ptr_nonnull(strstr(v[0].evidence, "\"hop\":\"198.19.11.2\""));

	one_flow_over_spine_1(4);
	(void)run(1000, 3, v, 8);
	lose_one(0, 0);
	(void)run(4000, 1, v, 8);
	lose_one(2, 3);
	ck_assert_uint_eq(run(5000, 1, v, 8), 0);
	lose_one(g.n, 0); /* none */
	ck_assert_uint_eq(run(6000, 6, v, 8), 0);

	/* peers whose hops are not shown may cross spine 1 on every flow:
	 * 8 of them, clean, make two losses chance among the pool's 680 */
	one_flow_over_spine_1(12);
	for (size_t i = 4; i < 12; i++)
		g.obs[i].known_flows = 0;
	(void)run(1000, 10, v, 8);
	lose_one(0, 0);
	(void)run(11000, 1, v, 8);
	lose_one(2, 0);
	ck_assert_uint_eq(run(12000, 1, v, 8), 0);
}
END_TEST

/* The mesh's counters for peer (on interface ifname, or none: NULL), as
 * the collector shows them: so many probes sent, answered and lost. */
static void feed_probes(struct registry *reg, const char *peer, const char *ifname, uint64_t sent,
			uint64_t answered, uint64_t lost)
{
	static const struct metric_desc d_sent = { M_MESH_PROBES_SENT_TOTAL, "t", METRIC_COUNTER, 0,
						   0 },
					d_lost = { M_MESH_PROBES_LOST_TOTAL, "t", METRIC_COUNTER, 0,
						   0 },
					d_answered = { M_MESH_RTT_SECONDS_COUNT, "t",
						       METRIC_COUNTER, 0, 0 };
	struct label l[] = { { "peer", peer }, { "interface", ifname } };
	size_t nl = ifname ? 2 : 1;
	struct sample_sink *sink = registry_sink(reg, "t");

	(void)sample_counter(sink, &d_sent, l, nl, sent);
	(void)sample_counter(sink, &d_answered, l, nl, answered);
	(void)sample_counter(sink, &d_lost, l, nl, lost);
}

/* This host's TCP to peer waiting wait_s for acks of data in flight. */
static void feed_ack_wait(struct registry *reg, const char *peer, double wait_s)
{
	static const struct metric_desc d_stall = { "fabmon_tcp_ack_stall_seconds", "t",
						    METRIC_GAUGE, 0, 0 },
					d_flight = { "fabmon_tcp_in_flight_bytes", "t",
						     METRIC_GAUGE, 0, 0 };
	struct label l[] = { { "peer", peer } };

	(void)sample_gauge(registry_sink(reg, "t"), &d_stall, l, 1, wait_s);
	(void)sample_gauge(registry_sink(reg, "t"), &d_flight, l, 1, 65536);
}

/*
 * Two peers silent to the mesh for 5 s: one whose TCP from here waits for
 * acks of data in flight all that while (its kernel stopped acking: a cut
 * path) is the TCP stall's, not unreachable; the other, with no TCP to
 * tell, is unreachable.
 */
START_TEST(test_run_stalled_peer_is_not_unreachable)
{
	static const char *const peers[] = { "198.18.0.2", "198.18.0.3" };
	struct registry *reg = registry_new(64, 60000);
	struct event_verdict out[8];
	struct detect *det = NULL;
	struct config cfg;
	size_t n = 0;

	config_defaults(&cfg);
	ck_assert_int_eq(detect_new(&cfg, &det), 0);
	for (int t = 0; t <= 9; t++) {
		registry_begin_tick(reg, 1800000000000LL + t * 1000LL);
		for (size_t i = 0; i < 2; i++)
			feed_probes(reg, peers[i], NULL, 8ULL * (uint64_t)t,
				    8ULL * (uint64_t)(t < 4 ? t : 4),
				    8ULL * (uint64_t)(t < 4 ? 0 : t - 4));
		if (t >= 4)
			feed_ack_wait(reg, peers[0], t - 3.5);
		n = detect_run(det, reg, out, sizeof(out) / sizeof(out[0]));
		registry_end_tick(reg);
	}
	ck_assert_uint_eq(n, 2);
	verdict_is(&out[0], EVENT_STALL, "peer=198.18.0.2", EVENT_CAUSE_NETWORK);
	verdict_is(&out[1], EVENT_UNREACHABLE, "peer=198.18.0.3", EVENT_CAUSE_HOST);
	detect_free(det);
	registry_free(reg);
}
END_TEST

/*
 * Every peer of eth0 losing half its probes: the mesh names eth0, and this
 * host's TCP wait for acks from one of those peers is that link's too, not
 * a stall of its own on the peer.
 */
START_TEST(test_run_own_link_takes_its_peers_stalls)
{
	static const char *const peers[] = { "198.18.0.2", "198.18.0.3", "198.18.0.4" };
	struct registry *reg = registry_new(64, 60000);
	struct event_verdict out[8];
	struct detect *det = NULL;
	struct config cfg;
	size_t n = 0;

	config_defaults(&cfg);
	ck_assert_int_eq(detect_new(&cfg, &det), 0);
	for (int t = 0; t <= 6; t++) {
		registry_begin_tick(reg, 1800000000000LL + t * 1000LL);
		for (size_t i = 0; i < 3; i++)
			feed_probes(reg, peers[i], "eth0", 8ULL * (uint64_t)t, 4ULL * (uint64_t)t,
				    4ULL * (uint64_t)t);
		if (t >= 2)
			feed_ack_wait(reg, peers[0], t - 1.5);
		n = detect_run(det, reg, out, sizeof(out) / sizeof(out[0]));
		registry_end_tick(reg);
	}
	ck_assert_uint_eq(n, 1);
	verdict_is(&out[0], EVENT_LOSSY_LINK, "interface=eth0", EVENT_CAUSE_NETWORK);
	detect_free(det);
	registry_free(reg);
}
END_TEST

/* A transfer to peer a second, done after total_s seconds in all, of 1 MB
 * each (tcp_waits' transfer series, as the registry holds them). */
static void feed_transfers(struct registry *reg, const char *peer, uint64_t count, double total_s)
{
	static const struct metric_desc d_count = { M_TCP_TRANSFER_DURATION_SECONDS_COUNT, "t",
						    METRIC_COUNTER, 0, 0 },
					d_sum = { M_TCP_TRANSFER_DURATION_SECONDS_SUM, "t",
						  METRIC_COUNTER, 0, 1e-6 },
					d_bytes = { M_TCP_TRANSFER_BYTES_TOTAL, "t", METRIC_COUNTER,
						    0, 0 };
	struct label l[] = { { "peer", peer } };
	struct sample_sink *sink = registry_sink(reg, "t");

	(void)sample_counter(sink, &d_count, l, 1, count);
	(void)sample_counter(sink, &d_sum, l, 1, (uint64_t)(total_s * 1e6 + 0.5));
	(void)sample_counter(sink, &d_bytes, l, 1, count * 1000000);
}

/* Transfers to a peer five times slower than their baseline from tick 10
 * (slow_handoff), lost of its probes lost at tick 9 (one is under
 * lossy_link's bound: chance). Returns the slow_handoff verdicts of the
 * last tick. */
static size_t slow_transfers(uint64_t lost)
{
	struct registry *reg = registry_new(64, 60000);
	struct event_verdict out[8];
	struct detect *det = NULL;
	struct config cfg;
	size_t n = 0, k = 0;
	double total = 0;

	config_defaults(&cfg);
	ck_assert_int_eq(detect_new(&cfg, &det), 0);
	for (int t = 0; t <= 14; t++) {
		registry_begin_tick(reg, 1800000000000LL + t * 1000LL);
		total += t < 10 ? 0.1 : 0.5;
		feed_transfers(reg, "198.18.0.2", (uint64_t)t, total);
		feed_probes(reg, "198.18.0.2", NULL, 8ULL * (uint64_t)t, 8ULL * (uint64_t)t,
			    t >= 9 ? lost : 0);
		n = detect_run(det, reg, out, sizeof(out) / sizeof(out[0]));
		registry_end_tick(reg);
	}
	for (size_t i = 0; i < n; i++)
		k += out[i].kind == EVENT_SLOW_HANDOFF;
	detect_free(det);
	registry_free(reg);
	return k;
}

/* A slow hand-off to a peer whose probes are being lost at random is a
 * lossy path's (lossy_link, once over its bound), not a slow hand-off. */
START_TEST(test_run_loss_holds_slow_handoff)
{
	ck_assert_uint_eq(slow_transfers(0), 1);
	ck_assert_uint_eq(slow_transfers(1), 0);
}
END_TEST

/* The gatherer reads the collector's series as the registry holds them. */
/*
 * Whether a peer's paths delivered since a moment: when it last answered,
 * as the collector saw it, to the millisecond whatever the tick (at 1 s
 * ticks a wait of 1.1 s has its second half inside one tick); a reading
 * without one (the series not shown) leaves the last.
 */
START_TEST(test_answered_since)
{
	struct event_verdict v[4];

	(void)leaf_spine_peer();
	g.obs[0].last_answer_ms = 2750;
	run_every(1000, 10, 200, v, 4); /* ticks 1000 .. 2800 */
	ck_assert(mesh_answered_since(&h, "198.18.2.11", 2400));
	ck_assert(!mesh_answered_since(&h, "198.18.2.11", 2750));
	ck_assert(!mesh_answered_since(&h, "198.18.2.12", 0));
	g.obs[0].last_answer_ms = 4600;
	run(3000, 3, v, 4); /* ticks 3000 .. 5000 */
	ck_assert(mesh_answered_since(&h, "198.18.2.11", 5000 - 550));
	g.obs[0].last_answer_ms = 0;
	run(6000, 1, v, 4);
	ck_assert(!mesh_answered_since(&h, "198.18.2.11", 6000 - 550));
}
END_TEST

/* Probes lost at random (outside a queue's spike) in a tick after a time,
 * what holds a slow hand-off back for lossy_link: a full queue's drops do
 * not count, a peer not probed has none. */
START_TEST(test_lost_since)
{
	struct event_verdict v[4];

	(void)spiked_peer(8, 0.5, 0.5, v); /* ticks to 9000, losses in spikes */
	ck_assert(!mesh_lost_since(&h, "198.18.2.11", 0));
	g.obs[0].sent_queued = g.obs[0].lost_queued = 0;
	(void)run(20000, 2, v, 4);
	ck_assert(mesh_lost_since(&h, "198.18.2.11", 19000));
	ck_assert(!mesh_lost_since(&h, "198.18.2.11", 21000));
	ck_assert(!mesh_lost_since(&h, "198.18.2.12", 0));
}
END_TEST

START_TEST(test_gather_series)
{
	struct series hop = {
		.name = "fabmon_mesh_hop_info",
		.labels = "peer=\"198.18.2.11\",flow=\"3\",hop=\"2\",address=\"198.19.11.2\"",
		.value = 1
	};
	struct series lost = { .name = "fabmon_mesh_flow_probes_lost_total",
			       .labels = "peer=\"198.18.2.11\",flow=\"3\",path=\"0badf00d\"",
			       .value = 1 };
	struct series sent = { .name = "fabmon_mesh_probes_sent_total",
			       .labels = "peer=\"198.18.2.11\",interface=\"eth0\"",
			       .rate = 8,
			       .has_rate = 1 };

	mesh_gather_begin(&g);
	ck_assert(mesh_gather_wants(hop.name));
	ck_assert(!mesh_gather_wants("fabmon_mesh_peers"));
	mesh_gather_series(&g, &hop);
	mesh_gather_series(&g, &lost);
	mesh_gather_series(&g, &sent);
	ck_assert_uint_eq(g.n, 1);
	ck_assert_uint_eq(g.obs[0].flows->hop[3][1], 0xc6130b02);
	ck_assert_uint_eq(g.obs[0].known_flows, 1 << 3);
	ck_assert_uint_eq(g.obs[0].lost_flows, 1 << 3);
	ck_assert(g.obs[0].sent == 8);
	ck_assert_str_eq(g.obs[0].ifname, "eth0");
}
END_TEST

Suite *detect_mesh_suite(void)
{
	const struct testutil_case cases[] = {
		{ "clean_is_quiet", test_clean_is_quiet, 0 },
		{ "loss_names_the_hops", test_loss_names_the_hops, 0 },
		{ "one_loss_is_not_a_link", test_one_loss_is_not_a_link, 0 },
		{ "window_holds_fast_ticks", test_window_holds_fast_ticks, 0 },
		{ "two_losses_against_probes_sent", test_two_losses_against_probes_sent, 0 },
		{ "silent_peer_is_unreachable", test_silent_peer_is_unreachable, 0 },
		{ "slow_flow_is_path_latency", test_slow_flow_is_path_latency, 0 },
		{ "slow_flow_on_shared_hops_is_not_a_path",
		  test_slow_flow_on_shared_hops_is_not_a_path, 0 },
		{ "loss_in_a_spike_is_congestion", test_loss_in_a_spike_is_congestion, 0 },
		{ "loss_outside_a_spike_is_a_link", test_loss_outside_a_spike_is_a_link, 0 },
		{ "outage_is_not_a_lossy_link", test_outage_is_not_a_lossy_link, 0 },
		{ "unreachable_after_3_s_of_silence", test_unreachable_after_3_s_of_silence, 0 },
		{ "every_peer_losing_is_the_own_link", test_every_peer_losing_is_the_own_link, 0 },
		{ "own_link_fails_peers_in_turn", test_own_link_fails_peers_in_turn, 0 },
		{ "spread_losses_await_the_own_link", test_spread_losses_await_the_own_link, 0 },
		{ "lone_loss_waits_for_its_siblings", test_lone_loss_waits_for_its_siblings, 0 },
		{ "run_stalled_peer_is_not_unreachable", test_run_stalled_peer_is_not_unreachable,
		  0 },
		{ "every_peer_gone_is_a_cut_link", test_every_peer_gone_is_a_cut_link, 0 },
		{ "run_loss_holds_slow_handoff", test_run_loss_holds_slow_handoff, 0 },
		{ "run_own_link_takes_its_peers_stalls", test_run_own_link_takes_its_peers_stalls,
		  0 },
		{ "answered_since", test_answered_since, 0 },
		{ "lost_since", test_lost_since, 0 },
		{ "silent_kernel_is_a_stall", test_silent_kernel_is_a_stall, 0 },
		{ "short_outage_is_not_a_lossy_link", test_short_outage_is_not_a_lossy_link, 0 },
		{ "losses_across_one_hop_pool", test_losses_across_one_hop_pool, 0 },
		{ "gather_series", test_gather_series, 0 },
	};

	return TESTUTIL_SUITE("detect_mesh", cases);
}
