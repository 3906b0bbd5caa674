/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "collector/collector.h"

const struct collector_ops *const collector_all[] = {
	&netdev_collector,
	&ethtool_collector,
	&rdma_collector,
	&qdisc_collector,
	&pressure_collector,
	&bpf_collector,
	&sockets_collector,
	&pcap_collector,
	&topology_collector,
	&mesh_collector, /* probes peers: only with mesh_targets or mesh_peers */
	NULL,
};
/* a set holds every collector: one more here is one more there */
_Static_assert(sizeof(collector_all) / sizeof(collector_all[0]) == COLLECTOR_KINDS + 1,
	       "COLLECTOR_KINDS is not the number of collectors");

const struct collector_ops *collector_find(const char *name)
{
	for (size_t i = 0; collector_all[i]; i++)
		if (strcmp(collector_all[i]->name, name) == 0)
			return collector_all[i];
	return NULL;
}

int collector_want_interface(const struct collector_env *env, const char *ifname)
{
	return !env->interfaces || regexec(env->interfaces, ifname, 0, NULL, 0) == 0;
}
