/* SPDX-License-Identifier: MIT */
#ifndef FABMON_TEST_SUITES_H
#define FABMON_TEST_SUITES_H

#include <check.h>

/* One suite per module; tests/unit/main.c runs them all. */
Suite *sysfs_suite(void);
Suite *registry_suite(void);
Suite *exposition_suite(void);
Suite *config_suite(void);
Suite *store_suite(void);
Suite *http_suite(void);
Suite *netdev_suite(void);
Suite *ethtool_suite(void);
Suite *rdma_suite(void);
Suite *qdisc_suite(void);
Suite *pressure_suite(void);
Suite *unread_suite(void);
Suite *bpf_peers_suite(void);
Suite *roce_suite(void);
Suite *bpf_tcp_suite(void);
Suite *bpf_drop_reasons_suite(void);
Suite *bpf_flow_suite(void);
Suite *bpf_tc_lock_suite(void);
Suite *events_suite(void);
Suite *detect_hotspot_suite(void);
Suite *detect_lossy_suite(void);
Suite *detect_link_suite(void);
Suite *detect_path_suite(void);
Suite *detect_handoff_suite(void);
Suite *lldp_suite(void);
Suite *packet_suite(void);
Suite *kmap_suite(void);
Suite *openmetrics_suite(void);
Suite *locate_score_suite(void);
Suite *topology_suite(void);
Suite *detect_roce_suite(void);
Suite *timefmt_suite(void);
Suite *loopback_suite(void);
Suite *reconcile_suite(void);
Suite *mesh_knock_suite(void);
Suite *pack_suite(void);
Suite *web_config_suite(void);
Suite *privilege_suite(void);
Suite *window_suite(void);
Suite *regex_bounded_suite(void);
Suite *label_text_suite(void);
Suite *tcp_loss_suite(void);
Suite *tcp_waits_suite(void);
Suite *capfile_suite(void);
Suite *mesh_peer_suite(void);
Suite *mesh_targets_suite(void);
Suite *mesh_engine_suite(void);
Suite *detect_mesh_suite(void);

#endif
