/* SPDX-License-Identifier: MIT */
#ifndef FABMON_CONFIG_H
#define FABMON_CONFIG_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "collector/mesh/mesh_conf.h"

/*
 * The agent's settings: built-in defaults, then the INI file, then flags.
 * Every key of the file has a flag of the same name (sysfs_root is
 * --sysfs-root). Strings are held inline so a config is a plain value that can
 * be copied and swapped on SIGHUP.
 */

#define CONFIG_DEFAULT_PATH "/etc/fabmon/fabmon.conf"
#define CONFIG_DEFAULT_DB "/var/lib/fabmon/fabmon.db"
#define CONFIG_DEFAULT_LISTEN ":9478"
/*
 * The default collectors: those sysfs_root points elsewhere (netdev and rdma
 * read their counters under it, ethtool its list of interfaces; qdisc only
 * reads rtnetlink; pressure reads procfs_root), then those that attach to and capture on this host's
 * interfaces whatever sysfs_root says.
 */
#define CONFIG_SYSFS_COLLECTORS "netdev,ethtool,rdma,qdisc,pressure"
#define CONFIG_HOST_COLLECTORS "bpf,pcap,sockets"
/* Collectors of a file the operator writes, on by default; they export
 * nothing until it is set. */
#define CONFIG_FILE_COLLECTORS "topology"
#define CONFIG_MESH_UNLISTED                                                                       \
	"mesh_targets or mesh_peers is set, but collectors does not name mesh: probing off (add "  \
	"mesh to collectors to probe)"
#define CONFIG_HOST_COLLECTORS_OFF                                                                 \
	"bpf, pcap and sockets left off: sysfs_root is not /sys, and they would read this "        \
	"host's interfaces and connections, not the tree's; name them in collectors to run them"

struct config {
	char config_path[PATH_MAX];
	char listen[256];
	char db_path[PATH_MAX];
	int64_t interval_ms;
	char sysfs_root[PATH_MAX];
	char procfs_root[PATH_MAX]; /* the pressure collector's */
	char collectors[256]; /* comma-separated names */
	int collectors_given; /* collectors was set by the file or a flag */
	int host_collectors_off; /* CONFIG_HOST_COLLECTORS left off for sysfs_root */
	int mesh_unlisted; /* CONFIG_MESH_UNLISTED */
	char interfaces[512]; /* POSIX extended regex, anchored; "" = all */
	char bpf_netns[1024]; /* network namespace files for the TCP probes; "" = all */
	char ethtool_include[512];
	char pcap_interfaces[512]; /* mirror ports to capture RoCEv2 on; "" = none */
	unsigned pcap_link_mbps; /* the speed pause frames are timed at; 0: the interface's */
	char lldp_interfaces[512]; /* where to listen for LLDP; "" = physical NICs */
	unsigned max_series;
	int64_t retention_ms;
	int64_t event_retention_ms; /* events that ended longer ago are deleted */
	int64_t rollup_retention_ms; /* 1-minute rollups older are deleted */
	unsigned db_cap_mb; /* past this, the oldest samples go first; 0: no cap */
	int64_t series_expiry_ms;
	int64_t collector_retry_ms; /* how often an absent source is looked for again */
	int64_t sockets_interval_ms; /* the sockets collector dumps at most this often */
	unsigned event_open_ticks; /* ticks over a threshold before an event opens */
	unsigned event_close_ticks; /* ticks under before it closes */
	int64_t stall_after_ms; /* no ack progress with data pending this long: a stall */
	int64_t host_stall_after_ms; /* acked and not read by the peer this long: a host_stall */
	unsigned pfc_paused_percent; /* a port paused this share of the time is in a PFC storm */
	unsigned hotspot_util_percent; /* a congested link this full is a hotspot */
	unsigned lossy_link_ppm; /* a port under that with errors on this share of packets */
	int64_t lossy_link_for_ms; /* over this long, on two ticks or more: a lossy_link */
	unsigned incast_percent; /* an all-to-all peer delivered this share of the others' rate */
	int64_t incast_for_ms; /* for this long */
	unsigned straggler_percent; /* a ring peer delivered this share of the others' rate */
	int64_t path_window_ms; /* peers compared if they delivered this recently */
	unsigned handoff_slow_percent; /* hand-offs taking this share of their baseline */
	int64_t handoff_slow_extra_ms; /* and this much longer */
	unsigned http_connection_limit;
	unsigned http_per_ip_limit;
	unsigned http_timeout_s;
	char web_config_file[PATH_MAX]; /* TLS and basic auth (http/web_config.h); "" = none */
	unsigned api_max_points; /* values one /api/v1/query_range answer may hold */
	int64_t api_timeout_ms; /* an API query answers in this long, or a 503 */
	unsigned api_concurrency; /* API queries run at once; as many more wait */
	unsigned bpf_max_flows; /* entries of the probes' flow, QP and TCP maps */
	unsigned bpf_top_peers; /* per-peer series kept; the rest go to peer="other" */
	int64_t bpf_flow_idle_ms; /* flows idle this long are deleted from the maps */
	unsigned roce_pmtu; /* RoCE path MTU a READ is counted by until its path shows one */
	char user[64]; /* a root start drops to this user once set up; "" = stay */
	char topology_file[PATH_MAX]; /* the static topology file; "" = none */
	char topology_host[64]; /* this node's host name in it; "" = the host name */
	struct mesh_conf mesh; /* mesh_* keys; given targets or peers add mesh to collectors */
};

/* Fills cfg with the built-in defaults. */
void config_defaults(struct config *cfg);

/*
 * Reads an INI file over cfg. Returns 0; -ENOENT if the file is absent; or
 * -errno with a message in err: "unable to open 'FILE': ..." if it cannot
 * be read or is not a regular file (agent/lib/file_read.h), else -EINVAL with
 * "FILE:LINE: ..." naming the key and the expected form. cfg may be partly
 * updated on error: parse into a copy.
 */
int config_load(struct config *cfg, const char *path, char *err, size_t err_len);

/*
 * Sets one key from a string, as the file and the flags do. Returns 0, or
 * -EINVAL (unknown key or bad value) with the expected form in err.
 */
int config_set(struct config *cfg, const char *key, const char *value, char *err, size_t err_len);

/* Checks what no single key can (each key's form is checked by config_set).
 * Returns 0 or -EINVAL with a message in err. */
int config_validate(const struct config *cfg, char *err, size_t err_len);

/* Splits "HOST:PORT", "[V6]:PORT" or ":PORT" (all addresses); port 0 asks
 * for any free port. Returns 0 or -EINVAL. host is "" for all addresses. */
int config_parse_listen(const char *text, char *host, size_t host_len, unsigned *ret_port);

/* Writes the effective settings as an INI file to out (for --help and docs). */
void config_print(const struct config *cfg, FILE *out);

/*
 * Where a config comes from: a file (explicit, or the default path which may
 * be absent) and flags that override it. Kept so SIGHUP can rebuild the same
 * way.
 */
#define CONFIG_MAX_FLAGS 32
struct config_source {
	const char *path; /* NULL: CONFIG_DEFAULT_PATH, absence is fine */
	int path_explicit; /* --config was given: absence is an error */
	struct {
		const char *key;
		const char *value;
	} flags[CONFIG_MAX_FLAGS];
	unsigned nflags;
};

/*
 * Builds cfg from defaults, the file and the flags, then validates it. With a
 * sysfs_root other than /sys (a fixture tree) and collectors not given, it
 * leaves CONFIG_HOST_COLLECTORS off and sets host_collectors_off: they would
 * attach to and capture on this host's interfaces, not the tree's. Then, with
 * mesh_targets or mesh_peers and collectors not given, it adds mesh; given
 * without mesh, it sets mesh_unlisted. Returns 0
 * or -errno with a message in err; cfg is written only on success.
 */
int config_build(const struct config_source *src, struct config *cfg, char *err, size_t err_len);

/* True if cfg's collectors list names the collector name. */
int config_names_collector(const struct config *cfg, const char *name);
#endif
