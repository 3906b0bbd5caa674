/* SPDX-License-Identifier: MIT */
/*
 * RDMA counters from <sysfs_root>/class/infiniband. RDMA data bypasses the
 * kernel's network stack, so these files are the host's only view of it: the
 * PMA port counters (counters/), the driver's hw_counters (RoCE congestion and
 * retransmission, per port and per device), and port and device information.
 *
 * Devices and ports are listed afresh each tick, so a hot-plugged or removed
 * HCA shows up or goes away without a restart; the collector keeps no state.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/collector.h"
#include "collector/metric_names.h"
#include "collector/sysfs.h"

#define RDMA_CLASS "class/infiniband"

/* Long enough for any attribute we read; board_id and rate are the longest. */
#define RDMA_TEXT_MAX 256

/*
 * A counter file and the metric it feeds, scaled by scale (0: 1). bits is the
 * width the source keeps the value in (0: 64): where a PMA counter stops, and
 * where a hw_counter wraps. A NULL name sends the file to its directory's
 * catch-all family, by file name, at that width.
 */
struct rdma_counter {
	const char *file;
	const char *name;
	unsigned char bits;
	double scale;
	const char *help;
};

/*
 * counters/: the PMA attributes, with the widths drivers/infiniband/core/
 * sysfs.c reads them at (PORT_PMA_ATTR): PortCounters (IBTA spec vol 1,
 * 16.1.3.5), whose counters stop at all ones instead of wrapping (the
 * kernel's own PMAs, qib and hfi1, clamp them so too). The data and packet
 * counters come from PortCountersExtended, 64 bits, where the HCA has it
 * (IB_PMA_CLASS_CAP_EXT_WIDTH, or _NOIETF without the unicast and multicast
 * ones), else from PortCounters, 32 bits: they are listed at 32, the width
 * they may stop at; a 64-bit one passes that value once on its way up.
 */
static const struct rdma_counter rdma_port_counters[] = {
	{ "port_xmit_data", M_RDMA_PORT_TRANSMIT_BYTES_TOTAL, 32, 4,
	  "Bytes transmitted on the port (PortXmitData, which counts 4-byte words)." },
	{ "port_rcv_data", "fabmon_rdma_port_receive_bytes_total", 32, 4,
	  "Bytes received on the port (PortRcvData, which counts 4-byte words)." },
	{ "port_xmit_packets", M_RDMA_PORT_TRANSMIT_PACKETS_TOTAL, 32, 0,
	  "Packets transmitted on the port." },
	{ "port_rcv_packets", M_RDMA_PORT_RECEIVE_PACKETS_TOTAL, 32, 0,
	  "Packets received on the port." },
	{ "unicast_xmit_packets", "fabmon_rdma_port_transmit_unicast_packets_total", 64, 0,
	  "Unicast packets transmitted on the port." },
	{ "unicast_rcv_packets", "fabmon_rdma_port_receive_unicast_packets_total", 64, 0,
	  "Unicast packets received on the port." },
	{ "multicast_xmit_packets", "fabmon_rdma_port_transmit_multicast_packets_total", 64, 0,
	  "Multicast packets transmitted on the port." },
	{ "multicast_rcv_packets", "fabmon_rdma_port_receive_multicast_packets_total", 64, 0,
	  "Multicast packets received on the port." },
	{ "port_xmit_discards", "fabmon_rdma_port_transmit_discards_total", 16, 0,
	  "Outbound packets discarded because the port was down or congested." },
	{ "port_xmit_wait", M_RDMA_PORT_TRANSMIT_WAIT_TOTAL, 32, 0,
	  "Ticks (device-defined length) during which the port had data to send "
	  "but no flow-control credits: back-pressure from the link." },
	{ "link_downed", "fabmon_rdma_port_link_downed_total", 8, 0,
	  "Times the link failed its error recovery and went down." },
	{ "link_error_recovery", M_RDMA_PORT_LINK_ERROR_RECOVERIES_TOTAL, 8, 0,
	  "Times the link completed error recovery." },
	{ "symbol_error", M_RDMA_PORT_SYMBOL_ERRORS_TOTAL, 16, 0,
	  "Minor link errors detected on a physical lane." },
	{ "port_rcv_errors", M_RDMA_PORT_RECEIVE_ERRORS_TOTAL, 16, 0,
	  "Received packets that contained an error." },
	{ "port_rcv_remote_physical_errors",
	  "fabmon_rdma_port_receive_remote_physical_errors_total", 16, 0,
	  "Received packets marked with the EBP delimiter (corrupted upstream)." },
	{ "port_rcv_switch_relay_errors", "fabmon_rdma_port_receive_switch_relay_errors_total", 16,
	  0, "Received packets discarded because they could not be forwarded." },
	{ "port_xmit_constraint_errors", "fabmon_rdma_port_transmit_constraint_errors_total", 8, 0,
	  "Outbound packets not sent because of partition or raw-packet constraints." },
	{ "port_rcv_constraint_errors", "fabmon_rdma_port_receive_constraint_errors_total", 8, 0,
	  "Received packets discarded because of partition or raw-packet constraints." },
	{ "local_link_integrity_errors", "fabmon_rdma_port_local_link_integrity_errors_total", 4, 0,
	  "Times the count of local physical errors exceeded its threshold." },
	{ "excessive_buffer_overrun_errors",
	  "fabmon_rdma_port_excessive_buffer_overrun_errors_total", 4, 0,
	  "Times consecutive receive buffer overruns exceeded their threshold." },
	{ "VL15_dropped", "fabmon_rdma_port_vl15_dropped_packets_total", 16, 0,
	  "Subnet management (VL15) packets dropped for lack of buffers." },
};

/*
 * hw_counters/: driver counters, u64 in struct rdma_hw_stats but as wide as
 * the driver reads them. The ones that tell congestion and retransmission get
 * a metric of their own; every other file goes to fabmon_rdma_hw_stat_total
 * by name. Widths after mlx5 (drivers/infiniband/hw/mlx5/counters.c): its Q
 * counters are 32-bit words of QUERY_Q_COUNTER (mlx5_ib_query_q_counters()
 * reads a __be32) that wrap, as the mlx5 PMD of DPDK reads out_of_buffer
 * from this file; congestion counters are 64-bit (_high/_low in
 * query_cong_statistics_out) and so is rx_icrc_encapsulated (PPCNT).
 */
static const struct rdma_counter rdma_hw_counters[] = {
	{ "np_cnp_sent", "fabmon_rdma_cnp_sent_total", 0, 0,
	  "Congestion notification packets sent as notification point, on receiving "
	  "ECN-marked RoCE packets." },
	{ "np_ecn_marked_roce_packets", "fabmon_rdma_ecn_marked_packets_total", 0, 0,
	  "RoCE packets received with ECN Congestion Experienced set." },
	{ "rp_cnp_handled", "fabmon_rdma_cnp_handled_total", 0, 0,
	  "Congestion notification packets handled as reaction point (rate reduced)." },
	{ "rp_cnp_ignored", "fabmon_rdma_cnp_ignored_total", 0, 0,
	  "Congestion notification packets received and ignored as reaction point." },
	{ "out_of_sequence", M_RDMA_OUT_OF_SEQUENCE_PACKETS_TOTAL, 32, 0,
	  "Packets received out of sequence: loss or reordering in the fabric." },
	{ "packet_seq_err", M_RDMA_PACKET_SEQUENCE_ERRORS_TOTAL, 32, 0,
	  "NAK sequence error packets received: the responder saw a PSN gap." },
	{ "implied_nak_seq_err", "fabmon_rdma_implied_nak_sequence_errors_total", 32, 0,
	  "Times the requester saw an ACK with a PSN past an expected READ or atomic response." },
	{ "local_ack_timeout_err", M_RDMA_LOCAL_ACK_TIMEOUTS_TOTAL, 32, 0,
	  "Times the ACK timer of a sender queue pair expired: a retransmission." },
	{ "duplicate_request", "fabmon_rdma_duplicate_requests_total", 32, 0,
	  "Duplicate requests received: the sender retransmitted." },
	{ "rnr_nak_retry_err", "fabmon_rdma_rnr_nak_retry_errors_total", 32, 0,
	  "Receiver-not-ready NAKs received (the retry limit not yet exceeded)." },
	{ "out_of_buffer", "fabmon_rdma_out_of_buffer_drops_total", 32, 0,
	  "Packets dropped because no receive WQE was posted." },
	{ "roce_adp_retrans", "fabmon_rdma_adaptive_retransmissions_total", 32, 0,
	  "Adaptive retransmissions of RoCE traffic." },
	{ "roce_adp_retrans_to", "fabmon_rdma_adaptive_retransmission_timeouts_total", 32, 0,
	  "Timeouts of RoCE traffic while adaptive retransmission was on." },
	{ "roce_slow_restart", "fabmon_rdma_slow_restarts_total", 32, 0,
	  "Times RoCE slow restart was used." },
	{ "roce_slow_restart_cnps", "fabmon_rdma_slow_restart_cnps_total", 32, 0,
	  "Congestion notification packets generated by RoCE slow restart." },
	{ "roce_slow_restart_trans", "fabmon_rdma_slow_restart_transitions_total", 32, 0,
	  "Times RoCE slow restart changed state to slow restart." },
	{ "req_cqe_error", "fabmon_rdma_requester_cqe_errors_total", 32, 0,
	  "Requester work completions with an error." },
	{ "req_cqe_flush_error", "fabmon_rdma_requester_cqe_flush_errors_total", 32, 0,
	  "Requester work completions flushed with an error." },
	{ "resp_cqe_error", "fabmon_rdma_responder_cqe_errors_total", 32, 0,
	  "Responder work completions with an error." },
	{ "resp_cqe_flush_error", "fabmon_rdma_responder_cqe_flush_errors_total", 32, 0,
	  "Responder work completions flushed with an error." },
	/* mlx5's other Q counters */
	{ "rx_write_requests", NULL, 32, 0, NULL },
	{ "rx_read_requests", NULL, 32, 0, NULL },
	{ "rx_atomic_requests", NULL, 32, 0, NULL },
	{ "rx_dct_connect", NULL, 32, 0, NULL },
	{ "resp_local_length_error", NULL, 32, 0, NULL },
	{ "req_remote_invalid_request", NULL, 32, 0, NULL },
	{ "req_remote_access_errors", NULL, 32, 0, NULL },
	{ "resp_remote_access_errors", NULL, 32, 0, NULL },
	{ "req_transport_retries_exceeded", NULL, 32, 0, NULL },
	{ "req_rnr_retries_exceeded", NULL, 32, 0, NULL },
};

static const struct rdma_counter rdma_hw_other = {
	.name = "fabmon_rdma_hw_stat_total",
	.help = "Driver hw_counters without a metric of their own, by file name.",
};

static const struct metric_desc rdma_port_info = {
	.name = "fabmon_rdma_port_info",
	.help = "RDMA port state, physical state and link layer, as labels; always 1.",
	.type = METRIC_GAUGE,
};

static const struct metric_desc rdma_port_state = {
	.name = "fabmon_rdma_port_state",
	.help = "RDMA port logical state (1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER).",
	.type = METRIC_GAUGE,
};

static const struct metric_desc rdma_port_rate = {
	.name = M_RDMA_PORT_RATE_BYTES,
	.help = "RDMA port signalling rate in bytes per second.",
	.type = METRIC_GAUGE,
	.scale = 1e9 / 8, /* the kernel reports Gb/sec */
};

static const struct metric_desc rdma_saturated = {
	.name = "fabmon_rdma_pma_saturated",
	.help = "1 while a port counter of the PMA is stopped at its maximum (PortCounters "
		"do not wrap): its counter series is left out, having no rate, until cleared; "
		"else 0.",
	.type = METRIC_GAUGE,
};

static const struct metric_desc rdma_device_info = {
	.name = "fabmon_rdma_device_info",
	.help = "RDMA device HCA type, firmware version and board id, as labels; always 1.",
	.type = METRIC_GAUGE,
};

/* A directory of counter files and how its files map to metrics. */
struct rdma_counter_dir {
	const char *subdir;
	const struct rdma_counter *table;
	size_t n;
	/* For files not in table; NULL ignores them (counters/ holds only the PMA set). */
	const struct rdma_counter *other;
	/* The port's PMA answers for these files, and may not: see rdma_counter_read(). */
	int pma;
};

#define RDMA_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const struct rdma_counter_dir rdma_port_counter_dir = {
	.subdir = "counters",
	.table = rdma_port_counters,
	.n = RDMA_LEN(rdma_port_counters),
	.pma = 1,
};

static const struct rdma_counter_dir rdma_hw_counter_dir = {
	.subdir = "hw_counters",
	.table = rdma_hw_counters,
	.n = RDMA_LEN(rdma_hw_counters),
	.other = &rdma_hw_other,
};

/*
 * One walk over the devices: init reads the PMA counters for notes to
 * `fabmon doctor` (out NULL, notes into why), sample reads and emits
 * everything. Names are borrowed from sysfs_list() for its callbacks.
 */
struct rdma_scan {
	const char *root;
	struct sample_sink *out;
	char *why;
	size_t why_len;
	const char *device;
	const char *port; /* NULL while reading device-level files */
	const struct rdma_counter_dir *dir;
	int no_pma; /* this port's PMA did not answer */
	int saturated; /* this port has a note of saturated counters */
};

/*
 * Appends to the notes for `fabmon doctor` in s->why (if any): a note of its
 * own after "; ", or with sep ", " more of the last one.
 */
__attribute__((format(printf, 3, 4))) static void rdma_note(const struct rdma_scan *s,
							    const char *sep, const char *fmt, ...)
{
	size_t used;
	va_list ap;

	if (!s->why)
		return;
	used = strlen(s->why);
	if (used + 3 > s->why_len)
		return; /* full: the notes so far stand */
	if (used) {
		memcpy(s->why + used, sep, 3);
		used += 2;
	}
	va_start(ap, fmt);
	(void)vsnprintf(s->why + used, s->why_len - used, fmt, ap);
	va_end(ap);
}

/* Builds the path of the current device (or port) plus fmt, relative to the root. */
__attribute__((format(printf, 3, 4))) static int
rdma_path(const struct rdma_scan *s, char path[PATH_MAX], const char *fmt, ...)
{
	va_list ap;
	int n, m;

	if (s->port)
		n = snprintf(path, PATH_MAX, RDMA_CLASS "/%s/ports/%s/", s->device, s->port);
	else
		n = snprintf(path, PATH_MAX, RDMA_CLASS "/%s/", s->device);
	if (n < 0 || n >= PATH_MAX)
		return -ENAMETOOLONG;
	va_start(ap, fmt);
	m = vsnprintf(path + n, PATH_MAX - (size_t)n, fmt, ap);
	va_end(ap);
	return m < 0 || m >= PATH_MAX - n ? -ENAMETOOLONG : 0;
}

/*
 * Reads attribute name of the current device or port into buf. An absent
 * file is just absent; any other failure (unreadable, empty) is counted as a
 * skipped value. buf is "" unless 0 is returned.
 */
static int rdma_read(const struct rdma_scan *s, const char *name, char *buf, size_t len)
{
	char path[PATH_MAX];
	int r;

	r = rdma_path(s, path, "%s", name);
	if (r >= 0)
		r = sysfs_read(s->root, path, buf, len);
	if (r < 0) {
		buf[0] = '\0';
		if (r != -ENOENT)
			sample_skip(s->out);
		return r;
	}
	return 0;
}

/* Fills l with {device, port (if any), counter (if not NULL)}; returns the count. */
static size_t rdma_labels(const struct rdma_scan *s, struct label l[3], const char *counter)
{
	size_t n = 0;

	l[n++] = (struct label){ "device", s->device };
	if (s->port)
		l[n++] = (struct label){ "port", s->port };
	if (counter)
		l[n++] = (struct label){ "counter", counter };
	return n;
}

static const struct rdma_counter *rdma_counter_find(const struct rdma_counter_dir *dir,
						    const char *file)
{
	for (size_t i = 0; i < dir->n; i++)
		if (strcmp(dir->table[i].file, file) == 0)
			return &dir->table[i];
	return NULL;
}

/*
 * Reads counter file of the current directory into *ret. Returns 0, -ENOENT
 * when the file is absent (gone since the listing), -ENODATA when the device
 * does not provide the value, or another -errno for a value that is there but
 * unusable (garbage).
 */
static int rdma_counter_read(const struct rdma_scan *s, const char *file, uint64_t *ret)
{
	char path[PATH_MAX], buf[64];
	int r = rdma_path(s, path, "%s/%s", s->dir->subdir, file);

	if (r >= 0)
		r = sysfs_read(s->root, path, buf, sizeof(buf));
	/*
	 * Where the port's PMA does not answer (no process_mad, a VF, iWARP),
	 * drivers/infiniband/core/sysfs.c show_pma_counter() wrote "N/A (no
	 * PMA)"; kernels since fail the read with get_perf_mad()'s -EINVAL.
	 */
	if (s->dir->pma && (r == -EINVAL || (r >= 0 && strncmp(buf, "N/A", 3) == 0)))
		return -ENODATA;
	return r < 0 ? r : sysfs_parse_u64(buf, ret);
}

/*
 * A PMA counter stops at all ones: a fall is a reset, never a wrap, so the
 * registry is given no width; and one stopped at its maximum counts nothing
 * we can see, so it has no rate: its series is left out (the registry keeps
 * its total) while fabmon_rdma_pma_saturated says why. Returns 1 if v is
 * such a maximum.
 */
static int rdma_pma_saturated(struct rdma_scan *s, const char *file, unsigned bits, uint64_t v)
{
	struct label l[3];
	int at_max;

	if (bits == 0 || bits >= 64)
		return 0;
	at_max = v == ((uint64_t)1 << bits) - 1;
	if (at_max && s->saturated)
		rdma_note(s, ", ", "%s", file);
	else if (at_max)
		rdma_note(s, "; ", "rdma: %s port %s: saturated, no rate until cleared: %s",
			  s->device, s->port, file);
	s->saturated |= at_max;
	if (s->out)
		(void)sample_gauge(s->out, &rdma_saturated, l, rdma_labels(s, l, file), at_max);
	return at_max;
}

static int rdma_counter_cb(const char *file, void *arg)
{
	struct rdma_scan *s = arg;
	const struct rdma_counter *known = rdma_counter_find(s->dir, file);
	const struct rdma_counter *c = known && known->name ? known : s->dir->other;
	unsigned bits = known ? known->bits : 0;
	struct metric_desc desc;
	struct label l[3];
	uint64_t v;
	int r;

	/* hw_counters/lifespan: how long (ms) the kernel caches the values
	 * (core/sysfs.c show_stats_lifespan), a setting, not a counter */
	if (!c || strcmp(file, "lifespan") == 0)
		return 0;
	r = rdma_counter_read(s, file, &v);
	if (r == -ENODATA && !s->no_pma) {
		rdma_note(s, "; ",
			  "rdma: %s port %s: no PMA, its counters/ values are not provided",
			  s->device, s->port);
		s->no_pma = 1;
	}
	/* Absent or not provided is no value, not a skipped one. */
	if (r < 0 && r != -ENOENT && r != -ENODATA && s->out)
		sample_skip(s->out);
	if (r < 0 || (s->dir->pma && rdma_pma_saturated(s, file, bits, v)) || !s->out)
		return 0;
	desc = (struct metric_desc){ c->name, c->help, METRIC_COUNTER, s->dir->pma ? 0 : bits,
				     c->scale };
	/* The registry counts what it cannot hold; nothing more to do here. */
	(void)sample_counter(s->out, &desc, l, rdma_labels(s, l, c == known ? NULL : file), v);
	return 0;
}

/* Samples the counter directory dir of the current device or port, if it has one. */
static void rdma_sample_dir(struct rdma_scan *s, const struct rdma_counter_dir *dir)
{
	char path[PATH_MAX];
	int r;

	s->dir = dir;
	r = rdma_path(s, path, "%s", dir->subdir);
	if (r >= 0)
		r = sysfs_list(s->root, path, rdma_counter_cb, s);
	if (r < 0 && r != -ENOENT && s->out)
		sample_skip(s->out);
}

/* The kernel writes state and phys_state as "%d: %s" ("4: ACTIVE"); returns the name part. */
static const char *rdma_state_name(const char *text)
{
	const char *p = strstr(text, ": ");

	return p ? p + 2 : text;
}

/* Parses the number of "4: ACTIVE". Returns 0 or -EINVAL. */
static int rdma_state_number(const char *text, unsigned long *ret)
{
	unsigned long v;
	char *end;

	if (!isdigit((unsigned char)*text))
		return -EINVAL;
	v = strtoul(text, &end, 10);
	if (*end != ':')
		return -EINVAL;
	*ret = v;
	return 0;
}

/* Parses the Gb/sec figure of "25 Gb/sec (1X EDR)" or "2.5 Gb/sec (1X SDR)". */
static int rdma_rate_gbps(const char *text, double *ret)
{
	double v;
	char *end;

	if (!isdigit((unsigned char)*text))
		return -EINVAL;
	v = strtod(text, &end);
	if (strncmp(end, " Gb/sec", 7) != 0)
		return -EINVAL;
	*ret = v;
	return 0;
}

static void rdma_sample_port_info(struct rdma_scan *s)
{
	char state[RDMA_TEXT_MAX], phys[RDMA_TEXT_MAX], link_layer[RDMA_TEXT_MAX];
	char rate[RDMA_TEXT_MAX];
	struct label l[5];
	size_t n = rdma_labels(s, l, NULL);
	unsigned long num;
	double gbps;

	if (rdma_read(s, "state", state, sizeof(state)) == 0) {
		if (rdma_state_number(state, &num) == 0)
			(void)sample_gauge(s->out, &rdma_port_state, l, n, (double)num);
		else
			sample_skip(s->out);
	}
	if (rdma_read(s, "rate", rate, sizeof(rate)) == 0) {
		if (rdma_rate_gbps(rate, &gbps) == 0)
			(void)sample_gauge(s->out, &rdma_port_rate, l, n, gbps);
		else
			sample_skip(s->out);
	}
	(void)rdma_read(s, "phys_state", phys, sizeof(phys));
	(void)rdma_read(s, "link_layer", link_layer, sizeof(link_layer));
	l[n++] = (struct label){ "state", rdma_state_name(state) };
	l[n++] = (struct label){ "phys_state", rdma_state_name(phys) };
	l[n++] = (struct label){ "link_layer", link_layer };
	(void)sample_gauge(s->out, &rdma_port_info, l, n, 1);
}

static int rdma_port_cb(const char *port, void *arg)
{
	struct rdma_scan *s = arg;

	s->port = port;
	s->no_pma = 0;
	s->saturated = 0;
	if (s->out)
		rdma_sample_port_info(s);
	rdma_sample_dir(s, &rdma_port_counter_dir);
	if (s->out)
		rdma_sample_dir(s, &rdma_hw_counter_dir);
	s->port = NULL;
	return 0;
}

static void rdma_sample_device_info(struct rdma_scan *s)
{
	char hca[RDMA_TEXT_MAX], fw[RDMA_TEXT_MAX], board[RDMA_TEXT_MAX];
	struct label l[4];

	(void)rdma_read(s, "hca_type", hca, sizeof(hca));
	(void)rdma_read(s, "fw_ver", fw, sizeof(fw));
	(void)rdma_read(s, "board_id", board, sizeof(board));
	l[0] = (struct label){ "device", s->device };
	l[1] = (struct label){ "hca_type", hca };
	l[2] = (struct label){ "fw_ver", fw };
	l[3] = (struct label){ "board_id", board };
	(void)sample_gauge(s->out, &rdma_device_info, l, 4, 1);

	/* Some drivers keep hw_counters for the whole device, next to ports/. */
	rdma_sample_dir(s, &rdma_hw_counter_dir);
}

static int rdma_device_cb(const char *device, void *arg)
{
	struct rdma_scan *s = arg;
	char path[PATH_MAX];
	int r;

	s->device = device;
	if (s->out)
		rdma_sample_device_info(s);
	r = rdma_path(s, path, "ports");
	if (r >= 0)
		r = sysfs_list(s->root, path, rdma_port_cb, s);
	if (r < 0 && r != -ENOENT && s->out)
		sample_skip(s->out);
	return 0;
}

static int rdma_any(const char *name, void *arg)
{
	(void)name;
	(void)arg;
	return 1;
}

static int rdma_init(const struct collector_env *env, void **ret_state, char *why, size_t why_len)
{
	struct rdma_scan s = { .root = env->sysfs_root, .why = why, .why_len = why_len };
	int r = sysfs_list(env->sysfs_root, RDMA_CLASS, rdma_any, NULL);

	if (r == 0 || r == -ENOENT) {
		snprintf(why, why_len, "no RDMA devices under %s/" RDMA_CLASS, env->sysfs_root);
		return -ENOENT;
	}
	if (r < 0) {
		snprintf(why, why_len, "unable to read '%s/" RDMA_CLASS "': %s", env->sysfs_root,
			 strerror(-r));
		return r;
	}
	if (why_len)
		why[0] = '\0';
	/* What is amiss with the counters is said once, here (doctor, the agent's log). */
	(void)sysfs_list(env->sysfs_root, RDMA_CLASS, rdma_device_cb, &s);
	*ret_state = NULL;
	return 0;
}

static int rdma_sample(void *state, const struct collector_env *env, struct sample_sink *out)
{
	struct rdma_scan s = { .root = env->sysfs_root, .out = out };
	int r;

	(void)state;
	r = sysfs_list(env->sysfs_root, RDMA_CLASS, rdma_device_cb, &s);
	return r < 0 ? r : 0;
}

static void rdma_fini(void *state)
{
	(void)state;
}

const struct collector_ops rdma_collector = {
	.name = "rdma",
	.init = rdma_init,
	.sample = rdma_sample,
	.fini = rdma_fini,
};
