/* SPDX-License-Identifier: MIT */
/*
 * netdev: per-interface traffic counters, link state, address, speed and MTU.
 *
 * Two readers fill the same struct netdev_link. On a live sysfs mount the
 * counters, state, address and MTU come from one rtnetlink link dump (stats64)
 * and only the speed from a file: reading ~13 sysfs files per interface cost
 * 12 ms a tick with 64 interfaces (make bench), the dump well under one. A
 * --sysfs-root that is a tree of plain files (a fixture, a copied /sys) is
 * read file by file, in the manner of node_exporter's netclass collector;
 * there, as there, an interface is a directory (or a link to one) under
 * class/net, and the file bonding_masters beside them is not one.
 */
#include <errno.h>
#include <limits.h>
#include <netlink/route/link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>

#include "collector/collector.h"
#include "collector/metric_names.h"
#include "collector/sysfs.h"

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
	rtnl_link_stat_id_t stat; /* the same counter in the rtnetlink dump */
	const char *name;
	const char *help;
} netdev_counters[] = {
	{ "statistics/rx_bytes", RTNL_LINK_RX_BYTES, M_NETDEV_RECEIVE_BYTES_TOTAL,
	  "Bytes received by the interface." },
	{ "statistics/tx_bytes", RTNL_LINK_TX_BYTES, M_NETDEV_TRANSMIT_BYTES_TOTAL,
	  "Bytes transmitted by the interface." },
	{ "statistics/rx_packets", RTNL_LINK_RX_PACKETS, M_NETDEV_RECEIVE_PACKETS_TOTAL,
	  "Packets received by the interface." },
	{ "statistics/tx_packets", RTNL_LINK_TX_PACKETS, M_NETDEV_TRANSMIT_PACKETS_TOTAL,
	  "Packets transmitted by the interface." },
	{ "statistics/rx_errors", RTNL_LINK_RX_ERRORS, "fabmon_netdev_receive_errors_total",
	  "Bad packets received by the interface." },
	{ "statistics/tx_errors", RTNL_LINK_TX_ERRORS, "fabmon_netdev_transmit_errors_total",
	  "Packets the interface failed to transmit." },
	{ "statistics/rx_dropped", RTNL_LINK_RX_DROPPED, M_NETDEV_RECEIVE_DROPS_TOTAL,
	  "Packets received but dropped before the upper layers (no buffer, unknown protocol)." },
	{ "statistics/tx_dropped", RTNL_LINK_TX_DROPPED, M_NETDEV_TRANSMIT_DROPS_TOTAL,
	  "Packets dropped on their way to transmission (lack of resources)." },
};

#define NETDEV_NCOUNTERS (sizeof(netdev_counters) / sizeof(netdev_counters[0]))

/* One interface as either reader sees it. */
struct netdev_link {
	const char *ifname;
	char operstate[32];
	char address[64];
	uint64_t counters[NETDEV_NCOUNTERS];
	unsigned char have[NETDEV_NCOUNTERS]; /* 0: absent or unusable, not emitted */
	uint64_t mtu;
	int have_mtu;
};

/* Collector state: the rtnetlink socket and link cache, or NULL (files). */
struct netdev_state {
	struct nl_sock *sock;
	struct nl_cache *links;
};

static const struct metric_desc netdev_up_desc = {
	.name = M_NETDEV_UP,
	.help = "1 if the operational state is up (RFC 2863), else 0 (loopback shows unknown: 0).",
	.type = METRIC_GAUGE,
};
static const struct metric_desc netdev_info_desc = {
	.name = "fabmon_netdev_info",
	.help = "Constant 1, labelled with the interface's operational state and hardware address.",
	.type = METRIC_GAUGE,
};
static const struct metric_desc netdev_speed_desc = {
	.name = M_NETDEV_SPEED_BYTES,
	.help = "Link speed of the interface, in bytes per second.",
	.type = METRIC_GAUGE,
};
static const struct metric_desc netdev_mtu_desc = {
	.name = "fabmon_netdev_mtu_bytes",
	.help = "Maximum transmission unit of the interface, in bytes.",
	.type = METRIC_GAUGE,
};

/* What netdev_sample_one() needs, passed through sysfs_list_dirs(). */
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

/* Emits what a reader found for one interface, and its speed. */
static void netdev_emit(const struct collector_env *env, struct sample_sink *out,
			const struct netdev_link *l)
{
	struct label labels[3] = {
		{ "interface", l->ifname },
		{ "operstate", l->operstate },
		{ "address", l->address },
	};

	/* Sample errors (-ENOSPC when the registry is full) are counted by the
	 * registry itself. */
	(void)sample_gauge(out, &netdev_info_desc, labels, 3, 1);
	(void)sample_gauge(out, &netdev_up_desc, labels, 1, strcmp(l->operstate, "up") == 0);
	for (size_t i = 0; i < NETDEV_NCOUNTERS; i++) {
		const struct metric_desc desc = {
			.name = netdev_counters[i].name,
			.help = netdev_counters[i].help,
			.type = METRIC_COUNTER,
		};

		if (l->have[i])
			(void)sample_counter(out, &desc, labels, 1, l->counters[i]);
	}
	if (l->have_mtu)
		(void)sample_gauge(out, &netdev_mtu_desc, labels, 1, (double)l->mtu);
	netdev_sample_speed(env, out, labels, l->ifname);
}

/*
 * Reads a decimal attribute of the interface into *ret; returns 1 if it did.
 * An absent file is a value this interface does not have (a bond or a
 * tunnel without statistics/, a copied tree without it), not a skipped one.
 */
static int netdev_read_value(const struct netdev_walk *walk, const char *ifname, const char *attr,
			     uint64_t *ret)
{
	int r = netdev_read_u64(walk->env->sysfs_root, ifname, attr, ret);

	if (r < 0 && r != -ENOENT)
		sample_skip(walk->out);
	return r == 0;
}

/*
 * Reads and emits one interface from its files. Returns 0 always: a value
 * that is there but cannot be read is counted as skipped and the walk goes on.
 */
static int netdev_sample_files(const char *ifname, void *arg)
{
	const struct netdev_walk *walk = arg;
	const char *root = walk->env->sysfs_root;
	struct netdev_link l = { .ifname = ifname };
	int r;

	if (!collector_want_interface(walk->env, ifname))
		return 0;
	/* An interface removed since the directory was listed is gone, not broken. */
	r = netdev_read(root, ifname, "operstate", l.operstate, sizeof(l.operstate));
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		sample_skip(walk->out);
		strcpy(l.operstate, "unknown");
	}
	/* Links without a hardware address (tun, ipip) show an empty file. */
	if (netdev_read(root, ifname, "address", l.address, sizeof(l.address)) < 0)
		l.address[0] = '\0';
	for (size_t i = 0; i < NETDEV_NCOUNTERS; i++)
		l.have[i] =
			netdev_read_value(walk, ifname, netdev_counters[i].file, &l.counters[i]);
	l.have_mtu = netdev_read_value(walk, ifname, "mtu", &l.mtu);
	netdev_emit(walk->env, walk->out, &l);
	return 0;
}

/* Reads and emits one interface of the rtnetlink dump (nl_cache_foreach). */
static void netdev_sample_link(struct nl_object *obj, void *arg)
{
	struct rtnl_link *link = (struct rtnl_link *)obj;
	const struct netdev_walk *walk = arg;
	struct netdev_link l = { .ifname = rtnl_link_get_name(link) };
	struct nl_addr *addr = rtnl_link_get_addr(link);

	if (!l.ifname || !collector_want_interface(walk->env, l.ifname))
		return;
	(void)rtnl_link_operstate2str(rtnl_link_get_operstate(link), l.operstate,
				      sizeof(l.operstate));
	/* nl_addr2str() says "none" for a zero-length address; sysfs shows "" */
	if (addr && nl_addr_get_len(addr) > 0)
		(void)nl_addr2str(addr, l.address, sizeof(l.address));
	for (size_t i = 0; i < NETDEV_NCOUNTERS; i++) {
		l.counters[i] = rtnl_link_get_stat(link, netdev_counters[i].stat);
		l.have[i] = 1;
	}
	l.mtu = rtnl_link_get_mtu(link);
	l.have_mtu = 1;
	netdev_emit(walk->env, walk->out, &l);
}

static int netdev_count(const char *name, void *arg)
{
	(void)name;
	(*(unsigned *)arg)++;
	return 0;
}

/* sysfs(5): a mounted sysfs has this magic (include/uapi/linux/magic.h). */
#define NETDEV_SYSFS_MAGIC 0x62656572

static void netdev_fini(void *state)
{
	struct netdev_state *st = state;

	if (!st)
		return;
	if (st->links)
		nl_cache_free(st->links);
	if (st->sock)
		nl_socket_free(st->sock);
	free(st);
}

/* Connects rtnetlink and fills the link cache once; -errno on failure. */
static int netdev_netlink_open(struct netdev_state **ret)
{
	struct netdev_state *st = calloc(1, sizeof(*st));
	int r = -ENOMEM;

	if (!st)
		return r;
	st->sock = nl_socket_alloc();
	if (!st->sock)
		goto fail;
	r = nl_connect(st->sock, NETLINK_ROUTE);
	if (r == 0)
		r = rtnl_link_alloc_cache(st->sock, AF_UNSPEC, &st->links);
	if (r < 0) {
		r = -EOPNOTSUPP;
		goto fail;
	}
	*ret = st;
	return 0;
fail:
	netdev_fini(st);
	return r;
}

static int netdev_init(const struct collector_env *env, void **ret_state, char *why, size_t why_len)
{
	struct netdev_state *st = NULL;
	struct statfs fs;
	unsigned n = 0;
	char dir[PATH_MAX];
	int r = sysfs_list_dirs(env->sysfs_root, NETDEV_DIR, netdev_count, &n);

	if (r == 0 && n == 0)
		r = -ENOENT;
	if (r < 0) {
		(void)snprintf(why, why_len, "no network interfaces under %s/" NETDEV_DIR,
			       env->sysfs_root);
		return r;
	}
	/* A live sysfs shows this network namespace: rtnetlink sees the same
	 * interfaces in one dump. Anything else is a tree of files to read. */
	(void)snprintf(dir, sizeof(dir), "%s/" NETDEV_DIR, env->sysfs_root);
	if (statfs(dir, &fs) == 0 && fs.f_type == NETDEV_SYSFS_MAGIC &&
	    netdev_netlink_open(&st) < 0)
		(void)snprintf(why, why_len, "rtnetlink unavailable: reading %s file by file", dir);
	*ret_state = st;
	return 0;
}

static int netdev_sample(void *state, const struct collector_env *env, struct sample_sink *out)
{
	struct netdev_state *st = state;
	struct netdev_walk walk = { env, out };
	int r;

	if (!st)
		return sysfs_list_dirs(env->sysfs_root, NETDEV_DIR, netdev_sample_files, &walk);
	r = nl_cache_refill(st->sock, st->links);
	if (r < 0)
		return -EIO;
	nl_cache_foreach(st->links, netdev_sample_link, &walk);
	return 0;
}

const struct collector_ops netdev_collector = {
	.name = "netdev",
	.init = netdev_init,
	.sample = netdev_sample,
	.fini = netdev_fini,
};
