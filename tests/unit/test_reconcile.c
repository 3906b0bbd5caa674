/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "agent/detect/reconcile.h"
#include "suites.h"
#include "testutil.h"

#define WINDOW_MS 10000

static struct link_history kh;
static struct mesh_history mh; /* probes no peer */
static struct mesh_gather mg;

static struct event_verdict verdict(enum event_kind kind, const char *subject)
{
	struct event_verdict v = { .kind = kind, .score = 1 };

	snprintf(v.subject, sizeof(v.subject), "%s", subject);
	return v;
}

/* eth0 carried traffic until now_ms; cut: it is down now. */
static void link_at(int64_t now_ms, int cut)
{
	const struct link_input up = { "interface=eth0", 1, 1e6 };
	const struct link_input down = { "interface=eth0", 0, 0 };

	memset(&kh, 0, sizeof(kh));
	for (int64_t t = now_ms - 1000; t < now_ms; t += 200)
		link_history_update(&kh, &up, 1, WINDOW_MS, t);
	link_history_update(&kh, cut ? &down : &up, 1, WINDOW_MS, now_ms);
}

/* How many of out[0..n) reconcile() keeps at 10 s, eth0 cut or not. */
static size_t kept(struct event_verdict *out, size_t n, int cut)
{
	link_at(10000, cut);
	return reconcile(&kh, &mh, &mg, out, n, 10000);
}

/* Cut off, every verdict on a peer or on this host is the link's, whatever
 * its kind or cause; the link's own, and a port's, stay. Not cut off, a
 * host's stall stays. */
START_TEST(test_cut_off_takes_peers_and_own_host)
{
	struct event_verdict out[] = {
		verdict(EVENT_STALL, "peer=198.18.0.2"),
		verdict(EVENT_STRAGGLER, "peer=198.18.0.3"),
		verdict(EVENT_STALL, "interface=eth0"),
		verdict(EVENT_HOST_STALL, "peer=198.18.0.4"),
		verdict(EVENT_HOST_STALL, "host=198.18.0.1"),
		verdict(EVENT_LOSSY_LINK, "device=mlx5_0,port=1"),
	};

	ck_assert_uint_eq(kept(out, 6, 1), 2);
	ck_assert_str_eq(out[0].subject, "interface=eth0");
	ck_assert_str_eq(out[1].subject, "device=mlx5_0,port=1");
	out[0] = verdict(EVENT_HOST_STALL, "host=198.18.0.1");
	ck_assert_uint_eq(kept(out, 2, 0), 2);
}
END_TEST

/* A peer both stalled and unreachable: its path is cut, which the stall
 * says; one the stall does not name stays unreachable. Not cut off, the
 * stalls stay too. */
START_TEST(test_stall_takes_its_unreachable)
{
	struct event_verdict out[] = {
		verdict(EVENT_UNREACHABLE, "peer=198.18.0.2"),
		verdict(EVENT_UNREACHABLE, "peer=198.18.0.3"),
		verdict(EVENT_STALL, "peer=198.18.0.2"),
	};

	ck_assert_uint_eq(kept(out, 3, 0), 2);
	ck_assert_int_eq(out[0].kind, EVENT_UNREACHABLE);
	ck_assert_str_eq(out[0].subject, "peer=198.18.0.3");
	ck_assert_int_eq(out[1].kind, EVENT_STALL);
}
END_TEST

/* A stall the cut link explains still explains the unreachable peer: the
 * link is the one cause of both. */
START_TEST(test_dropped_stall_still_explains)
{
	struct event_verdict out[] = {
		verdict(EVENT_STALL, "peer=198.18.0.2"),
		verdict(EVENT_UNREACHABLE, "peer=198.18.0.2"),
		verdict(EVENT_STALL, "interface=eth0"),
	};

	ck_assert_uint_eq(kept(out, 3, 1), 1);
	ck_assert_str_eq(out[0].subject, "interface=eth0");
}
END_TEST

/* A lossy link takes the slow transfers, ring link and receiver on its
 * peer (its subject may name hops); another peer's, and its stall, stay. */
START_TEST(test_lossy_link_takes_its_slow_path)
{
	struct event_verdict out[] = {
		verdict(EVENT_SLOW_HANDOFF, "peer=198.18.0.4"),
		verdict(EVENT_LOSSY_LINK, "peer=198.18.0.4,hops=198.19.11.2"),
		verdict(EVENT_STRAGGLER, "peer=198.18.0.4"),
		verdict(EVENT_INCAST, "peer=198.18.0.40"),
		verdict(EVENT_STALL, "peer=198.18.0.4"),
		verdict(EVENT_INCAST, "peer=198.18.0.4"),
	};

	ck_assert_uint_eq(kept(out, 6, 0), 3);
	ck_assert_int_eq(out[0].kind, EVENT_LOSSY_LINK);
	ck_assert_int_eq(out[1].kind, EVENT_INCAST);
	ck_assert_str_eq(out[1].subject, "peer=198.18.0.40");
	ck_assert_int_eq(out[2].kind, EVENT_STALL);
}
END_TEST

/* A stall on one peer takes the host_stalls on others and on this host:
 * they wait on the cut (held-out seed 1038: a downed rank's all-to-all
 * partner read nothing for 8.5 s). Without a stall, or with one only
 * held, they stay. */
START_TEST(test_stall_takes_host_stalls)
{
	struct event_verdict out[] = {
		verdict(EVENT_HOST_STALL, "peer=198.18.0.1"),
		verdict(EVENT_STALL, "peer=198.18.0.4"),
		verdict(EVENT_HOST_STALL, "host=198.18.0.2"),
	};

	ck_assert_uint_eq(kept(out, 3, 0), 1);
	ck_assert_int_eq(out[0].kind, EVENT_STALL);
	out[0] = verdict(EVENT_HOST_STALL, "peer=198.18.0.1");
	out[1] = verdict(EVENT_HOST_STALL, "host=198.18.0.2");
	ck_assert_uint_eq(kept(out, 2, 0), 2);
	/* a short wait that only holds a stall open explains nothing */
	out[2] = verdict(EVENT_STALL, "peer=198.18.0.4");
	out[2].weight = VERDICT_HOLD;
	ck_assert_uint_eq(kept(out, 3, 0), 3);
}
END_TEST

Suite *reconcile_suite(void)
{
	const struct testutil_case cases[] = {
		{ "cut_off_takes_peers_and_own_host", test_cut_off_takes_peers_and_own_host, 0 },
		{ "stall_takes_its_unreachable", test_stall_takes_its_unreachable, 0 },
		{ "dropped_stall_still_explains", test_dropped_stall_still_explains, 0 },
		{ "lossy_link_takes_its_slow_path", test_lossy_link_takes_its_slow_path, 0 },
		{ "stall_takes_host_stalls", test_stall_takes_host_stalls, 0 },
	};

	return TESTUTIL_SUITE("reconcile", cases);
}
