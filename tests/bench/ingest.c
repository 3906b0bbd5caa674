/* SPDX-License-Identifier: MIT */
/*
 * ingest: how fast the store appends ticks, through the same registry and
 * store_write_tick() the agent uses, with none of the collectors: a
 * synthetic host of S series (a mix of counters and gauges, the shape of
 * netdev's per-interface families) written for T ticks, I ms apart, into a
 * fresh file.
 *
 * Two mixes of values:
 *   noise    counters gain a random 0..10^6 on 3 ticks of 4, gauges are
 *            random numbers, half of them fractional: no pattern at all,
 *            the worst case for packing (the default);
 *   typical  a host's shape: on half the interfaces (the busy NICs) bytes and
 *            packets in and out follow a traffic level that swings +-30 %
 *            over 10 minutes with 2 % noise per tick; on the others they
 *            creep by a few hundred bytes a second; eight error and drop
 *            counters a interface gain 1 once in 1000 ticks; of the gauges,
 *            one is a queue length 0..20 (busy NICs), one a fraction with
 *            three decimals, six hold still (MTU, speed, link state).
 *
 * With -r the ticks come in real time, I ms apart as the agent's do, so
 * that the store's checkpoint thread has the gaps between ticks to work in;
 * the size of the WAL is then sampled after every tick.
 *
 * Usage: ingest -d DB [-s SERIES] [-t TICKS] [-i MS] [-m noise|typical] [-r]
 * Prints its figures; exits 1 only if the store could not be used.
 */
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "benchutil.h"

#include "agent/registry/registry.h"
#include "agent/store/store.h"

/* Per "interface": 12 counters and 8 gauges, like netdev plus qdisc. */
#define INGEST_COUNTERS 12
#define INGEST_GAUGES 8
#define INGEST_FAMILIES (INGEST_COUNTERS + INGEST_GAUGES)
#define INGEST_NAME_MAX 64

struct ingest_opts {
	const char *db;
	unsigned series;
	unsigned ticks;
	unsigned interval_ms;
	int typical;
	int real_time;
};

struct ingest_host {
	char names[INGEST_FAMILIES][INGEST_NAME_MAX];
	struct metric_desc descs[INGEST_FAMILIES];
	unsigned ifaces;
	char (*ifnames)[16];
	uint64_t *raw; /* counter readings, one per counter series */
	uint64_t rng;
	unsigned tick;
	int typical;
};

/* xorshift64: reproducible across runs, so two runs store the same bytes. */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double percentile(const double *v, unsigned n, double p)
{
	unsigned rank = (unsigned)(p / 100.0 * n + 0.999999);

	if (rank < 1)
		rank = 1;
	return v[(rank > n ? n : rank) - 1];
}

static off_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : 0;
}

/* This process's bytes written so far: "wchar" (what write() was given) or
 * "write_bytes" (what reached the block layer), from /proc/self/io. */
static long long proc_io(const char *key)
{
	char line[128];
	long long v = -1;
	size_t klen = strlen(key);
	FILE *f = fopen("/proc/self/io", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, klen) == 0 && line[klen] == ':')
			v = strtoll(line + klen + 1, NULL, 10);
	fclose(f);
	return v;
}

/* Mean of v[from..to-1]. */
static double mean(const double *v, unsigned from, unsigned to)
{
	double sum = 0;

	for (unsigned i = from; i < to; i++)
		sum += v[i];
	return to > from ? sum / (to - from) : 0;
}

static int ingest_host_init(struct ingest_host *h, unsigned series)
{
	memset(h, 0, sizeof(*h));
	h->rng = 0x9e3779b97f4a7c15ull;
	h->ifaces = (series + INGEST_FAMILIES - 1) / INGEST_FAMILIES;
	for (unsigned f = 0; f < INGEST_FAMILIES; f++) {
		int counter = f < INGEST_COUNTERS;

		snprintf(h->names[f], INGEST_NAME_MAX,
			 counter ? "fabmon_bench_c%02u_bytes_total" : "fabmon_bench_g%02u_bytes",
			 f);
		h->descs[f] = (struct metric_desc){
			.name = h->names[f],
			.help = "Synthetic series of the ingest benchmark.",
			.type = counter ? METRIC_COUNTER : METRIC_GAUGE,
		};
	}
	h->ifnames = calloc(h->ifaces, sizeof(*h->ifnames));
	h->raw = calloc((size_t)h->ifaces * INGEST_COUNTERS, sizeof(*h->raw));
	if (!h->ifnames || !h->raw)
		return -ENOMEM;
	for (unsigned i = 0; i < h->ifaces; i++)
		snprintf(h->ifnames[i], sizeof(h->ifnames[i]), "eth%u", i);
	return 0;
}

static void ingest_host_release(struct ingest_host *h)
{
	free(h->ifnames);
	free(h->raw);
}

/*
 * One tick of readings: counters move by a random amount (some idle, as on
 * a real host), gauges take random values, half of them fractional, so that
 * SQLite stores the mix of integer and 8-byte REAL values a host produces.
 */
/* A uniform draw in [0, 1). */
static double unit(uint64_t r)
{
	return (double)(r >> 11) / 9007199254740992.0;
}

/* The typical mix's reading of family f of interface i (see the top). */
static void typical_sample(struct ingest_host *h, unsigned i, unsigned f, uint64_t r, uint64_t *raw,
			   double *g)
{
	int busy = !(i & 1);
	/* bytes a second: 1.25 GB/s on a busy NIC, swinging over 10 minutes */
	double level = busy ? 1.25e9 * (1 + 0.3 * sin(h->tick * 2 * M_PI / 600)) : 400;

	switch (f) {
	case 0:
	case 1: /* bytes */
		*raw += (uint64_t)(level * (1 + 0.04 * (unit(r) - 0.5)));
		break;
	case 2:
	case 3: /* packets of ~4 KiB */
		*raw += (uint64_t)(level / 4096 * (1 + 0.04 * (unit(r) - 0.5)));
		break;
	default:
		if (f < INGEST_COUNTERS) /* errors and drops */
			*raw += r % 1000 == 0;
		else if (f == INGEST_COUNTERS)
			*g = busy ? (double)(r % 21) : 0; /* a queue */
		else if (f == INGEST_COUNTERS + 1)
			*g = (double)(r % 1000) / 1000.0; /* a fraction */
		else
			*g = 9000; /* MTU, speed, link state */
	}
}

static void ingest_host_sample(struct ingest_host *h, struct sample_sink *out, unsigned series)
{
	unsigned emitted = 0;

	for (unsigned i = 0; i < h->ifaces; i++) {
		struct label l = { "interface", h->ifnames[i] };

		for (unsigned f = 0; f < INGEST_FAMILIES && emitted < series; f++, emitted++) {
			uint64_t r = rng_next(&h->rng);
			uint64_t dummy = 0,
				 *raw = f < INGEST_COUNTERS
						? &h->raw[(size_t)i * INGEST_COUNTERS + f]
						: &dummy;
			double v = (f & 1) ? (double)(r % 100000) : (double)(r % 1000000) / 1000.0;

			if (h->typical)
				typical_sample(h, i, f, r, raw, &v);
			else if (f < INGEST_COUNTERS)
				*raw += (r & 3) ? r % 1000000 : 0;
			if (f < INGEST_COUNTERS)
				(void)sample_counter(out, &h->descs[f], &l, 1, *raw);
			else
				(void)sample_gauge(out, &h->descs[f], &l, 1, v);
		}
	}
	h->tick++;
}

static int parse_args(int argc, char **argv, struct ingest_opts *o)
{
	int c;

	while ((c = getopt(argc, argv, "d:s:t:i:m:r")) != -1) {
		switch (c) {
		case 'd':
			o->db = optarg;
			break;
		case 's':
			o->series = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 't':
			o->ticks = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'i':
			o->interval_ms = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'm':
			if (strcmp(optarg, "typical") && strcmp(optarg, "noise"))
				return -EINVAL;
			o->typical = strcmp(optarg, "typical") == 0;
			break;
		case 'r':
			o->real_time = 1;
			break;
		default:
			return -EINVAL;
		}
	}
	return o->db && o->series > 0 && o->ticks > 0 && o->interval_ms > 0 ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
	struct ingest_opts o = { .series = 10000, .ticks = 200, .interval_ms = 1000 };
	struct registry *reg = NULL;
	struct store *st = NULL;
	struct ingest_host host = { 0 };
	double store_s = 0, reg_s = 0, t0, t1, t2, *tick_ms = NULL, *sorted = NULL;
	uint64_t samples = 0;
	int64_t now_ms;
	long long wchar0, wbytes0, wchar, wbytes;
	char err[512], wal[4096];
	off_t db_bytes, wal_bytes, wal_max = 0;
	double wal_sum = 0, next_s;
	unsigned t, edge;
	int r, status = 1;

	if (parse_args(argc, argv, &o) < 0) {
		fprintf(stderr,
			"usage: ingest -d DB [-s SERIES] [-t TICKS] [-i MS] [-m noise|typical] [-r]\n");
		return 2;
	}
	snprintf(wal, sizeof(wal), "%s-wal", o.db);
	(void)unlink(o.db);
	(void)unlink(wal);
	tick_ms = calloc(o.ticks, sizeof(*tick_ms));
	sorted = calloc(o.ticks, sizeof(*sorted));
	reg = registry_new(o.series + 16, INT64_MAX / 2);
	if (!tick_ms || !sorted || !reg || ingest_host_init(&host, o.series) < 0) {
		fprintf(stderr, "ingest: out of memory\n");
		goto out;
	}
	host.typical = o.typical;
	/* the simulated span ends now, as an agent's history would */
	now_ms = clock_wall_ms() - (int64_t)o.ticks * o.interval_ms;
	r = store_open(o.db, STORE_READ_WRITE, &st, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "ingest: %s\n", err);
		goto out;
	}
	wchar0 = proc_io("wchar");
	wbytes0 = proc_io("write_bytes");
	next_s = clock_mono_s();
	for (t = 0; t < o.ticks; t++) {
		if (o.real_time) {
			next_s += o.interval_ms / 1000.0;
			if (next_s > clock_mono_s())
				(void)usleep((useconds_t)((next_s - clock_mono_s()) * 1e6));
		}
		/* a few ms of jitter, as the agent's wall clock has, so rates are
		 * fractional and stored as 8-byte REALs */
		now_ms += o.interval_ms + (int64_t)(rng_next(&host.rng) % 7) - 3;
		t0 = clock_mono_s();
		registry_begin_tick(reg, now_ms);
		ingest_host_sample(&host, registry_sink(reg, "bench"), o.series);
		registry_end_tick(reg);
		t1 = clock_mono_s();
		r = store_write_tick(st, reg, t1 - t0, err, sizeof(err));
		t2 = clock_mono_s();
		if (r < 0) {
			fprintf(stderr, "ingest: tick %u: %s\n", t, err);
			goto out;
		}
		reg_s += t1 - t0;
		store_s += t2 - t1;
		tick_ms[t] = (t2 - t1) * 1000.0;
		samples += registry_count(reg);
		if (o.real_time) {
			wal_bytes = file_size(wal);
			wal_sum += (double)wal_bytes;
			if (wal_bytes > wal_max)
				wal_max = wal_bytes;
		}
	}
	/* What a reader of the file pays for: the WAL folded into the main file
	 * (as the agent's own auto-checkpoints and close do). */
	r = sqlite3_wal_checkpoint_v2(store_db(st), NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	if (r != SQLITE_OK)
		fprintf(stderr, "ingest: checkpoint: %s\n", sqlite3_errstr(r));
	wchar = proc_io("wchar") - wchar0;
	wbytes = proc_io("write_bytes") - wbytes0;
	db_bytes = file_size(o.db);
	wal_bytes = file_size(wal);
	memcpy(sorted, tick_ms, o.ticks * sizeof(*sorted));
	qsort(sorted, o.ticks, sizeof(*sorted), cmp_double);
	edge = o.ticks >= 40 ? 10 : (o.ticks + 3) / 4;
	printf("series=%u ticks=%u samples=%llu\n", registry_count(reg), o.ticks,
	       (unsigned long long)samples);
	printf("store_write_tick: %.0f samples/s (%.2f s in all); per tick p50=%.2f ms p99=%.2f ms "
	       "max=%.2f ms\n",
	       (double)samples / store_s, store_s, percentile(sorted, o.ticks, 50),
	       percentile(sorted, o.ticks, 99), sorted[o.ticks - 1]);
	if (o.real_time)
		printf("wal after each tick: mean %.1f MB, max %.1f MB\n", wal_sum / o.ticks / 1e6,
		       (double)wal_max / 1e6);
	printf("tick cost as the file grows: first %u ticks %.2f ms, last %u ticks %.2f ms (mean)\n",
	       edge, mean(tick_ms, 0, edge), edge, mean(tick_ms, o.ticks - edge, o.ticks));
	printf("registry + store: %.0f samples/s (registry %.2f s)\n",
	       (double)samples / (store_s + reg_s), reg_s);
	printf("on disk, open, after checkpoint: db=%lld wal=%lld bytes -> %.2f bytes/sample\n",
	       (long long)db_bytes, (long long)wal_bytes,
	       (double)(db_bytes + wal_bytes) / (double)samples);
	if (wchar >= 0)
		printf("written: %.1f MB by write() (%.0f bytes/sample, %.1fx the file), %.1f MB "
		       "reached the disk\n",
		       (double)wchar / 1e6, (double)wchar / (double)samples,
		       (double)wchar / (double)(db_bytes + wal_bytes), (double)wbytes / 1e6);
	/* closed: what was still open is packed, the stage emptied */
	store_close(st);
	st = NULL;
	printf("after close (all packed): db=%lld bytes -> %.2f bytes/sample\n",
	       (long long)file_size(o.db), (double)file_size(o.db) / (double)samples);
	printf("samples_per_s=%.0f bytes_per_sample=%.2f\n", (double)samples / store_s,
	       (double)(db_bytes + wal_bytes) / (double)samples);
	status = 0;
out:
	store_close(st);
	registry_free(reg);
	ingest_host_release(&host);
	free(tick_ms);
	free(sorted);
	return status;
}
