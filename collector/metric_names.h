/* SPDX-License-Identifier: MIT */
#ifndef FABMON_METRIC_NAMES_H
#define FABMON_METRIC_NAMES_H

/*
 * The names of the series the detectors read (agent/detect/detect.c), which
 * the collectors that report them use too: a rename changes both sides, or
 * fails the build, never silently leaves a detector without its input.
 * A name only its own collector uses stays a literal there.
 */

#define M_ETHTOOL_LINK_PAUSE_DURATION_SECONDS_TOTAL                                                \
	"fabmon_ethtool_link_pause_duration_seconds_total"
#define M_ETHTOOL_LINK_PAUSE_FRAMES_TOTAL "fabmon_ethtool_link_pause_frames_total"
#define M_ETHTOOL_PAUSE_DURATION_SECONDS_TOTAL "fabmon_ethtool_pause_duration_seconds_total"
#define M_ETHTOOL_PAUSE_FRAMES_TOTAL "fabmon_ethtool_pause_frames_total"
#define M_ETHTOOL_RX_PHY_ERRORS_TOTAL "fabmon_ethtool_rx_phy_errors_total"

#define M_FLOW_ECN_CE_PACKETS_TOTAL "fabmon_flow_ecn_ce_packets_total"

#define M_NETDEV_RECEIVE_BYTES_TOTAL "fabmon_netdev_receive_bytes_total"
#define M_NETDEV_RECEIVE_DROPS_TOTAL "fabmon_netdev_receive_drops_total"
#define M_NETDEV_RECEIVE_PACKETS_TOTAL "fabmon_netdev_receive_packets_total"
#define M_NETDEV_SPEED_BYTES "fabmon_netdev_speed_bytes"
#define M_NETDEV_UP "fabmon_netdev_up"
#define M_NETDEV_TRANSMIT_BYTES_TOTAL "fabmon_netdev_transmit_bytes_total"
#define M_NETDEV_TRANSMIT_DROPS_TOTAL "fabmon_netdev_transmit_drops_total"
#define M_NETDEV_TRANSMIT_PACKETS_TOTAL "fabmon_netdev_transmit_packets_total"

#define M_PCAP_LINK_PAUSE_DURATION_SECONDS_TOTAL "fabmon_pcap_link_pause_duration_seconds_total"
#define M_PCAP_PAUSE_DURATION_SECONDS_TOTAL "fabmon_pcap_pause_duration_seconds_total"

#define M_QDISC_BACKLOG_BYTES "fabmon_qdisc_backlog_bytes"
#define M_QDISC_DROPS_TOTAL "fabmon_qdisc_drops_total"
#define M_QDISC_OVERLIMITS_TOTAL "fabmon_qdisc_overlimits_total"
#define M_QDISC_RATE_BYTES "fabmon_qdisc_rate_bytes"

#define M_RDMA_LOCAL_ACK_TIMEOUTS_TOTAL "fabmon_rdma_local_ack_timeouts_total"
#define M_RDMA_OUT_OF_SEQUENCE_PACKETS_TOTAL "fabmon_rdma_out_of_sequence_packets_total"
#define M_RDMA_PACKET_SEQUENCE_ERRORS_TOTAL "fabmon_rdma_packet_sequence_errors_total"
#define M_RDMA_PORT_LINK_ERROR_RECOVERIES_TOTAL "fabmon_rdma_port_link_error_recoveries_total"
#define M_RDMA_PORT_RATE_BYTES "fabmon_rdma_port_rate_bytes"
#define M_RDMA_PORT_RECEIVE_ERRORS_TOTAL "fabmon_rdma_port_receive_errors_total"
#define M_RDMA_PORT_RECEIVE_PACKETS_TOTAL "fabmon_rdma_port_receive_packets_total"
#define M_RDMA_PORT_SYMBOL_ERRORS_TOTAL "fabmon_rdma_port_symbol_errors_total"
#define M_RDMA_PORT_TRANSMIT_BYTES_TOTAL "fabmon_rdma_port_transmit_bytes_total"
#define M_RDMA_PORT_TRANSMIT_PACKETS_TOTAL "fabmon_rdma_port_transmit_packets_total"
#define M_RDMA_PORT_TRANSMIT_WAIT_TOTAL "fabmon_rdma_port_transmit_wait_total"

#define M_ROCE_ECN_CE_PACKETS_TOTAL "fabmon_roce_ecn_ce_packets_total"
#define M_ROCE_PACKETS_TOTAL "fabmon_roce_packets_total"

#define M_TCP_ACK_STALL_SECONDS "fabmon_tcp_ack_stall_seconds"
#define M_TCP_ACKED_BYTES_TOTAL "fabmon_tcp_acked_bytes_total"
#define M_TCP_BUSY_SECONDS_TOTAL "fabmon_tcp_busy_seconds_total"
#define M_TCP_DELIVERY_RATE_BYTES_PER_SECOND "fabmon_tcp_delivery_rate_bytes_per_second"
#define M_TCP_IN_FLIGHT_BYTES "fabmon_tcp_in_flight_bytes"
#define M_TCP_PATH_RETRANSMITS_TOTAL "fabmon_tcp_path_retransmits_total"
#define M_TCP_PROGRESS_AGE_SECONDS "fabmon_tcp_progress_age_seconds"
#define M_TCP_READ_STALL_SECONDS "fabmon_tcp_read_stall_seconds"
#define M_TCP_SENDER_ACK_STALL_SECONDS "fabmon_tcp_sender_ack_stall_seconds"
#define M_TCP_SENDER_BUSY_SECONDS "fabmon_tcp_sender_busy_seconds"
#define M_TCP_SENDER_FANOUT_PEERS "fabmon_tcp_sender_fanout_peers"
#define M_TCP_SENDER_READ_STALL_SECONDS "fabmon_tcp_sender_read_stall_seconds"
#define M_TCP_TRANSFER_BYTES_TOTAL "fabmon_tcp_transfer_bytes_total"
#define M_TCP_TRANSFER_DURATION_SECONDS_BUCKET "fabmon_tcp_transfer_duration_seconds_bucket"
#define M_TCP_TRANSFER_DURATION_SECONDS_COUNT "fabmon_tcp_transfer_duration_seconds_count"
#define M_TCP_TRANSFER_DURATION_SECONDS_SUM "fabmon_tcp_transfer_duration_seconds_sum"
#define M_TCP_TRANSFER_OPEN_SECONDS "fabmon_tcp_transfer_open_seconds"
#define M_TCP_AWAITED_SECONDS "fabmon_tcp_awaited_seconds"
#define M_TCP_READING_CONNECTIONS "fabmon_tcp_reading_connections"
#define M_TCP_UNREAD_BYTES "fabmon_tcp_unread_bytes"
#define M_TCP_UNREAD_CONNECTIONS "fabmon_tcp_unread_connections"
#define M_TCP_UNREAD_SECONDS "fabmon_tcp_unread_seconds"
#define M_TCP_UPSTREAM_BUSY_RATE_BYTES_PER_SECOND "fabmon_tcp_upstream_busy_rate_bytes_per_second"
#define M_TCP_WINDOW_LIMITED_CONNECTIONS "fabmon_tcp_window_limited_connections"
#define M_TCP_ZERO_WINDOW_CONNECTIONS "fabmon_tcp_zero_window_connections"

#define M_PRESSURE_CPU_WAITING_SECONDS_TOTAL "fabmon_pressure_cpu_waiting_seconds_total"

#define M_MESH_PROBES_SENT_TOTAL "fabmon_mesh_probes_sent_total"
#define M_MESH_PROBES_LOST_TOTAL "fabmon_mesh_probes_lost_total"
#define M_MESH_PROBES_QUEUED_TOTAL "fabmon_mesh_probes_queued_total"
#define M_MESH_LAST_ANSWER_TIMESTAMP_SECONDS "fabmon_mesh_last_answer_timestamp_seconds"
#define M_MESH_KERNEL_SILENT_SECONDS "fabmon_mesh_kernel_silent_seconds"
#define M_MESH_PROBES_LOST_QUEUED_TOTAL "fabmon_mesh_probes_lost_queued_total"
#define M_MESH_LOSS_ROUNDS_TOTAL "fabmon_mesh_loss_rounds_total"
#define M_MESH_RTT_SECONDS "fabmon_mesh_rtt_seconds"
#define M_MESH_RTT_SECONDS_SUM "fabmon_mesh_rtt_seconds_sum"
#define M_MESH_RTT_SECONDS_COUNT "fabmon_mesh_rtt_seconds_count"
#define M_MESH_RESPONDER_DELAY_SECONDS_TOTAL "fabmon_mesh_responder_delay_seconds_total"
#define M_MESH_FLOW_PROBES_LOST_TOTAL "fabmon_mesh_flow_probes_lost_total"
#define M_MESH_FLOW_RTT_SECONDS "fabmon_mesh_flow_rtt_seconds"
#define M_MESH_HOP_INFO "fabmon_mesh_hop_info"

/* every mesh series starts so: the detector skips others fast */
#define M_MESH_PREFIX "fabmon_mesh_"

/* every TCP series the probe reports starts so: the detectors skip others fast */
#define M_TCP_PREFIX "fabmon_tcp_"

#endif
