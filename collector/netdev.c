/* SPDX-License-Identifier: MIT */
/*
 * netdev: per-interface traffic counters from sysfs class/net/<if>/statistics,
 * with link state, speed and MTU, in the manner of node_exporter's netclass
 * collector. It reads only files, so every case is testable on a fixture tree.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "collector.h"
#include "sysfs.h"

#define NETDEV_DIR "class/net"

/* Mb/s (the unit of the speed file) to bytes per second: 10^6 / 8. */
#define NETDEV_MBPS_TO_BYTES 125000.0

/*
 * The statistics files show the kernel's struct rtnl_link_stats64 (u64), so
 * the counters wrap at 64 bits and a decrease is a reset (a driver reload).
 * Help texts after Documentation/ABI/testing/sysfs-class-net-statistics.
 */
static const struct {
	const char *file;
	const char *name;
	const char *help;
} netdev_counters[] = {
	{ "statistics/rx_bytes", "fabmon_netdev_receive_bytes_total",
	  "Bytes received by the interface." },
	{ "statistics/tx_bytes", "fabmon_netdev_transmit_bytes_total",
	  "Bytes transmitted by the interface." },
	{ "statistics/rx_packets", "fabmon_netdev_receive_packets_total",
	  "Packets received by the interface." },
	{ "statistics/tx_packets", "fabmon_netdev_transmit_packets_total",
	  "Packets transmitted by the interface." },
	{ "statistics/rx_errors", "fabmon_netdev_receive_errors_total",
	  "Bad packets received by the interface." },
	{ "statistics/tx_errors", "fabmon_netdev_transmit_errors_total",
	  "Packets the interface failed to transmit." },
	{ "statistics/rx_dropped", "fabmon_netdev_receive_drops_total",
	  "Packets received but dropped before the upper layers (no buffer, unknown protocol)." },
	{ "statistics/tx_dropped", "fabmon_netdev_transmit_drops_total",
	  "Packets dropped on their way to transmission (lack of resources)." },
};

static const struct metric_desc netdev_up_desc = {
	.name = "fabmon_netdev_up",
	.help = "1 if the operational state is up (RFC 2863), else 0 (loopback shows unknown: 0).",
	.type = METRIC_GAUGE,
};
static const struct metric_desc netdev_info_desc = {
	.name = "fabmon_netdev_info",
	.help = "Constant 1, labelled with the interface's operational state and hardware address.",
	.type = METRIC_GAUGE,
};
static const struct metric_desc netdev_speed_desc = {
	.name = "fabmon_netdev_speed_bytes",
	.help = "Link speed of the interface, in bytes per second.",
	.type = METRIC_GAUGE,
};
static const struct metric_desc netdev_mtu_desc = {
	.name = "fabmon_netdev_mtu_bytes",
	.help = "Maximum transmission unit of the interface, in bytes.",
	.type = METRIC_GAUGE,
};

/* What netdev_sample_one() needs, passed through sysfs_list(). */
struct netdev_walk {
	const struct collector_env *env;
	struct sample_sink *out;
};

/* Reads class/net/<ifname>/<attr> under root; returns as sysfs_read(). */
static int netdev_read(const char *root, const char *ifname, const char *attr, char *buf,
		       size_t len)
{
	char path[PATH_MAX];
	int r = snprintf(path, sizeof(path), NETDEV_DIR "/%s/%s", ifname, attr);

	if (r < 0 || (size_t)r >= sizeof(path))
		return -ENAMETOOLONG;
	return sysfs_read(root, path, buf, len);
}

/* Reads a decimal attribute; returns 0 and sets *ret, or -errno. */
static int netdev_read_u64(const char *root, const char *ifname, const char *attr, uint64_t *ret)
{
	char buf[64];
	int r = netdev_read(root, ifname, attr, buf, sizeof(buf));

	return r < 0 ? r : sysfs_parse_u64(buf, ret);
}

/*
 * Emits the speed gauge. A link without a speed is normal, not a skipped
 * value: the kernel fails the read with EINVAL while the link is down or
 * virtual, or shows SPEED_UNKNOWN as -1 (include/uapi/linux/ethtool.h).
 */
static void netdev_sample_speed(const struct collector_env *env, struct sample_sink *out,
				const struct label *labels, const char *ifname)
{
	uint64_t mbps;
	char buf[64];

	if (netdev_read(env->sysfs_root, ifname, "speed", buf, sizeof(buf)) < 0 ||
	    strcmp(buf, "-1") == 0)
		return;
	if (sysfs_parse_u64(buf, &mbps) < 0)
		sample_skip(out);
	else
		(void)sample_gauge(out, &netdev_speed_desc, labels, 1,
				   (double)mbps * NETDEV_MBPS_TO_BYTES);
}

/*
 * Samples one interface. Returns 0 always: a value that cannot be read is
 * counted as skipped and the walk goes on to the next interface. Sample
 * errors (-ENOSPC when the registry is full) are ignored here because the
 * registry counts the dropped samples itself.
 */
static int netdev_sample_one(const char *ifname, void *arg)
{
	const struct netdev_walk *walk = arg;
	const struct collector_env *env = walk->env;
	struct sample_sink *out = walk->out;
	const char *root = env->sysfs_root;
	char operstate[32], address[64];
	struct label labels[3];
	uint64_t v;
	int r;

	if (!collector_want_interface(env, ifname))
		return 0;
	/* An interface removed since the directory was listed is gone, not broken. */
	r = netdev_read(root, ifname, "operstate", operstate, sizeof(operstate));
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		sample_skip(out);
		strcpy(operstate, "unknown");
	}
	/* Links without a hardware address (tun, ipip) show an empty file. */
	if (netdev_read(root, ifname, "address", address, sizeof(address)) < 0)
		address[0] = '\0';

	labels[0] = (struct label){ "interface", ifname };
	labels[1] = (struct label){ "operstate", operstate };
	labels[2] = (struct label){ "address", address };
	(void)sample_gauge(out, &netdev_info_desc, labels, 3, 1);
	(void)sample_gauge(out, &netdev_up_desc, labels, 1, strcmp(operstate, "up") == 0);

	for (size_t i = 0; i < sizeof(netdev_counters) / sizeof(netdev_counters[0]); i++) {
		const struct metric_desc desc = {
			.name = netdev_counters[i].name,
			.help = netdev_counters[i].help,
			.type = METRIC_COUNTER,
		};

		if (netdev_read_u64(root, ifname, netdev_counters[i].file, &v) < 0)
			sample_skip(out);
		else
			(void)sample_counter(out, &desc, labels, 1, v);
	}

	if (netdev_read_u64(root, ifname, "mtu", &v) < 0)
		sample_skip(out);
	else
		(void)sample_gauge(out, &netdev_mtu_desc, labels, 1, (double)v);
	netdev_sample_speed(env, out, labels, ifname);
	return 0;
}

static int netdev_count(const char *name, void *arg)
{
	(void)name;
	(*(unsigned *)arg)++;
	return 0;
}

static int netdev_init(const struct collector_env *env, void **ret_state, char *why, size_t why_len)
{
	unsigned n = 0;
	int r = sysfs_list(env->sysfs_root, NETDEV_DIR, netdev_count, &n);

	if (r == 0 && n == 0)
		r = -ENOENT;
	if (r < 0) {
		(void)snprintf(why, why_len, "no network interfaces under %s/" NETDEV_DIR,
			       env->sysfs_root);
		return r;
	}
	/* Everything is read afresh each tick: there is no state to keep. */
	*ret_state = NULL;
	return 0;
}

static int netdev_sample(void *state, const struct collector_env *env, struct sample_sink *out)
{
	struct netdev_walk walk = { env, out };

	(void)state;
	return sysfs_list(env->sysfs_root, NETDEV_DIR, netdev_sample_one, &walk);
}

static void netdev_fini(void *state)
{
	(void)state;
}

const struct collector_ops netdev_collector = {
	.name = "netdev",
	.init = netdev_init,
	.sample = netdev_sample,
	.fini = netdev_fini,
};
