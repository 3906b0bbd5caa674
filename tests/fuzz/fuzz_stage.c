/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the stage's replay (agent/store/store.c): the bytes are
 * a staged tick's blob, found in the file by the next writer as after a
 * crash. A database of SERIES series (ids 1..SERIES) is made once; each
 * input is staged after its newest tick, and the writer opens and closes
 * it: the close packs the stage, which must take every record it trusts
 * into a block and skip the rest, whatever the ids, flags, values and
 * length (no allocation by an id no series has: 0xfffffff0 used to ask
 * for 32 GiB). Then every series reads back without an error. The file
 * lives in a directory made under $TMPDIR, as in fuzz_sysfs.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/registry/registry.h"
#include "agent/store/query_history.h"
#include "agent/store/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SERIES 8

static char path[4096];

/* The database: one tick of SERIES gauges and counters. */
static void make_db(void)
{
	const struct metric_desc g = { .name = "fabmon_f", .help = "h", .type = METRIC_GAUGE };
	const struct metric_desc c = { .name = "fabmon_f", .help = "h", .type = METRIC_COUNTER };
	const char *tmp = getenv("TMPDIR");
	struct registry *reg = registry_new(SERIES, 600000);
	struct store *st;
	char err[512], dir[4096], v[4];

	if (snprintf(dir, sizeof(dir), "%s/fabmon-fuzz-stage-XXXXXX", tmp && *tmp ? tmp : "/tmp") >=
		    (int)sizeof(dir) ||
	    !mkdtemp(dir) || !reg)
		abort();
	snprintf(path, sizeof(path), "%s/f.db", dir);
	if (store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)) < 0)
		abort();
	registry_begin_tick(reg, 1000);
	for (int i = 0; i < SERIES; i++) {
		struct label l = { "i", v };

		snprintf(v, sizeof(v), "%d", i);
		if (i & 1)
			(void)sample_counter(registry_sink(reg, "f"), &c, &l, 1, (uint64_t)i);
		else
			(void)sample_gauge(registry_sink(reg, "f"), &g, &l, 1, i);
	}
	registry_end_tick(reg);
	if (store_write_tick(st, reg, 0, err, sizeof(err)) < 0)
		abort();
	store_close(st);
	registry_free(reg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int64_t ts = 1000;
	struct history_query q = { .metric = "fabmon_f", .step_ms = 1000 };
	struct history_result res;
	sqlite3_stmt *ins;
	struct store *st;
	char err[512];

	if (!path[0])
		make_db();
	if (store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)) < 0)
		abort();
	ts += 1000;
	if (sqlite3_prepare_v2(store_db(st), "INSERT INTO stage VALUES (?, ?)", -1, &ins, NULL) !=
	    SQLITE_OK)
		abort();
	sqlite3_bind_int64(ins, 1, ts);
	sqlite3_bind_blob(ins, 2, data, (int)size, SQLITE_STATIC);
	if (sqlite3_step(ins) != SQLITE_DONE)
		abort();
	sqlite3_finalize(ins);
	/* the close packs the stage (a failure leaves it for the next open) */
	store_close(st);
	if (store_open(path, STORE_READ_ONLY, &st, err, sizeof(err)) < 0)
		abort();
	q.since_ms = ts - 1000;
	q.until_ms = ts;
	if (history_run(store_db(st), &q, SERIES, &res) < 0)
		abort();
	history_result_free(&res);
	store_close(st);
	return 0;
}
