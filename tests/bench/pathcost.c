/* SPDX-License-Identifier: MIT */
/*
 * pathcost: the CPU one tick of the path detectors (path_history_update()
 * and detect_path(), as the agent's detect step calls them) takes at P
 * peers. Each tick every peer brings a sample: half of them fan-out peers
 * (an all-to-all), half ring neighbours, at rates of 1 GB/s +-20 %, one of
 * each at a fifth of that (an incast and a straggler to judge), with a
 * retransmit now and then. Every peer is compared with the median of the
 * others, so the cost grows with P.
 *
 * Usage: pathcost [-p PEERS] [-t TICKS]
 * Prints "peers=P ticks=T us_per_tick=U verdicts=V".
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "benchutil.h"

#include "../../agent/detect_path.h"

/* A fixed seed: every run judges the same samples. */
#define PATHCOST_SEED 1

static double jitter(void)
{
	return 0.8 + 0.4 * (double)rand() / RAND_MAX;
}

int main(int argc, char **argv)
{
	static struct path_history h;
	static struct path_input in[PATH_PEERS];
	static char names[PATH_PEERS][48];
	struct path_config cfg = { .window_ms = 5000, .incast_fraction = 0.5,
				   .straggler_fraction = 0.6 };
	struct event_verdict out[8];
	unsigned peers = 1024, ticks = 200, verdicts = 0;
	double t0, spent = 0;
	int c;

	while ((c = getopt(argc, argv, "p:t:")) != -1) {
		if ((c == 'p' && parse_uint(optarg, PATH_PEERS, &peers) < 0) ||
		    (c == 't' && parse_uint(optarg, 1000000, &ticks) < 0) || (c != 'p' && c != 't')) {
			fprintf(stderr, "usage: pathcost [-p PEERS (1..%d)] [-t TICKS]\n", PATH_PEERS);
			return 2;
		}
	}
	srand(PATHCOST_SEED);
	for (unsigned i = 0; i < peers; i++) {
		snprintf(names[i], sizeof(names[i]), "198.18.%u.%u", i / 250, 1 + i % 250);
		in[i].peer = names[i];
	}
	for (unsigned t = 1; t <= ticks; t++) {
		int64_t now_ms = (int64_t)t * 100;

		for (unsigned i = 0; i < peers; i++) {
			double rate = 1e9 * jitter() * (i == 0 || i == 1 ? 0.2 : 1);

			in[i].fanout = i % 2 ? 1 : 4;
			in[i].rate = rate;
			in[i].goodput = rate * jitter();
			in[i].acked = rate * 0.9;
			in[i].busy = 0.9;
			in[i].retransmits = rand() % 50 == 0 ? 100 : 0;
			in[i].sender_rate = 0;
		}
		t0 = clock_mono_s();
		path_history_update(&h, in, peers, cfg.window_ms, now_ms);
		verdicts += (unsigned)detect_path(&h, &cfg, now_ms, out, 8);
		spent += clock_mono_s() - t0;
	}
	printf("peers=%u ticks=%u us_per_tick=%.1f verdicts=%u\n", peers, ticks, spent / ticks * 1e6,
	       verdicts);
	return 0;
}
