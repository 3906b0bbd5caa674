/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <string.h>

#include "agent/detect/path.h"
#include "suites.h"

/* incast_for 0: the incast tests below count ticks, test_incast_for time */
static const struct path_config cfg = { .window_ms = 10000,
					.incast_fraction = 0.25,
					.straggler_fraction = 0.6 };

static const char *const peers[] = { "198.18.0.1", "198.18.0.2", "198.18.0.3", "198.18.0.4" };

/*
 * Feeds ticks 100 ms apart from start_ms: peer i delivers rate[i] (0: not
 * this tick; < 0: stalled), as delivery rate, transfer goodput and busy
 * rate alike (busy all the tick), with fan-out fanout[i], and judges each
 * tick as the agent does. Returns the time of the last tick.
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
									: 0,
						     .busy = rate[i] > 0 };
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

/* detect_path()'s verdicts on h at now into out (room for 4), and how many
 * into *ret_n unless NULL; returns how many are not holds, which come
 * after them (test_straggler_hold). */
static size_t judged_all(struct path_history *h, int64_t now, struct event_verdict *out,
			 size_t *ret_n)
{
	size_t n = detect_path(h, &cfg, now, out, 4), k = 0;

	while (k < n && out[k].weight != VERDICT_HOLD)
		k++;
	for (size_t i = k; i < n; i++)
		ck_assert_int_eq(out[i].weight, VERDICT_HOLD);
	if (ret_n)
		*ret_n = n;
	return k;
}

static size_t judged(struct path_history *h, int64_t now, struct event_verdict *out)
{
	return judged_all(h, now, out, NULL);
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

	ck_assert_uint_eq(judged(h, now, out), 0);
	now = feed(h, now + 100, 1, hot, fan);
	ck_assert_uint_eq(judged(h, now, out), 0); /* one low sample of three */
	now = feed(h, now + 100, PATH_INCAST_TICKS - 1, hot, fan);
	ck_assert_uint_eq(judged(h, now, out), 0); /* a tick short */
	now = feed(h, now + 100, 1, hot, fan);
	ck_assert_uint_eq(judged(h, now, out), 1);
	ck_assert(out[0].kind == EVENT_INCAST);
	ck_assert_str_eq(out[0].subject, "peer=198.18.0.3");
	/* others' median: medians of 50, 40 and 55 MB/s */
	ck_assert_double_eq_tol(out[0].score, 0.25 / (3e6 / 50e6), 1e-9);
	ck_assert_ptr_nonnull(strstr(out[0].evidence, "\"sender_fanout\":3"));
}
END_TEST

/* A path under the bound names an incast once it has been for incast_for,
 * however many ticks that is: a busy receiving host slows it for less. */
START_TEST(test_incast_for)
{
	struct path_config slow = cfg;
	struct path_history *h = history();
	const double fan[4] = { 3, 3, 3, 3 }, clean[4] = { 50e6, 40e6, 60e6, 55e6 },
		     hot[4] = { 50e6, 40e6, 3e6, 55e6 };
	struct event_verdict out[4];
	int64_t now = feed(h, 0, 20, clean, fan), first;
	size_t n;

	slow.incast_for_ms = 1500;
	/* under from the second hot tick: two low samples of three */
	now = feed(h, now + 100, 2, hot, fan);
	first = now;
	for (;;) {
		n = detect_path(h, &slow, now, out, 4);
		if (n || now - first > 5000)
			break;
		now = feed(h, now + 100, 1, hot, fan);
	}
	ck_assert_uint_eq(n, 1);
	ck_assert(out[0].kind == EVENT_INCAST);
	ck_assert_int_eq(now - first, 1500);
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
	ck_assert_uint_eq(judged(h, now, out), 1);
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
		ck_assert_uint_eq(judged(h, now, out), 0);
	}
}
END_TEST

/* Ring: each sender sends to one peer. A link that drops to half rate is
 * a straggler on its first tick there; a new connection is judged only
 * once it has PATH_STRAGGLER_SAMPLES samples (its slow start). */
START_TEST(test_straggler)
{
	struct path_history *h = history();
	const double fan[4] = { 1, 1, 1, 1 }, clean[4] = { 25e6, 24e6, 26e6, 25e6 },
		     half[4] = { 25e6, 24e6, 12e6, 26e6 };
	struct event_verdict out[4];
	int64_t now = feed(h, 0, PATH_STRAGGLER_SAMPLES - 1, half, fan);

	ck_assert_uint_eq(judged(h, now, out), 0); /* too new */
	h = history();
	now = feed(h, 0, 10, clean, fan);
	ck_assert_uint_eq(judged(h, now, out), 0);
	now = feed(h, now + 100, 1, half, fan);
	ck_assert_uint_eq(judged(h, now, out), 1);
	ck_assert(out[0].kind == EVENT_STRAGGLER);
	ck_assert_str_eq(out[0].subject, "peer=198.18.0.3");
	/* the others' typical: 25, 24 and 25 MB/s */
	ck_assert_double_eq_tol(out[0].score, 0.6 / (12e6 / 25e6), 1e-9);
	ck_assert_ptr_nonnull(strstr(out[0].evidence, "\"busy_rate_share\":0.480"));
}
END_TEST

/*
 * Ring samples: a link at 70 % of the others is slow, not a straggler (the
 * bound is 60 %); the ring's slow link (peer 3, half rate) queues the ACKs
 * of the next one (peer 4, 55 %), and only the slowest is named; when that
 * neighbour dips under the slow link for a tick, the slow link, lowest by
 * its typical rate, is still the one named.
 */
START_TEST(test_straggler_table)
{
	static const struct {
		double rate[4], last[4]; /* 10 ticks of rate, then one of last */
		const char *named; /* NULL: nothing */
	} cases[] = {
		{ { 25e6, 25e6, 17.5e6, 25e6 }, { 25e6, 25e6, 17.5e6, 25e6 }, NULL },
		{ { 50e6, 50e6, 25e6, 27.5e6 }, { 50e6, 50e6, 25e6, 27.5e6 }, "peer=198.18.0.3" },
		{ { 50e6, 50e6, 25e6, 27.5e6 }, { 50e6, 50e6, 25e6, 20e6 }, "peer=198.18.0.3" },
	};
	const double fan[4] = { 1, 1, 1, 1 };
	struct event_verdict out[4];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct path_history *h = history();
		int64_t now = feed(h, 0, 10, cases[i].rate, fan);
		size_t n;

		now = feed(h, now + 100, 1, cases[i].last, fan);
		n = judged(h, now, out);
		ck_assert_uint_eq(n, cases[i].named ? 1 : 0);
		if (cases[i].named)
			ck_assert_str_eq(out[0].subject, cases[i].named);
	}
}
END_TEST

/*
 * A receiver's host that stalls for a moment: its link's busy rate falls to
 * 0.4 of the others', but its ACKs then come in a burst and the delivery
 * rate reads 18 times the link (the lab's clean runs): no straggler. The
 * same busy rate with a delivery rate as low is one.
 */
START_TEST(test_straggler_ack_burst)
{
	const double fan[4] = { 1, 1, 1, 1 }, clean[4] = { 45e6, 45e6, 45e6, 45e6 };
	const double dr[2] = { 800e6, 18e6 };
	struct event_verdict out[4];

	for (unsigned c = 0; c < 2; c++) {
		struct path_history *h = history();
		int64_t now = feed(h, 0, 10, clean, fan) + 100;
		struct path_input in[4];

		for (unsigned i = 0; i < 4; i++)
			in[i] = (struct path_input){ .peer = peers[i],
						     .rate = i == 1 ? dr[c] : 45e6,
						     .fanout = 1,
						     .acked = i == 1 ? 18e6 : 45e6,
						     .busy = 1 };
		path_history_update(h, in, 4, cfg.window_ms, now);
		ck_assert_uint_eq(judged(h, now, out), c);
	}
}
END_TEST

/* One ring tick into h, busy all of it: peer i acknowledges rate[i] bytes
 * a second, with delivery rate dr[i] and retx[i] retransmits a second, and
 * its one sender's receiving reads upstream[i] (NULL: none is local). */
static void ring_upstream(struct path_history *h, int64_t now, const double *rate, const double *dr,
			  const double *retx, const double *upstream)
{
	struct path_input in[4];

	for (unsigned i = 0; i < 4; i++)
		in[i] = (struct path_input){ .peer = peers[i],
					     .rate = dr[i],
					     .fanout = 1,
					     .retransmits = retx[i],
					     .acked = rate[i],
					     .busy = 1,
					     .upstream_rate = upstream ? upstream[i] : 0 };
	path_history_update(h, in, 4, cfg.window_ms, now);
}

static void ring_input(struct path_history *h, int64_t now, const double *rate, const double *dr,
		       const double *retx)
{
	ring_upstream(h, now, rate, dr, retx, NULL);
}

/* The same tick, judged: judged()'s count. */
static size_t ring_tick(struct path_history *h, int64_t now, const double *rate, const double *dr,
			const double *retx, struct event_verdict *out)
{
	ring_input(h, now, rate, dr, retx);
	return judged(h, now, out);
}

/* Ten clean ring ticks from 0 at rate on every path, none judged slow.
 * Returns the next tick's time. */
static int64_t ring_clean(struct path_history *h, double rate)
{
	const double clean[4] = { rate, rate, rate, rate }, none[4] = { 0 };
	struct event_verdict out[4];
	int64_t now = 0;

	for (unsigned t = 0; t < 10; t++, now += 100)
		ck_assert_uint_eq(ring_tick(h, now, clean, clean, none, out), 0);
	return now;
}

/*
 * The ring's slow link (peer 3) and the next one (peer 4), whose ACKs wait
 * in the slow link's queue, as the lab's t_straggler saw them: peer 4 dips
 * under peer 3 now and then. At the onset the slow link's queue overflows
 * (1000 retransmits a second) and it is named though peer 4 is lower;
 * later, with no loss, the one named keeps the name while it stays under
 * the bound. Without either, the lower one is named. In the loss's
 * aftermath a filled hole acknowledges a burst that lifts the tick's busy
 * rate over the bound (17 of 25 MB/s); with the tick before (12) it is
 * under.
 */
START_TEST(test_straggler_neighbour)
{
	struct path_history *h = history();
	const double none[4] = { 0 };
	const double onset[4] = { 25e6, 25e6, 12e6, 9e6 }, onset_retx[4] = { 0, 0, 1000, 0 };
	const double hole[4] = { 25e6, 25e6, 17e6, 20e6 }, hole_dr[4] = { 25e6, 25e6, 10e6, 20e6 };
	const double dip[4] = { 25e6, 25e6, 12e6, 10e6 };
	struct event_verdict out[4];
	int64_t now = ring_clean(h, 25e6);

	ck_assert_uint_eq(ring_tick(h, now, onset, onset, onset_retx, out), 1);
	ck_assert_str_eq(out[0].subject, "peer=198.18.0.3");
	now += 100;
	ck_assert_uint_eq(ring_tick(h, now, hole, hole_dr, none, out), 1);
	ck_assert_str_eq(out[0].subject, "peer=198.18.0.3");
	/* past the loss's second: named the tick before */
	now += PATH_STRAGGLER_LOSS_MS;
	ck_assert_uint_eq(ring_tick(h, now, onset, onset, none, out), 1);
	ck_assert_str_eq(out[0].subject, "peer=198.18.0.3");
	now += 100;
	ck_assert_uint_eq(ring_tick(h, now, dip, dip, none, out), 1);
	ck_assert_str_eq(out[0].subject, "peer=198.18.0.3");
	/* a fresh history: the lower one */
	h = history();
	now = ring_clean(h, 25e6);
	ck_assert_uint_eq(ring_tick(h, now, dip, dip, none, out), 1);
	ck_assert_str_eq(out[0].subject, "peer=198.18.0.4");
}
END_TEST

/*
 * A clean ring where peer 4's path loses a segment and its delivery rate
 * then reads a third of the others' for two ticks while its busy rate
 * holds (a 600 s clean lab run, which raised two such stragglers when the
 * delivery rate alone was the sample after a loss): no straggler. A filled
 * hole's burst (60 MB/s after a tick at 20) is not a fast tick either: the
 * next tick's dip to 12 after it, with the delivery rate as low, is under.
 */
START_TEST(test_straggler_clean_loss)
{
	/* peer 4's busy rate, delivery rate and retransmits a second each
	 * tick after ten clean ones, and whether it is named */
	static const struct {
		double rate, dr, retx;
		size_t named;
	} ticks[] = {
		{ 45e6, 15e6, 1000, 0 }, { 45e6, 15e6, 0, 0 },
		{ 20e6, 45e6, 1000, 0 }, /* held behind the hole */
		{ 60e6, 15e6, 0, 0 }, /* the fill: (20 + 60) / 2 over the two */
		{ 12e6, 12e6, 0, 1 },
	};
	struct path_history *h = history();
	struct event_verdict out[4];
	int64_t now = ring_clean(h, 45e6);

	for (size_t t = 0; t < sizeof(ticks) / sizeof(ticks[0]); t++, now += 100) {
		const double rate[4] = { 45e6, 45e6, 45e6, ticks[t].rate };
		const double dr[4] = { 45e6, 45e6, 45e6, ticks[t].dr };
		const double retx[4] = { 0, 0, 0, ticks[t].retx };

		ck_assert_uint_eq(ring_tick(h, now, rate, dr, retx, out), ticks[t].named);
	}
	ck_assert_str_eq(out[0].subject, "peer=198.18.0.4");
}
END_TEST

/*
 * The next link first: at the onset peer 4, whose ACKs wait in the slow
 * link's queue, dips to 0.4 of the others while peer 3, the slow link,
 * reads 0.64. Peer 4's one sender is peer 3's receiver, whose receiving
 * (peer 4's upstream) reads as peer 3's path: peer 4 is not named. The next
 * tick peer 3 is under the bound and is named. Without the upstream
 * reading, peer 4 is named on the onset tick.
 */
START_TEST(test_straggler_upstream_slow)
{
	const double onset[4] = { 25e6, 25e6, 16e6, 10e6 }, slow[4] = { 25e6, 25e6, 12e6, 10e6 };
	const double none[4] = { 0 };
	struct event_verdict out[4];

	for (unsigned c = 0; c < 2; c++) {
		struct path_history *h = history();
		int64_t now = ring_clean(h, 25e6);
		const double up_onset[4] = { 0, 0, 0, c ? 0 : 16e6 },
			     up_slow[4] = { 0, 0, 0, 12e6 };

		ring_upstream(h, now, onset, onset, none, up_onset);
		ck_assert_uint_eq(judged(h, now, out), c);
		if (c) {
			ck_assert_str_eq(out[0].subject, "peer=198.18.0.4");
			continue;
		}
		now += 100;
		ring_upstream(h, now, slow, slow, none, up_slow);
		ck_assert_uint_eq(judged(h, now, out), 1);
		ck_assert_str_eq(out[0].subject, "peer=198.18.0.3");
	}
}
END_TEST

/* Counts the events that opened (events_foreach_changed()). */
static void count_opened(struct event *e, void *arg)
{
	*(unsigned *)arg += !!(e->changes & EVENT_OPENED);
}

/*
 * t_straggler's r9 run (kept by a soak, 100 ms ticks): the half-rate link,
 * its share of the others' typical busy rate tick by tick. It read 0.63,
 * 0.72 and 0.63 early in its fault, and its straggler closed and a second
 * opened. Those ticks hold it (under 0.8, halfway between the bound of 0.6
 * and the others'): one event, which closes 3 ticks after the link is
 * back. Without the holds, two. A link at 0.7 throughout, never named, gets
 * no verdict, nor does the link's dip to 0.7 after it was back: holds are
 * for a peer named since it last read over 0.8.
 */
START_TEST(test_straggler_hold)
{
	static const double shares[] = { 0.51, 0.59, 0.63, 0.72, 0.63, 0.49, 0.52,
					 0.48, 1.0,  1.0,  1.0,	 1.0,  1.0,  0.7 };
	const double none[4] = { 0 };
	struct event_verdict out[4];

	/* with holds, without, and a link at 0.7 */
	for (unsigned c = 0; c < 3; c++) {
		struct path_history *h = history();
		struct events *ev = events_new(2, 3);
		int64_t now = ring_clean(h, 25e6);
		unsigned opened = 0;

		for (size_t t = 0; t < sizeof(shares) / sizeof(shares[0]); t++, now += 100) {
			const double share = c == 2 ? 0.7 : shares[t];
			const double rate[4] = { 25e6, 25e6, share * 25e6, 25e6 };
			size_t n, k;

			ring_input(h, now, rate, rate, none);
			k = judged_all(h, now, out, &n);
			ck_assert_uint_eq(k, share < 0.6);
			ck_assert_uint_eq(n, c < 2 && share < 0.8 && t < 8); /* the named run */
			if (n)
				ck_assert_str_eq(out[0].subject, "peer=198.18.0.3");
			events_tick(ev, out, c == 1 ? k : n, now);
			events_foreach_changed(ev, count_opened, &opened);
		}
		ck_assert_uint_eq(opened, c == 0 ? 1 : c == 1 ? 2 : 0);
		events_free(ev);
	}
}
END_TEST

/*
 * A 16-fault lab run's half-rate link (peer 3), tick by tick from its
 * straggler's opening: its busy rate stayed at 0.32-0.52 of the others',
 * while the kernel's delivery rate read 1.3-4.6 times theirs for three
 * ticks. The sample takes the higher, so those ticks read over the bound;
 * the hold reads the busy rate alone, and the straggler stays one event
 * (it closed and opened again, two, when the hold read the sample).
 */
START_TEST(test_straggler_hold_rate_burst)
{
	static const double busy[] = { 0.45, 0.44, 0.52, 0.32, 0.32, 0.43 },
			    dr[] = { 0.47, 0.28, 1.28, 3.36, 4.55, 0.17 };
	static const size_t named[] = { 1, 1, 0, 0, 0, 1 };
	const double none[4] = { 0 };
	struct path_history *h = history();
	struct events *ev = events_new(2, 3);
	struct event_verdict out[4];
	int64_t now = ring_clean(h, 25e6);
	unsigned opened = 0;

	for (size_t t = 0; t < sizeof(busy) / sizeof(busy[0]); t++, now += 100) {
		const double busy_rate[4] = { 25e6, 25e6, busy[t] * 25e6, 25e6 };
		const double delivery[4] = { 25e6, 25e6, dr[t] * 25e6, 25e6 };
		size_t n;

		ring_input(h, now, busy_rate, delivery, none);
		ck_assert_uint_eq(judged_all(h, now, out, &n), named[t]);
		ck_assert_uint_eq(n, 1);
		ck_assert_str_eq(out[0].subject, "peer=198.18.0.3");
		events_tick(ev, out, n, now);
		events_foreach_changed(ev, count_opened, &opened);
	}
	ck_assert_uint_eq(opened, 1);
	events_free(ev);
}
END_TEST

/*
 * The next link while the slow one holds: the slow link (peer 3) named,
 * then reading 0.64 of the others (held) while the next link (peer 4),
 * whose ACKs wait in its queue, dips to 0.4 (a lab fault named both so
 * before the upstream rule). Peer 4's one sender is peer 3's receiver,
 * whose receiving reads as peer 3's path: peer 3 holds, and peer 4 gets no
 * verdict. Once peer 3's path reads over the hold bound, and so peer 4's
 * upstream, peer 4 can be named.
 */
START_TEST(test_straggler_next_link_held)
{
	static const struct {
		double rate[4];
		size_t named, verdicts;
		const char *subject;
	} steps[] = {
		{ { 25e6, 25e6, 12e6, 20e6 }, 1, 1, "peer=198.18.0.3" },
		{ { 25e6, 25e6, 16e6, 10e6 }, 0, 1, "peer=198.18.0.3" },
		{ { 25e6, 25e6, 25e6, 10e6 }, 1, 1, "peer=198.18.0.4" },
	};
	const double none[4] = { 0 };
	struct path_history *h = history();
	struct event_verdict out[4];
	int64_t now = ring_clean(h, 25e6);

	for (size_t t = 0; t < sizeof(steps) / sizeof(steps[0]); t++, now += 100) {
		const double upstream[4] = { 0, 0, 0, steps[t].rate[2] };
		size_t n;

		ring_upstream(h, now, steps[t].rate, steps[t].rate, none, upstream);
		ck_assert_uint_eq(judged_all(h, now, out, &n), steps[t].named);
		ck_assert_uint_eq(n, steps[t].verdicts);
		ck_assert_str_eq(out[0].subject, steps[t].subject);
	}
}
END_TEST

/* A tick busy for under PATH_BUSY_MIN of it gives no busy rate sample, nor
 * does one busy all of it with no delivery rate (a loss's recovery: the
 * clean bench run's false straggler at 0.008 of the others), nor a slow one
 * the peer left unread (its reader may have set the pace). */
START_TEST(test_straggler_busy_min)
{
	struct path_history *h = history();
	const double fan[4] = { 1, 1, 1, 1 }, clean[4] = { 25e6, 25e6, 25e6, 25e6 };
	struct event_verdict out[4];
	int64_t now = feed(h, 0, 10, clean, fan) + 100;
	struct path_input in[4];

	for (unsigned i = 0; i < 4; i++)
		in[i] = (struct path_input){ .peer = peers[i],
					     .rate = i == 2   ? 1e6
						     : i == 3 ? 0
						     : i == 1 ? 5e6
							      : 25e6,
					     .fanout = 1,
					     .acked = i >= 2   ? 1e5
						      : i == 1 ? 5e6
							       : 25e6,
					     .busy = i == 2 ? PATH_BUSY_MIN / 2 : 1,
					     .unread = i == 1 };
	path_history_update(h, in, 4, cfg.window_ms, now);
	ck_assert_uint_eq(h->peers[1].busy.count, 10);
	ck_assert_uint_eq(h->peers[2].busy.count, 10);
	ck_assert_uint_eq(h->peers[3].busy.count, 10);
	ck_assert_uint_eq(judged(h, now, out), 0);
}
END_TEST

/*
 * A rank that stops reading (SIGSTOP) as t_pause_rank saw it: on the first
 * tick its path reads half the others' while they still move; on the next
 * the whole ring has stopped behind it (the others busy 0-2 % of the tick)
 * and its path, acknowledging the last of what it took, reads 0.12. That
 * tick is the ring's stall, no straggler's; with the others still busy a
 * quarter of it, the same reading is one.
 */
START_TEST(test_straggler_ring_stopped)
{
	const double none[4] = { 0 };
	const double first[4] = { 25e6, 25e6, 12e6, 25e6 };
	const double others_busy[2] = { 0.02, 0.25 };
	struct event_verdict out[4];

	for (unsigned c = 0; c < 2; c++) {
		struct path_history *h = history();
		struct path_input in[4];
		int64_t now = ring_clean(h, 25e6);

		ck_assert_uint_eq(ring_tick(h, now, first, first, none, out), 1);
		ck_assert_str_eq(out[0].subject, "peer=198.18.0.3");
		now += 100;
		for (unsigned i = 0; i < 4; i++)
			in[i] = (struct path_input){ .peer = peers[i],
						     .rate = i == 2 ? 3e6 : 25e6,
						     .fanout = 1,
						     .acked = i == 2 ? 3e6 * 0.4
								     : 25e6 * others_busy[c],
						     .busy = i == 2 ? 0.4 : others_busy[c] };
		path_history_update(h, in, 4, cfg.window_ms, now);
		ck_assert_uint_eq(judged(h, now, out), c);
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
	ck_assert_uint_eq(judged(h, now, out), 0);
	h = history();
	now = feed(h, 0, 20, all, fan);
	now = feed(h, now + cfg.window_ms + 100, 5, alone, fan);
	ck_assert_uint_eq(h->n, 1);
	ck_assert_uint_eq(judged(h, now, out), 0);
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
	ck_assert_uint_eq(judged(h, now, out), 0);
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
	ck_assert_uint_eq(judged(h, now, out), 0);
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
			ck_assert_uint_eq(judged(h, now, out), 0);
		}
	}
}
END_TEST

/*
 * A loss burst does not name an incast: a path that loses and runs slow for
 * a tick or two (a congested all-to-all's queue drop) is not named, however
 * far under it reads; one slow for PATH_INCAST_TICKS ticks is, loss or not,
 * and its loss over the others' is in the evidence.
 */
START_TEST(test_incast_loss_burst)
{
	struct path_history *h = history();
	const double clean[4] = { 50e6, 40e6, 60e6, 55e6 }, hot[4] = { 50e6, 40e6, 2e6, 55e6 };
	const double retx_hot[4] = { 10, 10, 990, 10 };
	struct event_verdict out[4];
	struct path_input in[4];
	int64_t now = 0;

	for (unsigned t = 0; t < 40; t++, now += 100) {
		/* two lossy slow ticks at 10, a run of them from 20 */
		int slow = t == 10 || t == 11 || t >= 20;
		const double *rate = slow ? hot : clean;
		size_t n;

		for (unsigned i = 0; i < 4; i++)
			in[i] = (struct path_input){ .peer = peers[i],
						     .rate = rate[i],
						     .fanout = 3,
						     .goodput = rate[i],
						     .retransmits = slow ? retx_hot[i] : 0,
						     .acked = rate[i] };
		path_history_update(h, in, 4, cfg.window_ms, now);
		n = judged(h, now, out);
		/* the median of its newest 3 is under from tick 21 */
		if (t < 21 + PATH_INCAST_TICKS - 1) {
			ck_assert_msg(n == 0, "tick %u: %zu verdicts", t, n);
		} else {
			ck_assert_msg(n == 1, "tick %u: %zu verdicts", t, n);
			ck_assert_str_eq(out[0].subject, "peer=198.18.0.3");
			ck_assert_ptr_nonnull(strstr(out[0].evidence, "\"loss_over_others\":"));
		}
	}
}
END_TEST

/* A receiver whose window holds its senders back reads slower than its
 * path delivers: however slow, that is its host's pace, not an incast. */
START_TEST(test_incast_window_held)
{
	struct path_history *h = history();
	const double hot[4] = { 50e6, 40e6, 2e6, 55e6 };
	struct event_verdict out[4];
	struct path_input in[4];
	int64_t now = 0;

	for (unsigned t = 0; t < 30; t++, now += 100) {
		for (unsigned i = 0; i < 4; i++)
			in[i] = (struct path_input){ .peer = peers[i],
						     .rate = hot[i],
						     .fanout = 3,
						     .goodput = hot[i],
						     .acked = hot[i],
						     .window_limited = i == 2 };
		path_history_update(h, in, 4, cfg.window_ms, now);
		ck_assert_msg(judged(h, now, out) == 0, "tick %u", t);
	}
}
END_TEST

Suite *detect_path_suite(void)
{
	Suite *s = suite_create("detect_path");
	TCase *tc = tcase_create("verdicts");

	tcase_add_test(tc, test_incast);
	tcase_add_test(tc, test_incast_tail_fanout);
	tcase_add_test(tc, test_incast_for);
	tcase_add_test(tc, test_incast_both_agree);
	tcase_add_test(tc, test_incast_loss_burst);
	tcase_add_test(tc, test_incast_window_held);
	tcase_add_test(tc, test_incast_clean_spread);
	tcase_add_test(tc, test_straggler);
	tcase_add_test(tc, test_straggler_table);
	tcase_add_test(tc, test_straggler_ack_burst);
	tcase_add_test(tc, test_straggler_busy_min);
	tcase_add_test(tc, test_straggler_ring_stopped);
	tcase_add_test(tc, test_straggler_neighbour);
	tcase_add_test(tc, test_straggler_clean_loss);
	tcase_add_test(tc, test_straggler_upstream_slow);
	tcase_add_test(tc, test_straggler_hold);
	tcase_add_test(tc, test_straggler_hold_rate_burst);
	tcase_add_test(tc, test_straggler_next_link_held);
	tcase_add_test(tc, test_needs_others);
	tcase_add_test(tc, test_zero_rate_ignored);
	tcase_add_test(tc, test_stall_aftermath);
	suite_add_tcase(s, tc);
	return s;
}
