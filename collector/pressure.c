/* SPDX-License-Identifier: MIT */
/*
 * pressure: the kernel's pressure stall information for CPU, I/O and memory
 * (/proc/pressure/, Linux 4.20+ with CONFIG_PSI and not booted psi=0), as
 * node_exporter's pressure collector reads it: how long tasks on this host
 * waited for a CPU is what tells a host that starved its application from
 * a network that stopped (host_stall's evidence).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/pressure.h"
#include "collector/collector.h"
#include "collector/metric_names.h"
#include "collector/sysfs.h"

/* The microsecond totals as seconds, node_exporter's names with ours. */
static const struct {
	const char *file;
	struct metric_desc some, full;
} pressure_files[] = {
	{ "cpu",
	  { M_PRESSURE_CPU_WAITING_SECONDS_TOTAL,
	    "Time at least one runnable task on this host waited for a CPU (PSI cpu some).",
	    METRIC_COUNTER, 0, 1e-6 },
	  { "fabmon_pressure_cpu_stalled_seconds_total",
	    "Time all non-idle tasks waited for a CPU at once (PSI cpu full, Linux 5.13+).",
	    METRIC_COUNTER, 0, 1e-6 } },
	{ "io",
	  { "fabmon_pressure_io_waiting_seconds_total",
	    "Time at least one task on this host waited for I/O (PSI io some).", METRIC_COUNTER, 0,
	    1e-6 },
	  { "fabmon_pressure_io_stalled_seconds_total",
	    "Time all non-idle tasks waited for I/O at once (PSI io full).", METRIC_COUNTER, 0,
	    1e-6 } },
	{ "memory",
	  { "fabmon_pressure_memory_waiting_seconds_total",
	    "Time at least one task on this host waited for memory (PSI memory some).",
	    METRIC_COUNTER, 0, 1e-6 },
	  { "fabmon_pressure_memory_stalled_seconds_total",
	    "Time all non-idle tasks waited for memory at once (PSI memory full).", METRIC_COUNTER,
	    0, 1e-6 } },
};

#define PRESSURE_FILES (sizeof(pressure_files) / sizeof(pressure_files[0]))

int pressure_parse(const char *text, uint64_t *ret_some_us, uint64_t *ret_full_us)
{
	int found = 0;

	for (const char *line = text; line && *line; line = strchr(line, '\n'), line += !!line) {
		int which = strncmp(line, "some ", 5) == 0   ? PRESSURE_SOME
			    : strncmp(line, "full ", 5) == 0 ? PRESSURE_FULL
							     : 0;
		const char *total, *end = strchr(line, '\n');
		char *after;
		uint64_t v;

		if (!which)
			continue;
		total = strstr(line, " total=");
		if (!total || (end && total > end))
			return -EINVAL;
		total += 7;
		if (*total < '0' || *total > '9')
			return -EINVAL;
		errno = 0;
		v = strtoull(total, &after, 10);
		if (errno || (*after != '\n' && *after != '\0'))
			return -EINVAL;
		*(which == PRESSURE_SOME ? ret_some_us : ret_full_us) = v;
		found |= which;
	}
	return found ? found : -EINVAL;
}

struct pressure_state {
	const char *root; /* procfs_root */
};

/* root/pressure/file into buf; as sysfs_read() (small files under a root) */
static int pressure_read(const char *root, const char *file, char *buf, size_t len)
{
	char path[32];

	snprintf(path, sizeof(path), "pressure/%s", file);
	return sysfs_read(root, path, buf, len);
}

static int pressure_init(const struct collector_env *env, void **ret_state, char *why,
			 size_t why_len)
{
	struct pressure_state *st;
	char buf[256];
	int r = pressure_read(env->procfs_root, "cpu", buf, sizeof(buf));

	if (r < 0) {
		snprintf(why, why_len,
			 "no %s/pressure/cpu (%s): a kernel without pressure stall "
			 "information (CONFIG_PSI), or booted with psi=0",
			 env->procfs_root, strerror(-r));
		return r == -EACCES ? -EPERM : -ENOENT;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->root = env->procfs_root;
	*ret_state = st;
	return 0;
}

static int pressure_sample(void *state, const struct collector_env *env, struct sample_sink *out)
{
	struct pressure_state *st = state;
	int read = 0;

	(void)env;
	for (size_t i = 0; i < PRESSURE_FILES; i++) {
		char buf[256];
		uint64_t some = 0, full = 0;
		int found;

		/* io and memory may be absent where cpu is not (cgroup v1 kernels) */
		if (pressure_read(st->root, pressure_files[i].file, buf, sizeof(buf)) < 0)
			continue;
		found = pressure_parse(buf, &some, &full);
		if (found < 0) {
			sample_skip(out);
			continue;
		}
		read++;
		if (found & PRESSURE_SOME)
			(void)sample_counter(out, &pressure_files[i].some, NULL, 0, some);
		if (found & PRESSURE_FULL)
			(void)sample_counter(out, &pressure_files[i].full, NULL, 0, full);
	}
	return read ? 0 : -EIO;
}

static void pressure_fini(void *state)
{
	free(state);
}

const struct collector_ops pressure_collector = {
	.name = "pressure",
	.init = pressure_init,
	.sample = pressure_sample,
	.fini = pressure_fini,
};
