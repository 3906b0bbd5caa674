/* SPDX-License-Identifier: MIT */
/*
 * query: how long a history query takes, the query alone: the same
 * history_run() that `fabmon history` and GET /api/v1/query_range run, on a
 * read-only connection, repeated; no process start, no printing.
 *
 * Usage: query -d DB -m METRIC [-l K=V] -s SINCE_MS -u UNTIL_MS -e STEP_MS [-n RUNS]
 * Prints "runs=N points=P samples=S median_ms=M p90_ms=Q"; exits 1 if the
 * query fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "benchutil.h"

#include "agent/store/query_history.h"
#include "agent/store/store.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct history_query q = { .agg = HISTORY_AVG };
	char label[HISTORY_LABEL_LEN], err[512];
	const char *db = NULL;
	unsigned runs = 20, points = 0, samples = 0;
	double ms[1000];
	struct store *st;
	int c;

	while ((c = getopt(argc, argv, "d:m:l:s:u:e:n:")) != -1) {
		switch (c) {
		case 'd':
			db = optarg;
			break;
		case 'm':
			q.metric = optarg;
			break;
		case 'l':
			if (history_label_filter(optarg, label, sizeof(label)) < 0)
				return 2;
			q.labels[q.nlabels++] = label;
			break;
		case 's':
			q.since_ms = strtoll(optarg, NULL, 10);
			break;
		case 'u':
			q.until_ms = strtoll(optarg, NULL, 10);
			break;
		case 'e':
			q.step_ms = strtoll(optarg, NULL, 10);
			break;
		case 'n':
			if (parse_uint(optarg, 1000, &runs) < 0)
				return 2;
			break;
		default:
			return 2;
		}
	}
	if (!db || !q.metric || q.step_ms <= 0 || q.until_ms < q.since_ms) {
		fprintf(stderr, "usage: query -d DB -m METRIC [-l K=V] -s SINCE_MS -u UNTIL_MS "
				"-e STEP_MS [-n RUNS]\n");
		return 2;
	}
	if (store_open(db, STORE_READ_ONLY, &st, err, sizeof(err)) < 0) {
		fprintf(stderr, "query: %s\n", err);
		return 1;
	}
	for (unsigned i = 0; i < runs; i++) {
		struct history_result res;
		double t0 = clock_mono_s();
		int r = history_run(store_db(st), &q, 16, &res);

		ms[i] = (clock_mono_s() - t0) * 1000.0;
		if (r < 0) {
			fprintf(stderr, "query: history_run: %d\n", r);
			store_close(st);
			return 1;
		}
		points = samples = 0;
		for (int s = 0; s < res.n; s++)
			for (size_t k = 0; k < res.steps; k++) {
				points += res.series[s].cells[k].n > 0;
				samples += res.series[s].cells[k].n;
			}
		history_result_free(&res);
	}
	store_close(st);
	qsort(ms, runs, sizeof(ms[0]), cmp_double);
	printf("runs=%u points=%u samples=%u median_ms=%.3f p90_ms=%.3f\n", runs, points, samples,
	       ms[runs / 2], ms[runs * 9 / 10]);
	return 0;
}
