/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/config.h"
#include "agent/lib/file_read.h"
#include "agent/lib/regex_bounded.h"
#include "agent/lib/timefmt.h"
#include "collector/collector.h"
#include "collector/mesh/mesh_allow.h"
#include "collector/topology_file.h"

enum key_kind { KEY_STRING, KEY_DURATION, KEY_UINT };

static int check_listen(const char *value, char *why, size_t why_len);
static int check_collectors(const char *value, char *why, size_t why_len);
static int check_topology(const char *value, char *why, size_t why_len);
static int check_topology_name(const char *value, char *why, size_t why_len);
static int check_regex(const char *value, char *why, size_t why_len);
static int check_user(const char *value, char *why, size_t why_len);
static int check_nonempty(const char *value, char *why, size_t why_len);
static int check_power_of_two(const char *value, char *why, size_t why_len);
static int check_cidrs(const char *value, char *why, size_t why_len);
static int check_addrs(const char *value, char *why, size_t why_len);

/* The one table of settings: file key, kind, where it lives, the form. */
struct key_def {
	const char *key;
	enum key_kind kind;
	size_t offset;
	size_t size; /* strings: buffer size */
	const char *form;
	int64_t min, max; /* durations in ms, uints */
	/* strings and uints: 0 if the value is well formed, else -errno and,
	 * where there is more to say than the form, the reason in why */
	int (*check)(const char *value, char *why, size_t why_len);
};

#define STR(k, field, form, chk)                                                                   \
	{                                                                                          \
		k, KEY_STRING, offsetof(struct config, field),                                     \
			sizeof(((struct config *)0)->field), form, 0, 0, chk                       \
	}
#define DUR(k, field, lo, hi, form)                                                                \
	{                                                                                          \
		k, KEY_DURATION, offsetof(struct config, field), 0, form, lo, hi, NULL             \
	}
#define UINT(k, field, lo, hi, form) UINT_CHECKED(k, field, lo, hi, form, NULL)
#define UINT_CHECKED(k, field, lo, hi, form, chk)                                                  \
	{                                                                                          \
		k, KEY_UINT, offsetof(struct config, field), 0, form, lo, hi, chk                  \
	}

static const struct key_def config_keys[] = {
	STR("listen", listen, "ADDR:PORT, e.g. 127.0.0.1:9478, [::1]:9478 or :9478", check_listen),
	STR("db", db_path, "a file path", check_nonempty),
	DUR("interval", interval_ms, 100, 3600000, "a duration from 100ms to 1h, e.g. 1s, 500ms"),
	STR("sysfs_root", sysfs_root, "a directory laid out like /sys", check_nonempty),
	STR("procfs_root", procfs_root, "a directory laid out like /proc", check_nonempty),
	STR("collectors", collectors,
	    "a comma-separated list of netdev, ethtool, rdma, qdisc, pressure, bpf, sockets, pcap, topology, "
	    "mesh",
	    check_collectors),
	STR("interfaces", interfaces,
	    "a POSIX extended regex matched against whole interface names", check_regex),
	STR("ethtool_include", ethtool_include, "a POSIX extended regex over ethtool stat names",
	    check_regex),
	STR("pcap_interfaces", pcap_interfaces,
	    "a POSIX extended regex matched against whole interface names", check_regex),
	/* IEEE 802.3 has 1.6 Tb/s in the works: room above the fastest now */
	UINT("pcap_link_speed", pcap_link_mbps, 0, 3200000,
	     "a speed in Mb/s from 0 (each capture interface's own) to 3200000"),
	STR("lldp_interfaces", lldp_interfaces,
	    "a POSIX extended regex matched against whole interface names", check_regex),
	UINT("max_series", max_series, 16, 10000000, "an integer from 16 to 10000000"),
	UINT("db_cap_mb", db_cap_mb, 0, 16777216, "a size in MiB from 0 (no cap) to 16777216"),
	DUR("event_retention", event_retention_ms, 3600000, 3660LL * 86400000,
	    "a duration from 1h to 3660d, e.g. 90d"),
	DUR("retention", retention_ms, 60000, 366LL * 86400000,
	    "a duration from 1m to 366d, e.g. 48h"),
	DUR("rollup_retention", rollup_retention_ms, 3600000, 3660LL * 86400000,
	    "a duration from 1h to 3660d, e.g. 30d"),
	DUR("series_expiry", series_expiry_ms, 0, 86400000, "a duration up to 1d, e.g. 5m"),
	DUR("collector_retry", collector_retry_ms, 1000, 86400000,
	    "a duration from 1s to 1d, e.g. 30s"),
	DUR("sockets_interval", sockets_interval_ms, 100, 3600000,
	    "a duration from 100ms to 1h, e.g. 500ms"),
	UINT("event_open_ticks", event_open_ticks, 1, 1000, "an integer from 1 to 1000"),
	UINT("event_close_ticks", event_close_ticks, 1, 1000, "an integer from 1 to 1000"),
	DUR("stall_after", stall_after_ms, 100, 3600000, "a duration from 100ms to 1h, e.g. 500ms"),
	DUR("host_stall_after", host_stall_after_ms, 100, 3600000,
	    "a duration from 100ms to 1h, e.g. 1500ms"),
	UINT("pfc_paused_percent", pfc_paused_percent, 1, 100, "a percentage from 1 to 100"),
	UINT("hotspot_util_percent", hotspot_util_percent, 1, 100, "a percentage from 1 to 100"),
	UINT("lossy_link_ppm", lossy_link_ppm, 1, 1000000, "parts per million from 1 to 1000000"),
	DUR("lossy_link_for", lossy_link_for_ms, 200, 3600000,
	    "a duration from 200ms to 1h, e.g. 2s"),
	UINT("incast_percent", incast_percent, 1, 100, "a percentage from 1 to 100"),
	DUR("incast_for", incast_for_ms, 0, 3600000, "a duration from 0s to 1h, e.g. 1500ms"),
	UINT("straggler_percent", straggler_percent, 1, 100, "a percentage from 1 to 100"),
	UINT("handoff_slow_percent", handoff_slow_percent, 110, 100000,
	     "a percentage from 110 to 100000"),
	DUR("handoff_slow_extra", handoff_slow_extra_ms, 0, 3600000,
	    "a duration from 0s to 1h, e.g. 50ms"),
	DUR("path_window", path_window_ms, 100, 3600000, "a duration from 100ms to 1h, e.g. 10s"),
	UINT("http_connection_limit", http_connection_limit, 1, 10000,
	     "an integer from 1 to 10000"),
	UINT("http_per_ip_limit", http_per_ip_limit, 1, 10000, "an integer from 1 to 10000"),
	UINT("http_timeout", http_timeout_s, 1, 3600, "a number of seconds from 1 to 3600"),
	STR("web_config_file", web_config_file,
	    "a YAML file with tls_server_config and basic_auth_users", NULL),
	UINT("api_max_points", api_max_points, 100, 10000000, "an integer from 100 to 10000000"),
	DUR("api_timeout", api_timeout_ms, 100, 3600000, "a duration from 100ms to 1h, e.g. 5s"),
	UINT("api_concurrency", api_concurrency, 1, 64, "an integer from 1 to 64"),
	UINT("bpf_max_flows", bpf_max_flows, 64, 4194304, "an integer from 64 to 4194304"),
	UINT("bpf_top_peers", bpf_top_peers, 1, 1000, "an integer from 1 to 1000"),
	STR("bpf_netns", bpf_netns,
	    "a comma-separated list of network namespace files, e.g. /run/netns/job1", NULL),
	DUR("bpf_flow_idle", bpf_flow_idle_ms, 1000, 86400000, "a duration from 1s to 1d, e.g. 2m"),
	/* IBTA vol 1: path MTUs are 256 to 4096 bytes, powers of two */
	UINT_CHECKED("roce_pmtu", roce_pmtu, 256, 4096, "a power of two from 256 to 4096",
		     check_power_of_two),
	STR("user", user, "a user name or uid (letters, digits, '.', '_', '-')", check_user),
	STR("topology_file", topology_file,
	    "a topology file: lines 'host NAME [rack R] [rail R] [pod P] [leaf SWITCH]' and "
	    "'link A B' (docs/cluster.md)",
	    check_topology),
	STR("topology_host", topology_host, "1 to 63 of [A-Za-z0-9._:/-]", check_topology_name),
	STR("mesh_targets", mesh.targets, "a Prometheus file_sd JSON file of targets", NULL),
	STR("mesh_peers", mesh.peers, "a comma-separated list of IPv4 addresses", check_addrs),
	STR("mesh_listen", mesh.listen, "ADDR:PORT, e.g. :9479 or 198.18.0.1:9479", check_listen),
	DUR("mesh_interval", mesh.interval_ms, 100, 3600000,
	    "a duration from 100ms to 1h, e.g. 1s"),
	UINT("mesh_flows", mesh.flows, 1, MESH_FLOWS_MAX, "an integer from 1 to 64"),
	UINT("mesh_dscp", mesh.dscp, 0, 63, "a DSCP from 0 to 63"),
	UINT("mesh_pps", mesh.pps, 16, 1000000, "probes a second from 16 to 1000000"),
	UINT("mesh_source_pps", mesh.source_pps, 1, 1000000, "probes a second from 1 to 1000000"),
	STR("mesh_allow", mesh.allow, "a comma-separated list of IPv4 CIDRs, e.g. 198.18.0.0/15",
	    check_cidrs),
	DUR("mesh_path_interval", mesh.path_interval_ms, 10000, 86400000,
	    "a duration from 10s to 1d, e.g. 5m"),
	UINT("mesh_max_series", mesh.max_series, 16, 10000000, "an integer from 16 to 10000000"),
};

void config_defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->config_path, sizeof(cfg->config_path), "%s", CONFIG_DEFAULT_PATH);
	snprintf(cfg->listen, sizeof(cfg->listen), "%s", CONFIG_DEFAULT_LISTEN);
	snprintf(cfg->db_path, sizeof(cfg->db_path), "%s", CONFIG_DEFAULT_DB);
	cfg->interval_ms = 1000;
	snprintf(cfg->sysfs_root, sizeof(cfg->sysfs_root), "/sys");
	snprintf(cfg->procfs_root, sizeof(cfg->procfs_root), "/proc");
	snprintf(cfg->collectors, sizeof(cfg->collectors), "%s",
		 CONFIG_SYSFS_COLLECTORS "," CONFIG_HOST_COLLECTORS "," CONFIG_FILE_COLLECTORS);
	cfg->max_series = 100000;
	cfg->retention_ms = 48LL * 3600 * 1000;
	cfg->event_retention_ms = 90LL * 86400 * 1000;
	cfg->rollup_retention_ms = 30LL * 86400 * 1000;
	/* a node's disk is not the history's: 8 GiB holds the default 48 h of
	 * about 1800 series at 1 s (27 bytes a sample: make bench), and keeps
	 * 10k series from filling the disk */
	cfg->db_cap_mb = 8192;
	cfg->series_expiry_ms = 5 * 60 * 1000;
	cfg->collector_retry_ms = 30 * 1000;
	/* a dump walks the kernel's whole TCP hash, every namespace's (262144
	 * buckets and 4.6 ms on a 24 GB host): twice a second bounds it, and
	 * host_stall_after (1.5 s) is still seen within 2 s */
	cfg->sockets_interval_ms = 500;
	cfg->event_open_ticks = 2;
	cfg->event_close_ticks = 3;
	/* a missed ACK costs at least one RTO (200 ms minimum on Linux): half a
	 * second without progress is a rank that has stopped, not a slow one */
	cfg->stall_after_ms = 500;
	/* a busy host leaves a reader unscheduled for hundreds of ms (up to
	 * about 1 s on two saturated cores): a pause half as long again is an
	 * application that stopped, and still within a 2 s detection goal */
	cfg->host_stall_after_ms = 1500;
	/* paused half the time is a storm, not a burst: PFC's own watchdogs
	 * (mlx5 pause-storm prevention) act on sustained pause like this */
	cfg->pfc_paused_percent = 50;
	/* a link past 80 % of its capacity has little headroom left for a
	 * collective's bursts; queueing there is the link's, not the sender's */
	cfg->hotspot_util_percent = 80;
	/* a healthy link loses about one packet in 10^8 to bit errors (a BER
	 * of 1e-12); ten in a million is a cable or optic going bad, and still
	 * under what a dying one loses (1e-4 and up) */
	cfg->lossy_link_ppm = 10;
	/* long enough that one burst (a link retraining) is not a lossy link,
	 * short enough to name one within the 3 s the issue asks */
	cfg->lossy_link_for_ms = 2000;
	/* a receiver that many senders share gets 1/N of its port each, and a
	 * collective waits for it: a quarter of what the other peers' paths
	 * deliver is a hot receiver, not noise (medians of three samples in the
	 * lab stay within 3x of each other on a clean fabric) */
	cfg->incast_percent = 25;
	cfg->incast_for_ms = 1500;
	/* a ring runs at its slowest link: under 60 % of what the other links
	 * give while busy, tick after tick (the lab's clean links' one-tick
	 * samples stay over 0.6 of the others' but for single ticks, and a
	 * half-rate link sits at 0.45-0.55) is one link holding every rank
	 * back */
	cfg->straggler_percent = 60;
	/* an all-to-all iteration through a hot receiver can take seconds, in
	 * which the other peers deliver once: they stay comparable this long */
	cfg->path_window_ms = 10000;
	/* a hand-off that takes three times as long as it did keeps a decode
	 * host waiting long past its jitter (the lab's spread is ~10 %) */
	cfg->handoff_slow_percent = 300;
	cfg->handoff_slow_extra_ms = 50;
	/* an idle connection costs ~5 KiB (t_http_abuse.sh): hundreds of
	 * slow clients, at most http_per_ip_limit from each address, leave
	 * room for the scrapers */
	cfg->http_connection_limit = 1024;
	cfg->http_per_ip_limit = 16;
	cfg->http_timeout_s = 10;
	/* Prometheus's own query_range bound: a graph has no use for more */
	cfg->api_max_points = 11000;
	/* well within the 30 s Grafana waits for a data source, and ~20 times
	 * what a query_range of the default 11000 values over 1000 series
	 * and an hour takes */
	cfg->api_timeout_ms = 5000;
	/* a dashboard's panels load at once: 4 run, 4 wait, on threads below
	 * the tick's and the scrapes' priority */
	cfg->api_concurrency = 4;
	cfg->bpf_max_flows = 16384;
	cfg->bpf_top_peers = 32;
	cfg->bpf_flow_idle_ms = 2 * 60 * 1000;
	/* IBTA's largest: a READ counted by a PMTU above the path's real one
	 * takes too few PSNs, which shows as a gap, never hides one */
	cfg->roce_pmtu = 4096;
	snprintf(cfg->mesh.listen, sizeof(cfg->mesh.listen), "%s", MESH_DEFAULT_LISTEN);
	cfg->mesh.interval_ms = 1000;
	/* 8 source ports leave one of 2 spines unprobed with chance 1/128,
	 * of 4 spines about 1/10 (Pingmesh and R-Pingmesh sweep as few) */
	cfg->mesh.flows = 8;
	/* 1000 peers at 8 flows a second, and their path traces */
	cfg->mesh.pps = 10000;
	/* a peer's 8 flows a second, and a trace of 8 TTLs on several flows
	 * at once when they start losing */
	cfg->mesh.source_pps = 100;
	cfg->mesh.path_interval_ms = 5 * 60 * 1000;
	/* 1000 peers' per-peer series (22 each) and a share of flows and hops */
	cfg->mesh.max_series = 50000;
}

int config_parse_listen(const char *text, char *host, size_t host_len, unsigned *ret_port)
{
	const char *colon;
	unsigned long port;
	size_t hlen;
	char *end;

	if (text[0] == '[') {
		const char *close = strchr(text, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		hlen = (size_t)(close - text - 1);
		text++;
		colon = close + 1;
	} else {
		colon = strrchr(text, ':');
		if (!colon || memchr(text, ':', (size_t)(colon - text)))
			return -EINVAL;
		hlen = (size_t)(colon - text);
	}
	if (hlen >= host_len || !isdigit((unsigned char)colon[1]))
		return -EINVAL;
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || *end || port > 65535)
		return -EINVAL;
	memcpy(host, text, hlen);
	host[hlen] = '\0';
	*ret_port = (unsigned)port;
	return 0;
}

#define CONFIG_NKEYS (sizeof(config_keys) / sizeof(config_keys[0]))

/* Keys an earlier fabmon took, and what stands in their place: still
 * refused (a bound that no longer means what its file says), but by name. */
static const struct {
	const char *key, *instead;
} config_removed[] = {
	{ "stall_read_after",
	  "a reader that stops is a host_stall (cause host) after 'host_stall_after'" },
};

/* The key's entry in config_keys, or NULL. */
static const struct key_def *key_find(const char *key)
{
	for (size_t i = 0; i < CONFIG_NKEYS; i++)
		if (strcmp(config_keys[i].key, key) == 0)
			return &config_keys[i];
	return NULL;
}

int config_set(struct config *cfg, const char *key, const char *value, char *err, size_t err_len)
{
	const struct key_def *k = key_find(key);
	char why[128] = "";
	char *field;

	if (!k) {
		snprintf(err, err_len, "unknown key '%s'", key);
		for (size_t i = 0; i < sizeof(config_removed) / sizeof(config_removed[0]); i++)
			if (strcmp(config_removed[i].key, key) == 0)
				snprintf(err, err_len, "key '%s' was removed: %s", key,
					 config_removed[i].instead);
		return -EINVAL;
	}
	field = (char *)cfg + k->offset;
	switch (k->kind) {
	case KEY_STRING:
		if (strlen(value) >= k->size || (k->check && k->check(value, why, sizeof(why)) < 0))
			goto bad;
		memcpy(field, value, strlen(value) + 1);
		if (k->offset == offsetof(struct config, collectors))
			cfg->collectors_given = 1;
		return 0;
	case KEY_DURATION: {
		int64_t ms;

		if (duration_parse(value, &ms) < 0 || ms < k->min || ms > k->max)
			goto bad;
		*(int64_t *)(void *)field = ms;
		return 0;
	}
	case KEY_UINT: {
		unsigned long long v;
		char *end;

		errno = 0;
		v = strtoull(value, &end, 10);
		if (!isdigit((unsigned char)*value) || *end || errno || (int64_t)v < k->min ||
		    (int64_t)v > k->max || (k->check && k->check(value, why, sizeof(why)) < 0))
			goto bad;
		*(unsigned *)(void *)field = (unsigned)v;
		return 0;
	}
	}
bad:
	/* a long value is cut, so that the key and the form still show */
	snprintf(err, err_len, "bad value '%.64s%s' for '%s': expected %s%s%s%s", value,
		 strlen(value) > 64 ? "..." : "", key, k->form, why[0] ? " (" : "", why,
		 why[0] ? ")" : "");
	return -EINVAL;
}

struct load_ctx {
	struct config *cfg;
	const char *path;
	const char *next; /* the text not given to inih yet */
	int line; /* the line inih parses */
	int first_line[CONFIG_NKEYS]; /* where each key was set; 0: not yet */
	char msg[512];
};

/* inih's fgets(): one line a call (config_text_check() bounded them), so
 * that ctx->line is the line of the key the handler is called for. */
static char *load_reader(char *str, int num, void *stream)
{
	struct load_ctx *ctx = stream;
	size_t n = strcspn(ctx->next, "\n");

	if (!*ctx->next)
		return NULL;
	n += ctx->next[n] == '\n';
	if (n > (size_t)num - 1)
		n = (size_t)num - 1;
	memcpy(str, ctx->next, n);
	str[n] = '\0';
	ctx->next += n;
	ctx->line++;
	return str;
}

/* inih calls this per "key = value"; a 0 return makes ini_parse() return the
 * line number of the first error. */
static int load_handler(void *user, const char *section, const char *name, const char *value)
{
	struct load_ctx *ctx = user;
	const struct key_def *k = key_find(name);
	int *first = k ? &ctx->first_line[k - config_keys] : NULL;

	if (ctx->msg[0])
		return 1; /* keep the first error */
	if (strcmp(section, "agent") != 0) {
		snprintf(ctx->msg, sizeof(ctx->msg), "unknown section [%s]: expected [agent]",
			 section);
		return 0;
	}
	/* the last would win unseen: one of the two is a mistake */
	if (first && *first) {
		snprintf(ctx->msg, sizeof(ctx->msg),
			 "duplicate key '%s' (first at %.200s:%d): expected each key once", name,
			 ctx->path, *first);
		return 0;
	}
	if (config_set(ctx->cfg, name, value, ctx->msg, sizeof(ctx->msg)) < 0)
		return 0;
	if (first)
		*first = ctx->line;
	return 1;
}

/*
 * What inih cannot tell: a NUL byte (binary garbage would pass as empty
 * lines) and a line longer than its buffer (INI_MAX_LINE, 200 in Debian's
 * build: the rest would be parsed as a line of its own). Returns the
 * number of the first such line and what is wrong with it, or 0.
 */
static int config_text_check(const char *text, size_t len, const char **ret_why)
{
	int line = 1;

	for (size_t i = 0, start = 0; i < len; i++) {
		if (text[i] == '\0') {
			*ret_why = "a NUL byte: expected a text file";
			return line;
		}
		if (text[i] != '\n' && i - start >= INI_MAX_LINE - 2) {
			*ret_why = "line too long: expected at most 198 characters a line";
			return line;
		}
		if (text[i] == '\n') {
			line++;
			start = i + 1;
		}
	}
	return 0;
}

int config_load(struct config *cfg, const char *path, char *err, size_t err_len)
{
	struct load_ctx ctx = { .cfg = cfg, .path = path };
	const char *why = NULL;
	char *text = NULL;
	size_t len;
	int line, r = file_read(path, &text, &len);

	if (r < 0) {
		snprintf(err, err_len, "unable to open '%s': %s", path, file_read_strerror(r));
		return r;
	}
	line = config_text_check(text, len, &why);
	if (line == 0) {
		ctx.next = text;
		line = ini_parse_stream(load_reader, &ctx, load_handler, &ctx);
	}
	free(text);
	if (line == 0)
		return 0;
	if (line < 0)
		snprintf(err, err_len, "%s: out of memory", path);
	else if (why)
		snprintf(err, err_len, "%s:%d: %s", path, line, why);
	else if (ctx.msg[0])
		snprintf(err, err_len, "%s:%d: %s", path, line, ctx.msg);
	else
		snprintf(err, err_len, "%s:%d: syntax error: expected 'key = value' or '[agent]'",
			 path, line);
	return -EINVAL;
}

static int check_listen(const char *value, char *why, size_t why_len)
{
	char host[256];
	unsigned port;

	(void)why;
	(void)why_len;
	return config_parse_listen(value, host, sizeof(host), &port);
}

static int check_collectors(const char *value, char *why, size_t why_len)
{
	char names[256], *save = NULL;

	if (snprintf(names, sizeof(names), "%s", value) >= (int)sizeof(names))
		return -EINVAL;
	for (char *n = strtok_r(names, ", ", &save); n; n = strtok_r(NULL, ", ", &save))
		if (!collector_find(n)) {
			snprintf(why, why_len, "no collector '%.32s'", n);
			return -EINVAL;
		}
	return 0;
}

/* The file is read and checked when the configuration is: a mistake in it
 * is a configuration error with its line, not a collector quietly down. */
static int check_topology(const char *value, char *why, size_t why_len)
{
	struct topology *t = NULL;
	char *text = NULL;
	size_t len;
	int r;

	if (!value[0])
		return 0;
	r = file_read(value, &text, &len);
	if (r < 0) {
		snprintf(why, why_len, "unable to read '%s': %s", value, file_read_strerror(r));
		return -EINVAL;
	}
	r = topology_parse(text, value, &t, why, why_len);
	free(text);
	topology_free(t);
	return r < 0 ? -EINVAL : 0;
}

static int check_topology_name(const char *value, char *why, size_t why_len)
{
	(void)why;
	(void)why_len;
	return !value[0] || topology_name_ok(value) ? 0 : -EINVAL;
}

/* Called on a number already parsed and in range. */
static int check_power_of_two(const char *value, char *why, size_t why_len)
{
	unsigned long long v = strtoull(value, NULL, 10);

	(void)why;
	(void)why_len;
	return v && !(v & (v - 1)) ? 0 : -EINVAL;
}

static int check_nonempty(const char *value, char *why, size_t why_len)
{
	(void)why;
	(void)why_len;
	return value[0] ? 0 : -EINVAL;
}

/* As the collectors will compile it: anchored, and bounded in size. */
static int check_regex(const char *value, char *why, size_t why_len)
{
	regex_t rx;
	int r = regex_compile_bounded(&rx, value, 1);

	if (r == -E2BIG)
		snprintf(why, why_len, "its repetitions expand to more than %d atoms",
			 REGEX_MAX_ATOMS);
	else if (r == -EBADMSG)
		snprintf(why, why_len, "it has a ')' that closes no '(' or a '[' with no ']'");
	else if (r == -ELOOP)
		snprintf(why, why_len,
			 "it repeats what can match nothing, as x** or (x?)* do, which regcomp "
			 "takes exponential time over: write x*");
	if (r < 0)
		return r;
	regfree(&rx);
	return 0;
}

static int check_cidrs(const char *value, char *why, size_t why_len)
{
	struct mesh_cidr c[MESH_CIDRS_MAX];
	int r = mesh_allow_parse(value, c, MESH_CIDRS_MAX, why, why_len);

	return r < 0 ? r : 0;
}

/* Addresses, not networks: the probes go to each. */
static int check_addrs(const char *value, char *why, size_t why_len)
{
	return strchr(value, '/') ? -EINVAL : check_cidrs(value, why, why_len);
}

/* A user name as useradd(8) takes it, or a uid: no path or shell characters. */
static int check_user(const char *value, char *why, size_t why_len)
{
	(void)why;
	(void)why_len;
	if (value[0] == '-')
		return -EINVAL;
	for (const char *p = value; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("._-", *p))
			return -EINVAL;
	return 0;
}

int config_validate(const struct config *cfg, char *err, size_t err_len)
{
	if (!cfg->db_path[0]) {
		snprintf(err, err_len, "'db' is empty: expected a file path");
		return -EINVAL;
	}
	if (!cfg->sysfs_root[0]) {
		snprintf(err, err_len, "'sysfs_root' is empty: expected a directory");
		return -EINVAL;
	}
	return 0;
}

void config_print(const struct config *cfg, FILE *out)
{
	fprintf(out, "[agent]\n");
	for (size_t i = 0; i < CONFIG_NKEYS; i++) {
		const struct key_def *k = &config_keys[i];
		const char *field = (const char *)cfg + k->offset;

		if (k->kind == KEY_STRING)
			fprintf(out, "%s = %s\n", k->key, field);
		else if (k->kind == KEY_DURATION)
			fprintf(out, "%s = %lldms\n", k->key,
				(long long)*(const int64_t *)(const void *)field);
		else
			fprintf(out, "%s = %u\n", k->key, *(const unsigned *)(const void *)field);
	}
}

int config_names_collector(const struct config *cfg, const char *name)
{
	char names[sizeof(cfg->collectors)], *save = NULL;

	snprintf(names, sizeof(names), "%s", cfg->collectors);
	for (char *n = strtok_r(names, ", ", &save); n; n = strtok_r(NULL, ", ", &save))
		if (strcmp(n, name) == 0)
			return 1;
	return 0;
}

int config_build(const struct config_source *src, struct config *ret_cfg, char *err, size_t err_len)
{
	const char *path = src->path ? src->path : CONFIG_DEFAULT_PATH;
	struct config cfg;
	int r;

	config_defaults(&cfg);
	snprintf(cfg.config_path, sizeof(cfg.config_path), "%s", path);
	r = config_load(&cfg, path, err, err_len);
	if (r == -ENOENT && !src->path_explicit)
		r = 0;
	for (unsigned i = 0; r == 0 && i < src->nflags; i++) {
		char msg[400];

		r = config_set(&cfg, src->flags[i].key, src->flags[i].value, msg, sizeof(msg));
		if (r < 0) {
			/* name the flag as it was typed: sysfs_root is --sysfs-root */
			char flag[64];

			snprintf(flag, sizeof(flag), "%s", src->flags[i].key);
			for (char *p = flag; *p; p++)
				if (*p == '_')
					*p = '-';
			snprintf(err, err_len, "--%s: %s", flag, msg);
		}
	}
	if (r == 0 && !cfg.collectors_given && strcmp(cfg.sysfs_root, "/sys") != 0) {
		snprintf(cfg.collectors, sizeof(cfg.collectors), "%s",
			 CONFIG_SYSFS_COLLECTORS "," CONFIG_FILE_COLLECTORS);
		cfg.host_collectors_off = 1;
	}
	/* probing is off until targets are given; given, it is on, unless a
	 * list of collectors leaves it out (said at start) */
	if (r == 0 && (cfg.mesh.targets[0] || cfg.mesh.peers[0]) &&
	    !config_names_collector(&cfg, "mesh")) {
		if (cfg.collectors_given)
			cfg.mesh_unlisted = 1;
		else
			snprintf(cfg.collectors + strlen(cfg.collectors),
				 sizeof(cfg.collectors) - strlen(cfg.collectors), ",mesh");
	}
	if (r == 0)
		r = config_validate(&cfg, err, err_len);
	if (r == 0)
		*ret_cfg = cfg;
	return r;
}
