/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "suites.h"

/*
 * Runs every unit suite in fork mode (a crash fails one test, not the run).
 * Check prints its own summary line; the exit status is 1 if any test failed.
 */
int main(void)
{
	Suite *(*const suites[])(void) = {
		sysfs_suite,	     config_suite,
		registry_suite,	     exposition_suite,
		store_suite,	     http_suite,
		netdev_suite,	     ethtool_suite,
		rdma_suite,	     qdisc_suite,
		pressure_suite,	     bpf_peers_suite,
		roce_suite,	     bpf_flow_suite,
		bpf_tcp_suite,	     bpf_drop_reasons_suite,
		events_suite,	     detect_hotspot_suite,
		detect_path_suite,   detect_handoff_suite,
		lldp_suite,	     kmap_suite,
		detect_roce_suite,   timefmt_suite,
		pack_suite,	     web_config_suite,
		privilege_suite,     window_suite,
		regex_bounded_suite, label_text_suite,
		tcp_loss_suite,	     tcp_waits_suite,
		capfile_suite,	     bpf_tc_lock_suite,
		detect_lossy_suite,  openmetrics_suite,
		locate_score_suite,  topology_suite,
		mesh_peer_suite,     mesh_targets_suite,
		mesh_engine_suite,   detect_mesh_suite,
		detect_link_suite,   unread_suite,
		loopback_suite,	     reconcile_suite,
		mesh_knock_suite,    packet_suite,
	};
	SRunner *sr = srunner_create(NULL);
	int failed;

	for (size_t i = 0; i < sizeof(suites) / sizeof(suites[0]); i++)
		srunner_add_suite(sr, suites[i]());
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
