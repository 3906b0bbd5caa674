/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "collector_set.h"
#include "doctor.h"
#include "store.h"

static int configured(const struct config *cfg, const char *name)
{
	char names[sizeof(cfg->collectors)], *save = NULL;

	snprintf(names, sizeof(names), "%s", cfg->collectors);
	for (char *n = strtok_r(names, ", ", &save); n; n = strtok_r(NULL, ", ", &save))
		if (strcmp(n, name) == 0)
			return 1;
	return 0;
}

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

int doctor_run(const struct config *cfg, FILE *out)
{
	struct collector_set set;
	int status = 0;

	fprintf(out, "fabmon %s doctor: sysfs root '%s'%s%s\n\n", FABMON_VERSION, cfg->sysfs_root,
		cfg->interfaces[0] ? ", interfaces " : "", cfg->interfaces);
	if (collector_set_init(&set, cfg, 1) < 0) {
		fprintf(out, "bad interface regex\n");
		return 1;
	}
	fprintf(out, "%-10s %-12s %-10s %s\n", "COLLECTOR", "STATUS", "ENABLED", "DETAIL");
	for (unsigned i = 0; i < set.n; i++) {
		const struct collector_slot *s = &set.slots[i];
		int on = configured(cfg, s->ops->name);

		fprintf(out, "%-10s %-12s %-10s ", s->ops->name,
			s->available ? "available" : "unavailable", on ? "yes" : "no");
		print_detail(out, s->why);
	}
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
