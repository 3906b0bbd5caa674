/* SPDX-License-Identifier: MIT */
#ifndef FABMON_COLLECTOR_H
#define FABMON_COLLECTOR_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>

struct bpf_tc_lock;
struct mesh_conf;

/*
 * A collector reads one source (sysfs netdev statistics, SIOCETHTOOL, RDMA
 * counters, qdisc stats, ...) and emits samples into a sink that the registry
 * owns. Collectors never see the registry, the store or HTTP: data flows one
 * way, collector -> registry -> store/http.
 */

/*
 * METRIC_HISTOGRAM: a histogram family X, whole (sample_histogram(), desc
 * named X), or one of its series at a time (sample_counter(), desc named
 * X_bucket with an "le" label given last, X_sum or X_count). Each series is
 * a cumulative counter and /metrics shows them under "# TYPE X histogram".
 */
enum metric_type { METRIC_COUNTER, METRIC_GAUGE, METRIC_HISTOGRAM };

/*
 * What a metric is. The registry copies name and help when it first sees a
 * family, so a desc may live on the stack (ethtool builds names at run time).
 */
struct metric_desc {
	const char *name; /* full name: fabmon_<subsystem>_<name>_<unit>[_total] */
	const char *help;
	enum metric_type type;
	/* Counters only: width in bits at which the source wraps (32 for mlx5's
	 * Q counters); 0 means 64, and a fall is then always a reset. */
	unsigned char bits;
	/* Multiplier from the source's unit to the metric's base unit (4 for
	 * RDMA data counters in 4-byte words, 1e-6 for microseconds); 0 means 1.
	 * Wraps are detected on the raw value, before scaling. */
	double scale;
};

struct label {
	const char *key;
	const char *value;
};

/* Implemented by the registry; a collector only holds a pointer for one tick. */
struct sample_sink;

/*
 * Emits one counter reading (the raw value the source shows). The registry
 * turns successive readings into a monotonic total and a per-second rate,
 * absorbing wraps at desc->bits and resets. Returns 0, or -ENOSPC when the
 * registry is full (the sample is dropped and counted), -EINVAL on a bad desc.
 */
int sample_counter(struct sample_sink *out, const struct metric_desc *desc,
		   const struct label *labels, size_t n_labels, uint64_t raw);

/* Emits one gauge reading. Returns as sample_counter(). */
int sample_gauge(struct sample_sink *out, const struct metric_desc *desc,
		 const struct label *labels, size_t n_labels, double value);

/* A histogram's buckets: n upper bounds, and their "le" label values as
 * the text format writes them, n + 1 of them with "+Inf" last. */
struct histogram_bounds {
	unsigned n;
	const char *const *le;
};

/*
 * Emits one reading of histogram desc->name (X) whole: buckets[0..n], the
 * cumulative count at each bound of b (static: the registry keeps the
 * pointer), +Inf last; sum, raw, scaled by desc->scale; and count. They show
 * as X_bucket{...,le="..."}, X_sum and X_count, counters as sample_counter()
 * makes them, and count as that many series, n + 3, against the registry's
 * bound; the registry holds them as one entry, not one a bucket. Returns as
 * sample_counter().
 */
int sample_histogram(struct sample_sink *out, const struct metric_desc *desc,
		     const struct label *labels, size_t n_labels, const struct histogram_bounds *b,
		     const uint64_t *buckets, uint64_t sum, uint64_t count);

/*
 * Counts a value that is there but the collector could not use (garbage, a
 * read error on one file). A value that is absent, or that the device does not
 * provide ("N/A (no PMA)"), is not one. It shows as
 * fabmon_collector_skipped_values_total.
 */
void sample_skip(struct sample_sink *out);

/* What a collector may know about the agent's settings. */
struct collector_env {
	const char *sysfs_root; /* "/sys", or a fixture tree laid out like it */
	const char *procfs_root; /* "/proc", or a tree laid out like it */
	const regex_t *interfaces; /* NULL: every network interface */
	const regex_t *ethtool_include; /* NULL: only the known ethtool counters */
	const regex_t *pcap_interfaces; /* mirror ports to capture on; NULL: none */
	const regex_t *lldp_interfaces; /* NULL: the physical NICs interfaces selects */
	/* the speed (Mb/s) captured PAUSE and PFC frames are timed at; 0: each
	 * capture interface's own */
	unsigned pcap_link_mbps;
	unsigned bpf_max_flows; /* size of the probes' flow maps */
	unsigned bpf_top_peers; /* per-peer series kept, the rest are "other" */
	int64_t bpf_flow_idle_ms; /* idle flows are deleted from the maps */
	/* RoCE path MTU (256..4096) an RDMA READ's PSNs are counted by until
	 * READ responses on its path show one (bpf/account.h) */
	unsigned roce_pmtu;
	/* comma-separated network namespace files the TCP probes are limited
	 * to (/run/netns/NAME, /proc/PID/ns/net); "" for every namespace */
	const char *bpf_netns;
	/* the lock on this network namespace's tc filters (collector/bpf/tc_lock.h) that
	 * the tc probe takes before it touches them; NULL: the probe is loaded
	 * but attached nowhere, as `fabmon doctor` wants */
	struct bpf_tc_lock *tc_lock;
	int64_t retry_ms; /* a source found gone is looked for again after this */
	int64_t sockets_interval_ms; /* sockets: a dump at most this often; 0: every tick */
	const char *topology_file; /* the static topology file; "" or NULL: none */
	const char *topology_host; /* this node's name in it */
	const struct mesh_conf *mesh; /* the mesh collector's settings (mesh/mesh_conf.h) */
	/* `fabmon doctor`: init looks and reports, and starts nothing that
	 * acts on the network (the mesh binds no port and sends no probe) */
	int doctor;
};

/* True if the interface name passes env->interfaces. */
int collector_want_interface(const struct collector_env *env, const char *ifname);

#define COLLECTOR_WHY_MAX 1024

struct collector_ops {
	const char *name;
	/*
	 * Prepares the collector. Returns >= 0 and sets *ret_state, or -errno
	 * and writes the reason into why ("no RDMA devices under
	 * /sys/class/infiniband"). -ENOENT, -EPERM and -EOPNOTSUPP mean the source
	 * is absent on this host: the agent marks the collector down and runs on.
	 * On success why may still hold a note for `fabmon doctor` (partial
	 * support, e.g. "ethtool: operation not supported on lo"), or be empty.
	 */
	int (*init)(const struct collector_env *env, void **ret_state, char *why, size_t why_len);
	/*
	 * Reads the source once and emits its samples. Returns >= 0, or -errno
	 * when the whole source failed this tick (counted in
	 * fabmon_collector_errors_total, collector_up 0 for the tick).
	 */
	int (*sample)(void *state, const struct collector_env *env, struct sample_sink *out);
	/* Releases what init made. Accepts NULL. */
	void (*fini)(void *state);
	/*
	 * Optional. Writes into buf what the last sample found changed that an
	 * operator should hear of once (a probe someone detached, and put
	 * back), or "" if nothing did.
	 */
	void (*news)(void *state, char *buf, size_t len);
};

extern const struct collector_ops netdev_collector;
extern const struct collector_ops ethtool_collector;
extern const struct collector_ops rdma_collector;
extern const struct collector_ops qdisc_collector;
extern const struct collector_ops bpf_collector;
extern const struct collector_ops pcap_collector;
extern const struct collector_ops pressure_collector;
extern const struct collector_ops topology_collector;
extern const struct collector_ops mesh_collector;
extern const struct collector_ops sockets_collector;

/* The one list of collectors, in sampling order, NULL-terminated: as many
 * as COLLECTOR_KINDS (collectors.c asserts it), which is what a set of
 * them holds. */
#define COLLECTOR_KINDS 10
extern const struct collector_ops *const collector_all[];

/* Returns the collector called name, or NULL. */
const struct collector_ops *collector_find(const char *name);

#endif
