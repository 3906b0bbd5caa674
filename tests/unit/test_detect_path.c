/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <string.h>

#include "../../agent/detect_path.h"
#include "suites.h"

static const struct path_config cfg = { .window_ms = 10000,
					.incast_fraction = 0.25,
					.straggler_fraction = 0.6 };

static const char *const peers[] = { "198.18.0.1", "198.18.0.2", "198.18.0.3", "198.18.0.4" };

/*
 * Feeds ticks 100 ms apart from start_ms: peer i delivers rate[i] (0: not
 * this tick; < 0: stalled), as delivery rate and transfer goodput alike,
 * with fan-out fanout[i], and judges each tick as the agent does. Returns
 * the time of the last tick.
 */
static int64_t feed(struct path_history *h, int64_t start_ms, unsigned ticks, const double *rate,
		    const double *fanout)
{
	struct event_verdict verdicts[4];
	struct path_input in[4];
	int64_t now = start_ms;

	for (unsigned t = 0; t < ticks; t++, now += 100) {
		for (unsigned i = 0; i < 4; i++)
			in[i] = (struct path_input){ .peer = peers[i],
						     .rate = rate[i],
						     .fanout = fanout[i],
						     .goodput = rate[i] > 0 ? rate[i] : 0,
						     .stalled = rate[i]<0, .acked = rate[i]> 0
									? rate[i]
									: 0 };
		path_history_update(h, in, 4, cfg.window_ms, now);
		(void)detect_path(h, &cfg, now, verdicts, 4);
	}
	return now - 100;
}

static struct path_history *history(void)
{
	static struct path_history h;

	memset(&h, 0, sizeof(h));
	return &h;
}

/* All-to-all: every sender fans out to three peers; the path to one of them
 * collapses to 3 of 50 MB/s. Two low samples of the last three put it under
 * the bound, and PATH_INCAST_TICKS ticks there name it. */
START_TEST(test_incast)
{
	struct path_history *h = history();
	const double fan[4] = { 3, 3, 3, 3 }, clean[4] = { 50e6, 40e6, 60e6, 55e6 },
		     hot[4] = { 50e6, 40e6, 3e6, 55e6 };
	struct event_verdict out[4];
	int64_t now = feed(h, 0, 20, clean, fan);

	ck_assert_uint_eq(detect_path(h, &cfg, now, out, 4), 0);
	now = feed(h, now + 100, 1, hot, fan);
	ck_assert_uint_eq(detect_path(h, &cfg, now, out, 4), 0); /* one low sample of three */
	now = feed(h, now + 100, PATH_INCAST_TICKS - 1, hot, fan);
	ck_assert_uint_eq(detect_path(h, &cfg, now, out, 4), 0); /* a tick short */
	now = feed(h, now + 100, 1, hot, fan);
	ck_assert_uint_eq(detect_path(h, &cfg, now, out, 4), 1);
	ck_assert(out[0].kind == EVENT_INCAST);
	ck_assert_str_eq(out[0].subject, "peer=198.18.0.3");
	/* others' median: medians of 50, 40 and 55 MB/s */
	ck_assert_double_eq_tol(out[0].score, 0.25 / (3e6 / 50e6), 1e-9);
	ck_assert_ptr_nonnull(strstr(out[0].evidence, "\"sender_fanout\":3"));
}
END_TEST

/* At the tail of a slow all-to-all only the hot receiver still takes data,
 * so one tick's fan-out reads 1: the window's largest keeps it an incast. */
START_TEST(test_incast_tail_fanout)
{
	struct path_history *h = history();
	const double fan[4] = { 3, 3, 3, 3 }, tail_fan[4] = { 0, 0, 1, 0 },
		     clean[4] = { 50e6, 40e6, 60e6, 55e6 }, tail[4] = { 0, 0, 2e6, 0 };
	struct event_verdict out[4];
	int64_t now = feed(h, 0, 10, clean, fan);

	now = feed(h, now + 100, 5, tail, tail_fan);
	ck_assert_uint_eq(detect_path(h, &cfg, now, out, 4), 1);
	ck_assert(out[0].kind == EVENT_INCAST);
}
END_TEST

/* A clean all-to-all whose per-transfer samples spread within 3x, as the
 * lab's do: nothing. */
START_TEST(test_incast_clean_spread)
{
	struct path_history *h = history();
	const double fan[4] = { 3, 3, 3, 3 };
	struct event_verdict out[4];
	int64_t now = 0;

	for (unsigned t = 0; t < 40; t++) {
		const double r[4] = { 30e6 + (t % 3) * 30e6, 90e6 - (t % 4) * 20e6, 40e6, 70e6 };

		now = feed(h, now + 100, 1, r, fan);
		ck_assert_uint_eq(detect_path(h, &cfg, now, out, 4), 0);
	}
}
END_TEST

/* Ring: each sender sends to one peer. A link at half rate is a straggler
 * once it has a full set of samples and has been the slowest for
 * PATH_STRAGGLER_TICKS ticks; a tick short, it is not. */
START_TEST(test_straggler)
{
	struct path_history *h = history();
	const double fan[4] = { 1, 1, 1, 1 }, half[4] = { 25e6, 24e6, 12e6, 26e6 };
	struct event_verdict out[4];
	int64_t now = feed(h, 0, PATH_SAMPLES + PATH_STRAGGLER_TICKS - 2, half, fan);

	ck_assert_uint_eq(detect_path(h, &cfg, now, out, 4), 0);
	now = feed(h, now + 100, 1, half, fan);
	ck_assert_uint_eq(detect_path(h, &cfg, now, out, 4), 1);
	ck_assert(out[0].kind == EVENT_STRAGGLER);
	ck_assert_str_eq(out[0].subject, "peer=198.18.0.3");
	ck_assert_double_eq_tol(out[0].score, 0.6 / (12e6 / 25e6), 1e-9);
}
END_TEST

/*
 * Full windows of ring samples: a link at 70 % of the others is slow, not a
 * straggler (the bound is 60 %); the ring's slow link (peer 3, half rate)
 * queues the ACKs of the next one (peer 4, 55 %), and only the slowest is
 * named.
 */
START_TEST(test_straggler_table)
{
	static const struct {
		double rate[4];
		const char *named; /* NULL: nothing */
	} cases[] = {
		{ { 25e6, 25e6, 17.5e6, 25e6 }, NULL },
		{ { 50e6, 50e6, 25e6, 27.5e6 }, "peer=198.18.0.3" },
	};
	const double fan[4] = { 1, 1, 1, 1 };
	struct event_verdict out[4];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct path_history *h = history();
		int64_t now =
			feed(h, 0, PATH_SAMPLES + PATH_STRAGGLER_TICKS - 1, cases[i].rate, fan);
		size_t n = detect_path(h, &cfg, now, out, 4);

		ck_assert_uint_eq(n, cases[i].named ? 1 : 0);
		if (cases[i].named)
			ck_assert_str_eq(out[0].subject, cases[i].named);
	}
}
END_TEST

/*
 * A ring coming back from a slow spell: the other links burst at four times
 * their rate in 5 of every 16 ticks, which lifts their upper quartiles to
 * 1.8 times the steady rate (43 of 24 MB/s). A steady link's upper quartile
 * is then 0.56 of theirs, under the 60 % bound, but its median is theirs:
 * no straggler.
 */
START_TEST(test_straggler_others_bursting)
{
	struct path_history *h = history();
	const double fan[4] = { 1, 1, 1, 1 };
	struct event_verdict out[4];
	int64_t now = 0;

	for (unsigned t = 0; t < 3 * PATH_SAMPLES; t++) {
		double burst = t % 16 < 5 ? 100e6 : 24e6;
		const double r[4] = { 24e6, burst, burst, burst };

		now = feed(h, now + 100, 1, r, fan);
		ck_assert_uint_eq(detect_path(h, &cfg, now, out, 4), 0);
	}
}
END_TEST

/* Comparing needs two other active peers: one peer against one is no
 * median; peers idle past the window are forgotten and not compared. */
START_TEST(test_needs_others)
{
	struct path_history *h = history();
	const double fan[4] = { 3, 3, 3, 3 }, two[4] = { 50e6, 0, 1e6, 0 },
		     all[4] = { 50e6, 50e6, 50e6, 50e6 }, alone[4] = { 0, 0, 1e6, 0 };
	struct event_verdict out[4];
	int64_t now = feed(h, 0, 20, two, fan);

	ck_assert_uint_eq(h->n, 2);
	ck_assert_uint_eq(detect_path(h, &cfg, now, out, 4), 0);
	h = history();
	now = feed(h, 0, 20, all, fan);
	now = feed(h, now + cfg.window_ms + 100, 5, alone, fan);
	ck_assert_uint_eq(h->n, 1);
	ck_assert_uint_eq(detect_path(h, &cfg, now, out, 4), 0);
}
END_TEST

/* A rate of 0 (no sample yet on a new connection) is not a sample. */
START_TEST(test_zero_rate_ignored)
{
	struct path_history *h = history();
	const double fan[4] = { 1, 1, 1, 1 }, r[4] = { 0, 0, 0, 0 };
	struct event_verdict out[4];
	int64_t now = feed(h, 0, 30, r, fan);

	ck_assert_uint_eq(h->n, 0);
	ck_assert_uint_eq(detect_path(h, &cfg, now, out, 4), 0);
}
END_TEST

/* After a stall the path retransmits and starts slow: for a second its
 * samples are the stall's, not a straggler's. */
START_TEST(test_stall_aftermath)
{
	struct path_history *h = history();
	const double fan[4] = { 1, 1, 1, 1 }, r[4] = { 25e6, 25e6, 25e6, 25e6 },
		     stalled[4] = { 25e6, 25e6, -1, 25e6 }, slow[4] = { 25e6, 25e6, 2e6, 25e6 };
	struct event_verdict out[4];
	int64_t now = feed(h, 0, PATH_SAMPLES, r, fan);

	now = feed(h, now + 100, 5, stalled, fan);
	now = feed(h, now + 100, STALL_AFTERMATH_MS / 100, slow, fan);
	ck_assert_uint_eq(h->peers[2].rate.count, PATH_SAMPLES);
	ck_assert_double_eq(window_median(&h->peers[2].rate, 0, 1), 25e6);
	ck_assert_uint_eq(detect_path(h, &cfg, now, out, 4), 0);
}
END_TEST

/* An incast needs transfer goodput and delivery rate to agree: rate
 * samples far past any link on the other paths (compressed ACKs) do not make
 * one, nor slow transfers to a peer whose fastest sender's rate is fine
 * (one of its senders waiting on a congested ACK path). */
START_TEST(test_incast_both_agree)
{
	const double rates[2][4] = { { 700e6, 700e6, 40e6, 700e6 }, { 40e6, 40e6, 40e6, 40e6 } },
		     goodputs[2][4] = { { 40e6, 40e6, 40e6, 40e6 }, { 40e6, 40e6, 4e6, 40e6 } };
	struct event_verdict out[4];

	for (unsigned c = 0; c < 2; c++) {
		struct path_history *h = history();
		int64_t now = 0;

		for (unsigned t = 0; t < 10; t++) {
			struct path_input in[4];

			now += 100;
			for (unsigned i = 0; i < 4; i++)
				in[i] = (struct path_input){ .peer = peers[i],
							     .rate = rates[c][i],
							     .fanout = 3,
							     .goodput = goodputs[c][i] };
			path_history_update(h, in, 4, cfg.window_ms, now);
			ck_assert_uint_eq(detect_path(h, &cfg, now, out, 4), 0);
		}
	}
}
END_TEST

/*
 * One all-to-all tick: peer i delivers rate[i] and acknowledges as much,
 * with retx[i] retransmits a second; goodput stays at the clean level (no
 * transfer has completed yet). Returns the verdicts.
 */
static size_t lossy_tick(struct path_history *h, int64_t now, const double *rate,
			 const double *retx, struct event_verdict *out)
{
	struct path_input in[4];

	for (unsigned i = 0; i < 4; i++)
		in[i] = (struct path_input){ .peer = peers[i],
					     .rate = rate[i],
					     .fanout = 3,
					     .goodput = 50e6,
					     .retransmits = retx[i],
					     .acked = rate[i] };
	path_history_update(h, in, 4, cfg.window_ms, now);
	return detect_path(h, &cfg, now, out, 4);
}

/* A receiver whose queue drops what its senders push is named from the
 * first tick it loses while slow, and stays named while it is slow; a peer
 * as slow that loses nothing (a neighbour waiting on it), a loss burst at
 * speed (a clean all-gather had one for 4 ticks), a few retransmits, and
 * losses like the others' are not. Figures from the lab's t_incast, first tick after the
 * fault: 990 retransmits a second towards the receiver at 15 of 55 MB/s. At
 * under a quarter of the others' rate, the event opens on that tick. */
START_TEST(test_incast_lossy)
{
	const double clean[4] = { 50e6, 40e6, 60e6, 55e6 }, few[4] = { 10, 20, 40, 10 };
	const struct {
		double rate[4], retx[4];
		size_t named, next; /* this tick; the next, slow as this one, losing no more */
		int at_once; /* under incast_fraction too: opens on this tick */
	} cases[] = {
		{ { 55e6, 50e6, 15e6, 60e6 }, { 10, 10, 990, 10 }, 1, 1, 0 },
		{ { 55e6, 50e6, 10e6, 60e6 }, { 10, 10, 990, 10 }, 1, 1, 1 },
		{ { 55e6, 50e6, 15e6, 60e6 }, { 0, 0, 0, 0 }, 0, 0, 0 }, /* slow, no loss */
		{ { 55e6, 50e6, 45e6, 60e6 }, { 10, 10, 990, 10 }, 0, 0, 0 }, /* loss at speed */
		{ { 55e6, 50e6, 15e6, 60e6 }, { 10, 10, 40, 10 }, 0, 0, 0 }, /* under the floor */
		{ { 55e6, 50e6, 15e6, 60e6 },
		  { 2000, 2000, 990, 2000 },
		  0,
		  0,
		  0 }, /* all lose alike */
	};
	struct event_verdict out[4];

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct path_history *h = history();
		int64_t now = 0;

		for (unsigned t = 0; t < 10; t++, now += 100)
			ck_assert_uint_eq(lossy_tick(h, now, clean, few, out), 0);
		ck_assert_uint_eq(lossy_tick(h, now, cases[c].rate, cases[c].retx, out),
				  cases[c].named);
		if (cases[c].named) {
			ck_assert(out[0].kind == EVENT_INCAST);
			ck_assert_str_eq(out[0].subject, "peer=198.18.0.3");
			ck_assert_ptr_nonnull(
				strstr(out[0].evidence, "\"delivery_rate_share_now\""));
			ck_assert_int_eq(out[0].at_once, cases[c].at_once);
		}
		ck_assert_uint_eq(lossy_tick(h, now + 100, cases[c].rate, few, out), cases[c].next);
	}
}
END_TEST

/*
 * All-to-all with one receiver (peer 3) losing at a fifth of the others'
 * rate and its neighbour (peer 4) as slow by both measures but losing
 * nothing: the neighbour waits on the hot one (t_incast named it once so).
 * Only peer 3 is named while it loses; once it runs clean again, peer 4,
 * still slow, is named after PATH_INCAST_TICKS ticks.
 */
START_TEST(test_incast_neighbour_of_losing)
{
	struct path_history *h = history();
	const double clean[4] = { 50e6, 40e6, 60e6, 55e6 };
	const double hot[4] = { 50e6, 40e6, 10e6, 8e6 }, retx_hot[4] = { 0, 0, 990, 0 };
	const double after[4] = { 50e6, 40e6, 60e6, 8e6 }, none[4] = { 0 };
	struct event_verdict out[4];
	struct path_input in[4];
	int64_t now = 0;

	for (unsigned t = 0; t < 30; t++, now += 100) {
		const double *rate = t < 10 ? clean : t < 20 ? hot : after;
		const double *retx = t >= 10 && t < 20 ? retx_hot : none;
		size_t n;

		for (unsigned i = 0; i < 4; i++)
			in[i] = (struct path_input){ .peer = peers[i],
						     .rate = rate[i],
						     .fanout = 3,
						     .goodput = rate[i],
						     .retransmits = retx[i],
						     .acked = rate[i] };
		path_history_update(h, in, 4, cfg.window_ms, now);
		n = detect_path(h, &cfg, now, out, 4);
		if (t < 10) {
			ck_assert_uint_eq(n, 0);
		} else if (t < 20) {
			ck_assert_msg(n == 1, "tick %u: %zu verdicts", t, n);
			ck_assert_str_eq(out[0].subject, "peer=198.18.0.3");
		} else if (t >= 20 + PATH_INCAST_TICKS + 2) {
			/* peer 3's samples recover over 3 ticks, then peer 4's run */
			ck_assert_msg(n == 1, "tick %u: %zu verdicts", t, n);
			ck_assert_str_eq(out[0].subject, "peer=198.18.0.4");
		}
	}
}
END_TEST

Suite *detect_path_suite(void)
{
	Suite *s = suite_create("detect_path");
	TCase *tc = tcase_create("verdicts");

	tcase_add_test(tc, test_incast);
	tcase_add_test(tc, test_incast_tail_fanout);
	tcase_add_test(tc, test_incast_both_agree);
	tcase_add_test(tc, test_incast_lossy);
	tcase_add_test(tc, test_incast_neighbour_of_losing);
	tcase_add_test(tc, test_incast_clean_spread);
	tcase_add_test(tc, test_straggler);
	tcase_add_test(tc, test_straggler_table);
	tcase_add_test(tc, test_straggler_others_bursting);
	tcase_add_test(tc, test_needs_others);
	tcase_add_test(tc, test_zero_rate_ignored);
	tcase_add_test(tc, test_stall_aftermath);
	suite_add_tcase(s, tc);
	return s;
}
