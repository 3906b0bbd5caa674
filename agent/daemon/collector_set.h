/* SPDX-License-Identifier: MIT */
#ifndef FABMON_COLLECTOR_SET_H
#define FABMON_COLLECTOR_SET_H

#include <regex.h>

#include "agent/config.h"
#include "agent/registry/registry.h"
#include "collector/collector.h"

/* One configured collector and how it is doing. */
struct collector_slot {
	const struct collector_ops *ops;
	void *state;
	int available; /* init succeeded */
	int init_error; /* -errno from init, 0 if available */
	char why[COLLECTOR_WHY_MAX];
	int last_ok; /* last sample succeeded */
	double next_retry_s; /* unavailable: when to try init again (monotonic) */
	int just_available; /* the last collector_set_retry() brought it up */
	char news[COLLECTOR_WHY_MAX]; /* what its last sample found changed (ops->news) */
	uint64_t errors;
	double duration_s;
};

/* The collectors a config asks for, initialised against its sysfs root and
 * interface filters. */
struct collector_set {
	struct collector_env env;
	regex_t interfaces, ethtool_include, pcap_interfaces, lldp_interfaces;
	int has_interfaces, has_ethtool_include, has_pcap_interfaces, has_lldp_interfaces;
	struct collector_slot slots[COLLECTOR_KINDS];
	unsigned n;
	char host[256]; /* the host name, env.topology_host's default */
};

/*
 * Initialises every collector cfg->collectors names; with doctor set, all of
 * them, for `fabmon doctor` (collector_env's doctor). tc_lock (borrowed; NULL
 * for `fabmon doctor`) is the tc probe's lock (collector_env). A collector
 * whose source is absent is kept, marked unavailable with its reason.
 * Returns 0 or -errno (a bad regex, which config_validate() would have
 * caught).
 */
int collector_set_init(struct collector_set *set, const struct config *cfg, int doctor,
		       struct bpf_tc_lock *tc_lock);

/*
 * Tries init again, once every retry_s, for collectors whose source was
 * absent (a driver loaded after the agent started). Returns how many became
 * available; their slots then have available set and why holding any note.
 */
unsigned collector_set_retry(struct collector_set *set, double now_s, double retry_s);

/* Samples every available collector into reg (between registry_begin_tick and
 * registry_end_tick), then the fabmon_collector_* series for all of them;
 * each slot's news says what its sample found changed. */
void collector_set_sample(struct collector_set *set, struct registry *reg);

/* Finalises the collectors and frees the regexes. */
void collector_set_release(struct collector_set *set);

#endif
