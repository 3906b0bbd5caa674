/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/daemon/collector_set.h"
#include "agent/lib/clock.h"
#include "agent/lib/regex_bounded.h"

/* Runs the slot's init; an absent source leaves it unavailable with why. */
static void slot_init(struct collector_set *set, struct collector_slot *slot)
{
	slot->why[0] = '\0';
	slot->init_error = slot->ops->init(&set->env, &slot->state, slot->why, sizeof(slot->why));
	slot->available = slot->init_error >= 0;
	if (!slot->available) {
		slot->state = NULL;
		if (!slot->why[0])
			snprintf(slot->why, sizeof(slot->why), "%s: %s", slot->ops->name,
				 strerror(-slot->init_error));
	}
}

int collector_set_init(struct collector_set *set, const struct config *cfg, int doctor,
		       struct bpf_tc_lock *tc_lock)
{
	int r = 0;
	/* the regexes of the config; an empty one leaves its env pointer NULL */
	const struct {
		const char *re;
		regex_t *rx;
		int *has;
		const regex_t **env;
	} rxs[] = {
		{ cfg->interfaces, &set->interfaces, &set->has_interfaces, &set->env.interfaces },
		{ cfg->ethtool_include, &set->ethtool_include, &set->has_ethtool_include,
		  &set->env.ethtool_include },
		{ cfg->pcap_interfaces, &set->pcap_interfaces, &set->has_pcap_interfaces,
		  &set->env.pcap_interfaces },
		{ cfg->lldp_interfaces, &set->lldp_interfaces, &set->has_lldp_interfaces,
		  &set->env.lldp_interfaces },
	};

	memset(set, 0, sizeof(*set));
	set->env.sysfs_root = cfg->sysfs_root;
	set->env.procfs_root = cfg->procfs_root;
	set->env.bpf_max_flows = cfg->bpf_max_flows;
	set->env.bpf_top_peers = cfg->bpf_top_peers;
	set->env.bpf_flow_idle_ms = cfg->bpf_flow_idle_ms;
	set->env.bpf_netns = cfg->bpf_netns;
	set->env.tc_lock = tc_lock;
	set->env.retry_ms = cfg->collector_retry_ms;
	set->env.sockets_interval_ms = cfg->sockets_interval_ms;
	set->env.roce_pmtu = cfg->roce_pmtu;
	set->env.pcap_link_mbps = cfg->pcap_link_mbps;
	set->env.topology_file = cfg->topology_file;
	set->env.topology_host = cfg->topology_host;
	if (!cfg->topology_host[0] && gethostname(set->host, sizeof(set->host)) == 0)
		set->env.topology_host = set->host;
	set->env.mesh = &cfg->mesh;
	set->env.doctor = doctor;
	for (size_t i = 0; i < sizeof(rxs) / sizeof(rxs[0]); i++) {
		if (!rxs[i].re[0])
			continue;
		r = regex_compile_bounded(rxs[i].rx, rxs[i].re, 1);
		if (r < 0) {
			collector_set_release(set);
			return r;
		}
		*rxs[i].has = 1;
		*rxs[i].env = rxs[i].rx;
	}
	/* each collector once: the slots are as many (COLLECTOR_KINDS) */
	for (size_t i = 0; collector_all[i]; i++) {
		const struct collector_ops *ops = collector_all[i];
		struct collector_slot *slot;

		if (!doctor && !config_names_collector(cfg, ops->name))
			continue;
		slot = &set->slots[set->n++];
		slot->ops = ops;
		slot_init(set, slot);
	}
	return 0;
}

unsigned collector_set_retry(struct collector_set *set, double now_s, double retry_s)
{
	unsigned n = 0;

	for (unsigned i = 0; i < set->n; i++) {
		struct collector_slot *s = &set->slots[i];

		s->just_available = 0;
		if (s->available)
			continue;
		if (s->next_retry_s == 0)
			s->next_retry_s = now_s + retry_s; /* init just failed: wait */
		if (now_s < s->next_retry_s)
			continue;
		slot_init(set, s);
		s->just_available = s->available;
		if (s->available)
			n++;
		else
			s->next_retry_s = now_s + retry_s;
	}
	return n;
}

static const struct metric_desc desc_up = {
	.name = "fabmon_collector_up",
	.help = "1 if the collector's last sample succeeded, 0 if it failed or its source is absent.",
	.type = METRIC_GAUGE,
};
static const struct metric_desc desc_duration = {
	.name = "fabmon_collector_duration_seconds",
	.help = "Time the collector's last sample took.",
	.type = METRIC_GAUGE,
};
static const struct metric_desc desc_errors = {
	.name = "fabmon_collector_errors_total",
	.help = "Samples of the collector that failed as a whole.",
	.type = METRIC_COUNTER,
};
static const struct metric_desc desc_skipped = {
	.name = "fabmon_collector_skipped_values_total",
	.help = "Values there but unusable (garbage, an unreadable file) that the collector skipped.",
	.type = METRIC_COUNTER,
};

void collector_set_sample(struct collector_set *set, struct registry *reg)
{
	struct sample_sink *self;

	for (unsigned i = 0; i < set->n; i++) {
		struct collector_slot *s = &set->slots[i];
		double t0;
		int r;

		if (!s->available)
			continue;
		t0 = clock_mono_s();
		r = s->ops->sample(s->state, &set->env, registry_sink(reg, s->ops->name));
		s->duration_s = clock_mono_s() - t0;
		s->last_ok = r >= 0;
		if (r < 0)
			s->errors++;
		s->news[0] = '\0';
		if (s->ops->news)
			s->ops->news(s->state, s->news, sizeof(s->news));
	}
	for (unsigned i = 0; i < set->n; i++) {
		struct collector_slot *s = &set->slots[i];
		struct label l = { "collector", s->ops->name };

		self = registry_sink(reg, "agent");
		(void)sample_gauge(self, &desc_up, &l, 1, s->available && s->last_ok);
		if (!s->available)
			continue;
		(void)sample_gauge(self, &desc_duration, &l, 1, s->duration_s);
		(void)sample_counter(self, &desc_errors, &l, 1, s->errors);
		(void)sample_counter(self, &desc_skipped, &l, 1,
				     registry_skipped(reg, s->ops->name));
	}
}

void collector_set_release(struct collector_set *set)
{
	for (unsigned i = 0; i < set->n; i++)
		if (set->slots[i].available)
			set->slots[i].ops->fini(set->slots[i].state);
	if (set->has_interfaces)
		regfree(&set->interfaces);
	if (set->has_ethtool_include)
		regfree(&set->ethtool_include);
	if (set->has_pcap_interfaces)
		regfree(&set->pcap_interfaces);
	if (set->has_lldp_interfaces)
		regfree(&set->lldp_interfaces);
	memset(set, 0, sizeof(*set));
}
