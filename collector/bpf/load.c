/* SPDX-License-Identifier: MIT */
/*
 * load: the bpf collector's entry (collector/collector.h). Loads the tc
 * probe (bpf/flow.bpf.c) and attaches it to the selected interfaces, loads
 * and attaches the raw tracepoints (bpf/tcp.bpf.c), each probe up or down
 * on its own; each tick reads their maps and hands them to flows.c, tcp.c
 * and drops.c, and says which probes are up.
 *
 * Counters stay monotonic although map entries come and go: the collector
 * keeps each entry's last values (collector/kmap.h) and adds only the deltas.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bpf/fabmon.h"
#include "collector/bpf/drop_reasons.h"
#include "collector/bpf/state.h"
#include "collector/bpf/tc.h"
#include "collector/bpf/tc_lock.h"
#include "flow.skel.h"
#include "tcp.skel.h"

static const char *const probe_names[PROBE_COUNT] = { "tc", "tcp_retransmit", "tcp_probe",
						      "tcp_state", "kfree_skb" };

static int64_t mono_ns(void)
{
	struct timespec ts;

	/* bpf_ktime_get_ns() is CLOCK_MONOTONIC */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* libbpf speaks on stderr by default; the agent says what failed itself. */
static int bpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG || !getenv("FABMON_LIBBPF_DEBUG"))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static void emit_probes(struct bpf_state *st, struct sample_sink *out)
{
	static const struct metric_desc up = {
		.name = "fabmon_probe_up",
		.help = "1 if the eBPF probe is loaded and attached, 0 if not (fabmon doctor says why).",
		.type = METRIC_GAUGE
	};
	static const struct metric_desc attached = {
		.name = "fabmon_bpf_attached_interfaces",
		.help = "Interfaces the tc probe is attached to.",
		.type = METRIC_GAUGE
	};

	for (int p = 0; p < PROBE_COUNT; p++) {
		struct label l = { "probe", probe_names[p] };

		(void)sample_gauge(out, &up, &l, 1, st->up[p]);
	}
	if (st->tc)
		(void)sample_gauge(out, &attached, NULL, 0, bpf_tc_count(st->tc));
}

static void bpf_fini(void *state)
{
	struct bpf_state *st = state;

	if (!st)
		return;
	bpf_tc_free(st->tc);
	for (int p = 0; p < PROBE_COUNT; p++)
		bpf_link__destroy(st->links[p]);
	flow_bpf__destroy(st->flow);
	tcp_bpf__destroy(st->tcp);
	drop_reasons_free(st->reasons);
	map_reader_release(&st->flows);
	map_reader_release(&st->qps);
	map_reader_release(&st->tcpm);
	map_reader_release(&st->ifslots);
	map_reader_release(&st->ifstats);
	map_reader_release(&st->dropm);
	bpf_flows_release(st);
	bpf_tcp_release(st);
	free(st);
}

/* Appends "probe: reason" to why. */
static void why_add(char *why, size_t len, const char *probe, const char *reason, int err)
{
	size_t used = strlen(why);

	snprintf(why + used, len - used, "%s%s: %s%s%s", used ? "; " : "", probe, reason,
		 err ? ": " : "", err ? strerror(err < 0 ? -err : err) : "");
}

/* Tells the lock file, for `fabmon doctor`, how the tc probe's filters are doing. */
static void tc_note(const struct bpf_state *st, const struct collector_env *env)
{
	char note[COLLECTOR_WHY_MAX];
	const char *wrong = bpf_tc_why(st->tc);

	snprintf(note, sizeof(note), "attached to %u interface(s)%s%s", bpf_tc_count(st->tc),
		 wrong[0] ? "; " : "", wrong);
	bpf_tc_lock_note(env->tc_lock, note);
}

/*
 * Loads the tc probe and, holding env->tc_lock, attaches it; without a lock
 * (`fabmon doctor`) it stays attached nowhere. Returns 0 or -errno (why
 * filled).
 */
static int load_flow(struct bpf_state *st, const struct collector_env *env, char *why, size_t len)
{
	char err[PATH_MAX + 64];
	int r, removed;

	st->flow = flow_bpf__open();
	if (!st->flow) {
		r = -errno;
		why_add(why, len, "tc", "unable to open the probe", r);
		return r;
	}
	(void)bpf_map__set_max_entries(st->flow->maps.fm_flows, env->bpf_max_flows);
	(void)bpf_map__set_max_entries(st->flow->maps.fm_qps, env->bpf_max_flows);
	(void)bpf_map__set_max_entries(st->flow->maps.fm_paths, env->bpf_max_flows);
	st->flow->rodata->fm_roce_pmtu_shift = roce_pmtu_shift(env->roce_pmtu);
	r = flow_bpf__load(st->flow);
	if (r < 0) {
		why_add(why, len, "tc", "unable to load the probe", r);
		return r;
	}
	if (!env->tc_lock) {
		why_add(why, len, "tc", "loaded, attached nowhere (doctor changes nothing)", 0);
		return 0;
	}
	/* another live agent's filters look just like stale ones */
	r = bpf_tc_lock_take(env->tc_lock, err, sizeof(err));
	if (r == -EBUSY)
		snprintf(err + strlen(err), sizeof(err) - strlen(err),
			 ": one agent per network namespace");
	if (r < 0) {
		why_add(why, len, "tc", err, r == -EBUSY ? 0 : r);
		return r;
	}
	removed = bpf_tc_remove_stale();
	if (removed > 0) {
		char note[96];

		snprintf(note, sizeof(note), "removed %d filter(s) an earlier fabmon left",
			 removed);
		why_add(why, len, "tc", note, 0);
	}
	st->tc = bpf_tc_new(bpf_program__fd(st->flow->progs.fabmon_tc_ingress),
			    bpf_program__fd(st->flow->progs.fabmon_tc_egress));
	if (!st->tc)
		return -ENOMEM;
	r = bpf_tc_sync(st->tc, env);
	if (r < 0) {
		why_add(why, len, "tc", bpf_tc_why(st->tc), 0);
		return r;
	}
	if (bpf_tc_why(st->tc)[0])
		why_add(why, len, "tc", bpf_tc_why(st->tc), 0);
	tc_note(st, env);
	r = map_reader_init(&st->flows, st->flow->maps.fm_flows, 0, st->ncpus);
	if (r == 0)
		r = map_reader_init(&st->qps, st->flow->maps.fm_qps, 0, st->ncpus);
	if (r == 0)
		r = map_reader_init(&st->ifslots, st->flow->maps.fm_ifslots, 1, st->ncpus);
	if (r == 0)
		r = map_reader_init(&st->ifstats, st->flow->maps.fm_ifstats, 1, st->ncpus);
	return r;
}

/*
 * Opens and loads the tracepoint probes, with tcp_probe through BTF (plain
 * loads) when use_btf, else through the raw tracepoint. Returns 0 or -errno.
 */
static int open_tcp(struct bpf_state *st, const struct collector_env *env, int use_btf)
{
	st->tcp = tcp_bpf__open();
	if (!st->tcp)
		return -errno;
	(void)bpf_map__set_max_entries(st->tcp->maps.fm_tcp, env->bpf_max_flows);
	(void)bpf_program__set_autoload(st->tcp->progs.fabmon_tcp_probe_btf, use_btf);
	(void)bpf_program__set_autoload(st->tcp->progs.fabmon_tcp_probe, !use_btf);
	st->tcp->rodata->fm_netns_filter = env->bpf_netns && *env->bpf_netns;
	return tcp_bpf__load(st->tcp);
}

/*
 * Puts the inode numbers of the namespace files in env->bpf_netns (comma
 * separated) into fm_netns. -ENOENT (and why) if one is missing: the probes
 * would miss the connections the operator asked for.
 */
static int tcp_netns_allow(struct bpf_state *st, const struct collector_env *env, char *why,
			   size_t len)
{
	int fd = bpf_map__fd(st->tcp->maps.fm_netns), r = 0;
	char list[1024], *save = NULL;

	snprintf(list, sizeof(list), "%s", env->bpf_netns ? env->bpf_netns : "");
	for (char *path = strtok_r(list, ",", &save); path && r == 0;
	     path = strtok_r(NULL, ",", &save)) {
		const __u8 one = 1;
		struct stat sb;
		__u32 inum;

		if (stat(path, &sb) < 0) {
			char reason[160];

			r = -errno;
			snprintf(reason, sizeof(reason), "unable to open network namespace '%s'",
				 path);
			why_add(why, len, "tracepoints", reason, r);
			break;
		}
		inum = (__u32)sb.st_ino;
		if (bpf_map_update_elem(fd, &inum, &one, BPF_ANY) < 0) {
			r = -errno;
			why_add(why, len, "tracepoints", "unable to fill fm_netns", r);
		}
	}
	return r;
}

/* Loads the tracepoint probes; each that attaches is up. Returns 0 if any is. */
static int load_tcp(struct bpf_state *st, const struct collector_env *env, char *why, size_t len)
{
	struct bpf_program *progs[PROBE_COUNT] = { NULL };
	static const char *const tps[PROBE_COUNT] = { NULL, "tcp_retransmit_skb", "tcp_probe",
						      "inet_sock_set_state", "kfree_skb" };
	int r, any = 0, btf = 1;

	r = open_tcp(st, env, 1);
	if (r < 0) {
		/* no BTF-typed tracepoints here: the raw one does the same */
		tcp_bpf__destroy(st->tcp);
		btf = 0;
		r = open_tcp(st, env, 0);
	}
	if (r < 0) {
		why_add(why, len, "tracepoints", "unable to load the probes", r);
		return r;
	}
	r = tcp_netns_allow(st, env, why, len);
	if (r < 0)
		return r;
	progs[PROBE_TCP_RETRANSMIT] = st->tcp->progs.fabmon_tcp_retransmit;
	progs[PROBE_TCP_PROBE] =
		btf ? st->tcp->progs.fabmon_tcp_probe_btf : st->tcp->progs.fabmon_tcp_probe;
	progs[PROBE_TCP_STATE] = st->tcp->progs.fabmon_tcp_state;
	progs[PROBE_KFREE_SKB] = st->tcp->progs.fabmon_kfree_skb;
	for (int p = PROBE_TCP_RETRANSMIT; p < PROBE_COUNT; p++) {
		/* tp_btf attaches by its section; raw ones by tracepoint name */
		st->links[p] = p == PROBE_TCP_PROBE && btf
				       ? bpf_program__attach(progs[p])
				       : bpf_program__attach_raw_tracepoint(progs[p], tps[p]);
		if (!st->links[p]) {
			char reason[96];

			snprintf(reason, sizeof(reason), "unable to attach to raw tracepoint %s",
				 tps[p]);
			why_add(why, len, probe_names[p], reason, -errno);
			continue;
		}
		st->up[p] = 1;
		any = 1;
	}
	st->tcp_probe_btf = btf;
	if (!any)
		return -EOPNOTSUPP;
	r = map_reader_init(&st->tcpm, st->tcp->maps.fm_tcp, 0, st->ncpus);
	if (r == 0)
		r = map_reader_init(&st->dropm, st->tcp->maps.fm_drops, 1, st->ncpus);
	if (r == 0 && drop_reasons_load(&st->reasons) < 0)
		st->reasons = NULL; /* reasons then show as numbers */
	return r;
}

static int bpf_init(const struct collector_env *env, void **ret_state, char *why, size_t why_len)
{
	struct bpf_state *st = calloc(1, sizeof(*st));
	int rf, rt, r = -ENOMEM;

	if (!st)
		return r;
	libbpf_set_print(bpf_quiet);
	st->flows.fd = st->qps.fd = st->tcpm.fd = st->ifslots.fd = st->ifstats.fd = st->dropm.fd =
		-1;
	st->ncpus = libbpf_num_possible_cpus();
	if (st->ncpus <= 0)
		goto fail;
	if (bpf_flows_init(st, env) < 0 || bpf_tcp_init(st, env) < 0)
		goto fail;
	rf = load_flow(st, env, why, why_len);
	st->up[PROBE_TC] = rf >= 0 && st->tc;
	if (rf < 0) {
		bpf_tc_free(st->tc);
		st->tc = NULL;
		flow_bpf__destroy(st->flow);
		st->flow = NULL;
	}
	rt = load_tcp(st, env, why, why_len);
	if (rt < 0) {
		for (int p = 0; p < PROBE_COUNT; p++) {
			bpf_link__destroy(st->links[p]);
			st->links[p] = NULL;
			if (p != PROBE_TC)
				st->up[p] = 0;
		}
		tcp_bpf__destroy(st->tcp);
		st->tcp = NULL;
	}
	if (rf < 0 && rt < 0) {
		/* nothing works: name the likely cause once */
		r = rf == -EPERM || rt == -EPERM ? -EPERM : rf;
		if (r == -EPERM)
			why_add(why, why_len, "bpf",
				"needs root or CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN", 0);
		goto fail;
	}
	for (int p = 0; p < PROBE_COUNT; p++) {
		char note[96];

		if (!st->up[p])
			continue;
		if (p == PROBE_TC)
			snprintf(note, sizeof(note), "attached to %u interface(s)",
				 bpf_tc_count(st->tc));
		else
			snprintf(note, sizeof(note), "attached (%s)",
				 p == PROBE_TCP_PROBE && st->tcp_probe_btf ? "BTF tracepoint"
									   : "raw tracepoint");
		why_add(why, why_len, probe_names[p], note, 0);
	}
	*ret_state = st;
	return 0;
fail:
	bpf_fini(st);
	return r;
}

static int bpf_sample(void *state, const struct collector_env *env, struct sample_sink *out)
{
	struct bpf_state *st = state;
	int64_t now_ns = mono_ns();
	int r = 0;

	st->tick++;
	if (st->tc) {
		/* interfaces that appeared since the last tick get the probe,
		 * and those that lost it get it back in time */
		(void)bpf_tc_sync(st->tc, env);
		st->up[PROBE_TC] = bpf_tc_lost(st->tc) == 0;
		tc_note(st, env);
		r = map_reader_read(&st->ifslots);
		if (r == 0)
			r = map_reader_read(&st->ifstats);
		if (r == 0)
			r = map_reader_read(&st->flows);
		if (r == 0)
			r = map_reader_read(&st->qps);
		if (r < 0)
			return r;
		bpf_flows_sample(st, env, out, now_ns);
	}
	if (st->tcp) {
		r = map_reader_read(&st->tcpm);
		if (r == 0)
			r = map_reader_read(&st->dropm);
		if (r < 0)
			return r;
		bpf_tcp_sample(st, env, out, now_ns);
		bpf_drops_emit(st, out);
	}
	map_reader_emit(&st->flows, out, 1);
	map_reader_emit(&st->qps, out, 1);
	/* the tracepoints do not count what they make */
	map_reader_emit(&st->tcpm, out, 0);
	emit_probes(st, out);
	return 0;
}

static void bpf_news(void *state, char *buf, size_t len)
{
	const struct bpf_state *st = state;
	const char *news = st->tc ? bpf_tc_news(st->tc) : "";

	snprintf(buf, len, "%s%s", news[0] ? "tc: " : "", news);
}

const struct collector_ops bpf_collector = {
	.name = "bpf",
	.init = bpf_init,
	.sample = bpf_sample,
	.fini = bpf_fini,
	.news = bpf_news,
};
