/* SPDX-License-Identifier: MIT */
/*
 * qdisc: queueing discipline backlog and counters over rtnetlink (the
 * TCA_STATS2 attributes `tc -s qdisc show` prints), through libnl-route-3.
 * It sees the network namespace the agent ran init in, not the sysfs root.
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netlink/errno.h>
#include <netlink/route/link.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/qdisc/tbf.h>
#include <netlink/route/tc.h>

#include "collector/collector.h"
#include "collector/metric_names.h"
#include "collector/nl_errno.h"

struct qdisc_state {
	struct nl_sock *sock;
	struct nl_cache *links; /* ifindex -> name */
	struct nl_cache *qdiscs;
};

/*
 * The widths are those of the kernel's struct gnet_stats_basic (bytes __u64,
 * packets __u32) and struct gnet_stats_queue (all __u32) in
 * include/uapi/linux/gen_stats.h. libnl reads TCA_STATS_BASIC, not the 64-bit
 * TCA_STATS_PKT64, so packets wraps at 32 bits as the older struct tc_stats did.
 */
static const struct {
	enum rtnl_tc_stat stat;
	struct metric_desc desc;
} qdisc_stats[] = {
	{ RTNL_TC_BACKLOG,
	  { .name = M_QDISC_BACKLOG_BYTES,
	    .help = "Bytes waiting in the queueing discipline.",
	    .type = METRIC_GAUGE } },
	{ RTNL_TC_QLEN,
	  { .name = "fabmon_qdisc_backlog_packets",
	    .help = "Packets waiting in the queueing discipline.",
	    .type = METRIC_GAUGE } },
	{ RTNL_TC_BYTES,
	  { .name = "fabmon_qdisc_bytes_total",
	    .help = "Bytes sent through the queueing discipline.",
	    .type = METRIC_COUNTER } },
	{ RTNL_TC_PACKETS,
	  { .name = "fabmon_qdisc_packets_total",
	    .help = "Packets sent through the queueing discipline.",
	    .type = METRIC_COUNTER,
	    .bits = 32 } },
	{ RTNL_TC_DROPS,
	  { .name = M_QDISC_DROPS_TOTAL,
	    .help = "Packets the queueing discipline dropped.",
	    .type = METRIC_COUNTER,
	    .bits = 32 } },
	{ RTNL_TC_OVERLIMITS,
	  { .name = M_QDISC_OVERLIMITS_TOTAL,
	    .help = "Times the queueing discipline held a packet back over its rate or limit.",
	    .type = METRIC_COUNTER,
	    .bits = 32 } },
	{ RTNL_TC_REQUEUES,
	  { .name = "fabmon_qdisc_requeues_total",
	    .help = "Packets put back into the queue because the driver was busy.",
	    .type = METRIC_COUNTER,
	    .bits = 32 } },
};

static const struct metric_desc qdisc_rate_desc = {
	.name = M_QDISC_RATE_BYTES,
	.help = "Rate the queueing discipline shapes to (tbf), in bytes per second.",
	.type = METRIC_GAUGE,
};

/*
 * Formats a class id the way tc prints a parent: "root", "1:10", "8001:"
 * (minor 0), ":1" (major 0, the children of mq).
 */
static void qdisc_format_classid(uint32_t id, char *buf, size_t len)
{
	if (id == TC_H_ROOT)
		(void)snprintf(buf, len, "root");
	else if (TC_H_MAJ(id) == 0)
		(void)snprintf(buf, len, ":%x", TC_H_MIN(id));
	else if (TC_H_MIN(id) == 0)
		(void)snprintf(buf, len, "%x:", TC_H_MAJ(id) >> 16);
	else
		(void)snprintf(buf, len, "%x:%x", TC_H_MAJ(id) >> 16, TC_H_MIN(id));
}

/* Emits the series of one qdisc, if its interface is wanted. */
static void qdisc_sample_one(const struct qdisc_state *st, const struct collector_env *env,
			     struct sample_sink *out, struct rtnl_tc *tc)
{
	char ifname[IF_NAMESIZE], handle[16], parent[16];
	/* Never NULL: rtnl_tc_msg_parse() refuses a message without TCA_KIND. */
	const char *kind = rtnl_tc_get_kind(tc);
	struct label labels[4];

	/*
	 * A link that appeared between the two dumps is not in the link cache
	 * yet; its qdiscs show from the next tick on.
	 */
	if (!rtnl_link_i2name(st->links, rtnl_tc_get_ifindex(tc), ifname, sizeof(ifname)) ||
	    !collector_want_interface(env, ifname))
		return;
	/* A qdisc's handle has minor 0; tc prints it as "major:" even when 0. */
	(void)snprintf(handle, sizeof(handle), "%x:", TC_H_MAJ(rtnl_tc_get_handle(tc)) >> 16);
	qdisc_format_classid(rtnl_tc_get_parent(tc), parent, sizeof(parent));

	labels[0] = (struct label){ "interface", ifname };
	labels[1] = (struct label){ "kind", kind };
	labels[2] = (struct label){ "handle", handle };
	labels[3] = (struct label){ "parent", parent };
	/* A full registry counts the samples it drops: nothing to do here. */
	for (size_t i = 0; i < sizeof(qdisc_stats) / sizeof(qdisc_stats[0]); i++) {
		uint64_t v = rtnl_tc_get_stat(tc, qdisc_stats[i].stat);

		if (qdisc_stats[i].desc.type == METRIC_GAUGE)
			(void)sample_gauge(out, &qdisc_stats[i].desc, labels, 4, (double)v);
		else
			(void)sample_counter(out, &qdisc_stats[i].desc, labels, 4, v);
	}
	/*
	 * A shaper's rate is the link's capacity as its traffic sees it. libnl
	 * gives it as an int: a rate past INT_MAX bytes/s (17 Gbit/s) reads
	 * negative and is left out rather than reported wrong.
	 */
	if (strcmp(kind, "tbf") == 0) {
		int rate = rtnl_qdisc_tbf_get_rate((struct rtnl_qdisc *)tc);

		if (rate > 0)
			(void)sample_gauge(out, &qdisc_rate_desc, labels, 4, rate);
	}
}

static void qdisc_fini(void *state)
{
	struct qdisc_state *st = state;

	if (!st)
		return;
	nl_cache_free(st->qdiscs);
	nl_cache_free(st->links);
	nl_socket_free(st->sock);
	free(st);
}

/*
 * Connects the socket and makes the two caches, empty: they are filled each
 * tick, so init does not dump what the first tick dumps again.
 */
static int qdisc_init(const struct collector_env *env, void **ret_state, char *why, size_t why_len)
{
	struct qdisc_state *st;
	int r = -NLE_NOMEM;

	(void)env;
	st = calloc(1, sizeof(*st));
	if (!st)
		goto fail;
	st->sock = nl_socket_alloc();
	if (!st->sock)
		goto fail;
	r = nl_connect(st->sock, NETLINK_ROUTE);
	if (r < 0)
		goto fail;
	r = nl_cache_alloc_name("route/link", &st->links);
	if (r < 0)
		goto fail;
	r = nl_cache_alloc_name("route/qdisc", &st->qdiscs);
	if (r < 0)
		goto fail;
	*ret_state = st;
	return 0;
fail:
	(void)snprintf(why, why_len, "rtnetlink: %s", nl_geterror(r));
	qdisc_fini(st);
	return nl_errno_of(r);
}

static int qdisc_sample(void *state, const struct collector_env *env, struct sample_sink *out)
{
	struct qdisc_state *st = state;
	struct nl_object *obj;
	int r;

	r = nl_cache_refill(st->sock, st->links);
	if (r >= 0)
		r = nl_cache_refill(st->sock, st->qdiscs);
	if (r < 0)
		return nl_errno_of(r);
	for (obj = nl_cache_get_first(st->qdiscs); obj; obj = nl_cache_get_next(obj))
		qdisc_sample_one(st, env, out, TC_CAST(obj));
	return 0;
}

const struct collector_ops qdisc_collector = {
	.name = "qdisc",
	.init = qdisc_init,
	.sample = qdisc_sample,
	.fini = qdisc_fini,
};
