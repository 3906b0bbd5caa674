/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "agent/daemon/doctor.h"
#include "agent/daemon/collector_set.h"
#include "agent/store/store.h"
#include "collector/bpf/tc.h"
#include "collector/bpf/tc_lock.h"

/* A collector's notes are "; "-separated (one per probe or interface): one
 * line each, aligned under the DETAIL column. */
static void print_detail(FILE *out, const char *why)
{
	const char *p = why, *sep;

	if (!*p) {
		fprintf(out, "-\n");
		return;
	}
	while ((sep = strstr(p, "; "))) {
		fprintf(out, "%.*s\n%35s", (int)(sep - p), p, "");
		p = sep + 2;
	}
	fprintf(out, "%s\n", p);
}

/*
 * The tc probe in this network namespace, read and never changed: where it
 * would attach, which fabmon filters are there, and whether a live agent
 * holds them (its pid and its own line on them) or they are an earlier
 * fabmon's, which the next agent removes.
 */
static void doctor_tc(const struct collector_env *env, FILE *out)
{
	char would[COLLECTOR_WHY_MAX], found[COLLECTOR_WHY_MAX], note[COLLECTOR_WHY_MAX];
	pid_t pid_held = 0;
	struct bpf_tc_lock *lock = bpf_tc_lock_new(BPF_TC_LOCK_DIR);
	int n = bpf_tc_survey(env, would, sizeof(would), found, sizeof(found));
	int r = lock ? bpf_tc_lock_holder(lock, &pid_held, note, sizeof(note)) : -ENOMEM;
	const char *path = lock ? bpf_tc_lock_path(lock) : BPF_TC_LOCK_DIR;

	if (n < 0)
		fprintf(out, "tc         unable to look for fabmon filters: %s\n", strerror(-n));
	else
		fprintf(out,
			"tc         would attach to %s; doctor itself attaches nothing\n"
			"tc         fabmon filters found: %s\n",
			would[0] ? would : "no interface", n ? found : "none");
	if (r < 0 && r != -ENOENT)
		fprintf(out, "tc         unable to read '%s': %s\n", path, strerror(-r));
	else if (pid_held > 0)
		fprintf(out, "tc         agent pid %d holds '%s': %s\n", (int)pid_held, path, note);
	else if (pid_held < 0)
		fprintf(out, "tc         an agent is taking '%s'\n", path);
	else
		fprintf(out, "tc         no agent holds '%s'%s\n", path,
			n > 0 ? ": the filters found are an earlier fabmon's, the next agent "
				"removes them"
			      : "");
	bpf_tc_lock_free(lock);
}

int doctor_run(const struct config *cfg, FILE *out)
{
	struct collector_set set;
	int status = 0;

	fprintf(out, "fabmon %s doctor: sysfs root '%s'%s%s\n\n", FABMON_VERSION, cfg->sysfs_root,
		cfg->interfaces[0] ? ", interfaces " : "", cfg->interfaces);
	if (collector_set_init(&set, cfg, 1, NULL) < 0) {
		fprintf(out, "bad interface regex\n");
		return 1;
	}
	fprintf(out, "%-10s %-12s %-10s %s\n", "COLLECTOR", "STATUS", "ENABLED", "DETAIL");
	for (unsigned i = 0; i < set.n; i++) {
		const struct collector_slot *s = &set.slots[i];
		int on = config_names_collector(cfg, s->ops->name);

		fprintf(out, "%-10s %-12s %-10s ", s->ops->name,
			s->available ? "available" : "unavailable", on ? "yes" : "no");
		print_detail(out, s->why);
	}
	if (cfg->host_collectors_off)
		fprintf(out, "\n%s\n", CONFIG_HOST_COLLECTORS_OFF);
	fprintf(out, "\n");
	doctor_tc(&set.env, out);
	collector_set_release(&set);

	fprintf(out, "\ndatabase   %s: ", cfg->db_path);
	if (access(cfg->db_path, F_OK) == 0) {
		struct store *st;
		char err[512];

		if (store_open(cfg->db_path, STORE_READ_ONLY, &st, err, sizeof(err)) == 0) {
			fprintf(out, "readable fabmon database\n");
			store_close(st);
		} else {
			fprintf(out, "%s\n", err);
			status = 1;
		}
	} else {
		fprintf(out, "absent (the agent creates it)\n");
	}
	fprintf(out, "running as %s\n", geteuid() == 0 ? "root" : "an unprivileged user");
	return status;
}
