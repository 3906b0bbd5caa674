/* SPDX-License-Identifier: MIT */
/*
 * NIC driver statistics, read with SIOCETHTOOL the way `ethtool -S` reads
 * them. Known congestion and loss counters (PFC pause, discards, out of
 * buffer) become typed families; any other stat is exported only when the
 * ethtool_include regex matches its name, so a NIC with thousands of
 * per-ring stats does not flood the registry by default.
 */
#include <ctype.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/ethtool.h>
#include <linux/sockios.h>

#include "collector/ethtool.h"
#include "collector/metric_names.h"
#include "collector/sysfs.h"

enum ethtool_family {
	FAM_PAUSE_FRAMES,
	FAM_PAUSE_DURATION,
	FAM_PAUSE_TRANSITIONS,
	FAM_LINK_PAUSE_FRAMES,
	FAM_LINK_PAUSE_DURATION,
	FAM_LINK_PAUSE_TRANSITIONS,
	FAM_PRIO_BYTES,
	FAM_PRIO_PACKETS,
	FAM_DISCARDS,
	FAM_PRIO_DISCARDS,
	FAM_OUT_OF_BUFFER,
	FAM_PAUSE_STORM,
	FAM_RX_BUFFER_THRESHOLD,
	FAM_RX_PHY_ERRORS,
	FAM_STAT,
	FAM_COUNT,
};

/* ethtool stats are u64 (struct ethtool_stats), so bits stays 0. */
static const struct metric_desc families[FAM_COUNT] = {
	[FAM_PAUSE_FRAMES] = {
		.name = M_ETHTOOL_PAUSE_FRAMES_TOTAL,
		.help = "PFC pause frames per priority, received (rx) or sent (tx).",
		.type = METRIC_COUNTER,
	},
	[FAM_PAUSE_DURATION] = {
		.name = M_ETHTOOL_PAUSE_DURATION_SECONDS_TOTAL,
		.help = "Time under PFC pause per priority: rx, paused by the peer; tx, pausing.",
		.type = METRIC_COUNTER,
		.scale = 1e-6, /* mlx5 counts microseconds */
	},
	[FAM_PAUSE_TRANSITIONS] = {
		.name = "fabmon_ethtool_pause_transitions_total",
		.help = "PFC XOFF to XON transitions per priority.",
		.type = METRIC_COUNTER,
	},
	[FAM_LINK_PAUSE_FRAMES] = {
		.name = M_ETHTOOL_LINK_PAUSE_FRAMES_TOTAL,
		.help = "Link-level (IEEE 802.3x) pause frames, received (rx) or sent (tx).",
		.type = METRIC_COUNTER,
	},
	[FAM_LINK_PAUSE_DURATION] = {
		.name = M_ETHTOOL_LINK_PAUSE_DURATION_SECONDS_TOTAL,
		.help = "Time under link-level (global) pause, received (rx) or sent (tx).",
		.type = METRIC_COUNTER,
		.scale = 1e-6,
	},
	[FAM_LINK_PAUSE_TRANSITIONS] = {
		.name = "fabmon_ethtool_link_pause_transitions_total",
		.help = "Link-level (global) pause XOFF to XON transitions.",
		.type = METRIC_COUNTER,
	},
	[FAM_PRIO_BYTES] = {
		.name = "fabmon_ethtool_priority_bytes_total",
		.help = "Bytes per priority on the physical port.",
		.type = METRIC_COUNTER,
	},
	[FAM_PRIO_PACKETS] = {
		.name = "fabmon_ethtool_priority_packets_total",
		.help = "Packets per priority on the physical port.",
		.type = METRIC_COUNTER,
	},
	[FAM_DISCARDS] = {
		.name = "fabmon_ethtool_discards_total",
		.help = "Packets the port discarded: rx, no buffer; tx, link down, HOL or pause.",
		.type = METRIC_COUNTER,
	},
	[FAM_PRIO_DISCARDS] = {
		.name = "fabmon_ethtool_priority_discards_total",
		.help = "Packets discarded per priority for lack of receive buffers.",
		.type = METRIC_COUNTER,
	},
	[FAM_OUT_OF_BUFFER] = {
		.name = "fabmon_ethtool_out_of_buffer_total",
		.help = "Times a receive queue had no software buffer for a packet.",
		.type = METRIC_COUNTER,
	},
	[FAM_PAUSE_STORM] = {
		.name = "fabmon_ethtool_pause_storm_events_total",
		.help = "Pause storms: warning, long pausing; error, pause sending cut off.",
		.type = METRIC_COUNTER,
	},
	[FAM_RX_BUFFER_THRESHOLD] = {
		.name = "fabmon_ethtool_rx_buffer_threshold_events_total",
		.help = "Times the port receive buffer went over 85% full.",
		.type = METRIC_COUNTER,
	},
	[FAM_RX_PHY_ERRORS] = {
		.name = M_ETHTOOL_RX_PHY_ERRORS_TOTAL,
		.help = "Received packets dropped for FCS (crc) or coding (symbol) errors.",
		.type = METRIC_COUNTER,
	},
	[FAM_STAT] = {
		.name = "fabmon_ethtool_stat_total",
		.help = "Raw value of an ethtool stat that ethtool_include matches.",
		.type = METRIC_COUNTER,
	},
};

/*
 * A known stat name. In a pattern '@' stands for "rx" or "tx" (label
 * direction) and '#' for a priority digit (label priority); the labels come
 * in pattern order, then the fixed one, so all patterns of one family have the
 * same shape.
 */
struct ethtool_pattern {
	const char *pattern;
	enum ethtool_family family;
	const struct label *fixed; /* or NULL */
};

static const struct label severity_warning = { "severity", "warning" };
static const struct label severity_error = { "severity", "error" };
static const struct label error_crc = { "error", "crc" };
static const struct label error_symbol = { "error", "symbol" };

/*
 * mlx5 names are from the kernel's
 * Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst,
 * ice names (".nic") from drivers/net/ethernet/intel/ice/ice_ethtool.c. mlx5's
 * rx_global_pause and tx_global_pause are left out on purpose: they count the
 * frames rx/tx_pause_ctrl_phy count, only while global pause is on, and two
 * stats feeding one series would make it jump.
 */
static const struct ethtool_pattern patterns[] = {
	{ "@_prio#_pause", FAM_PAUSE_FRAMES, NULL },
	{ "@_priority_#_xoff.nic", FAM_PAUSE_FRAMES, NULL },
	{ "@_prio#_pause_duration", FAM_PAUSE_DURATION, NULL },
	{ "@_prio#_pause_transition", FAM_PAUSE_TRANSITIONS, NULL },
	{ "@_pause_ctrl_phy", FAM_LINK_PAUSE_FRAMES, NULL },
	{ "link_xoff_@.nic", FAM_LINK_PAUSE_FRAMES, NULL },
	{ "@_global_pause_duration", FAM_LINK_PAUSE_DURATION, NULL },
	{ "@_global_pause_transition", FAM_LINK_PAUSE_TRANSITIONS, NULL },
	{ "@_prio#_bytes", FAM_PRIO_BYTES, NULL },
	{ "@_prio#_packets", FAM_PRIO_PACKETS, NULL },
	{ "@_discards_phy", FAM_DISCARDS, NULL },
	{ "@_prio#_discards", FAM_PRIO_DISCARDS, NULL },
	{ "rx_out_of_buffer", FAM_OUT_OF_BUFFER, NULL },
	{ "tx_pause_storm_warning_events", FAM_PAUSE_STORM, &severity_warning },
	{ "tx_pause_storm_error_events", FAM_PAUSE_STORM, &severity_error },
	{ "rx_buffer_passed_thres_phy", FAM_RX_BUFFER_THRESHOLD, NULL },
	{ "rx_crc_errors_phy", FAM_RX_PHY_ERRORS, &error_crc },
	{ "rx_symbol_err_phy", FAM_RX_PHY_ERRORS, &error_symbol },
};

/* IEEE 802.1Qbb: PFC has eight priorities, one per PCP value. */
static const char *const priority_values[8] = { "0", "1", "2", "3", "4", "5", "6", "7" };

/* Length of name without the trailing spaces some drivers pad names with. */
static size_t trimmed_len(const char *name)
{
	size_t len = strlen(name);

	while (len > 0 && name[len - 1] == ' ')
		len--;
	return len;
}

static int pattern_match(const struct ethtool_pattern *p, const char *name, size_t len,
			 struct ethtool_class *c)
{
	size_t i = 0;

	c->n_labels = 0;
	for (const char *s = p->pattern; *s; s++) {
		if (*s == '@') {
			if (len - i < 2 || (name[i] != 'r' && name[i] != 't') || name[i + 1] != 'x')
				return 0;
			c->labels[c->n_labels++] =
				(struct label){ "direction", name[i] == 'r' ? "rx" : "tx" };
			i += 2;
		} else if (*s == '#') {
			if (i == len || name[i] < '0' || name[i] > '7')
				return 0;
			c->labels[c->n_labels++] =
				(struct label){ "priority", priority_values[name[i] - '0'] };
			i++;
		} else {
			if (i == len || name[i] != *s)
				return 0;
			i++;
		}
	}
	if (i != len)
		return 0;
	if (p->fixed)
		c->labels[c->n_labels++] = *p->fixed;
	c->desc = &families[p->family];
	return 1;
}

int ethtool_classify(const char *name, struct ethtool_class *ret)
{
	size_t len = trimmed_len(name);
	struct ethtool_class c;

	for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++) {
		if (pattern_match(&patterns[i], name, len, &c)) {
			*ret = c;
			return 1;
		}
	}
	return 0;
}

/* One exported stat of an interface. */
struct ethtool_export {
	uint32_t index; /* into the GSTATS values */
	struct ethtool_class class;
	char stat[ETH_GSTRING_LEN + 1]; /* label stat of an untyped stat; "" when typed */
};

struct ethtool_if {
	char name[IFNAMSIZ];
	uint32_t n_stats; /* as of the last names read; 0 before */
	struct ethtool_stats *values; /* room for n_stats, reused every tick */
	struct ethtool_export *exports;
	size_t n_exports;
};

struct ethtool_state {
	int fd;
	struct ethtool_if **ifs; /* sorted by name, the order sysfs_list_dirs() walks in */
	size_t n_ifs, cap_ifs;
};

static int ethtool_ioctl(int fd, const struct ethtool_if *ifc, void *cmd)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, ifc->name, sizeof(ifr.ifr_name));
	ifr.ifr_data = cmd;
	return ioctl(fd, SIOCETHTOOL, &ifr) < 0 ? -errno : 0;
}

/* Number of ETH_SS_STATS stats; -EOPNOTSUPP when the driver has none. */
static int ethtool_count(int fd, const struct ethtool_if *ifc, uint32_t *ret)
{
	struct {
		struct ethtool_sset_info hdr;
		uint32_t count; /* hdr.data[0]: one set asked, one count back */
	} info = { .hdr = { .cmd = ETHTOOL_GSSET_INFO, .sset_mask = 1ULL << ETH_SS_STATS } };
	int r = ethtool_ioctl(fd, ifc, &info);

	/* The kernel clears the set's bit rather than fail when the driver has
	 * no stats (lo, bridges); a count of 0 leaves nothing to read either. */
	if (r == 0 && (!(info.hdr.sset_mask & (1ULL << ETH_SS_STATS)) || info.count == 0))
		r = -EOPNOTSUPP;
	if (r == 0)
		*ret = info.count;
	return r;
}

static int export_add(struct ethtool_export **exports, size_t *n, size_t *cap,
		      const struct ethtool_export *e)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		struct ethtool_export *ne = realloc(*exports, ncap * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		*exports = ne;
		*cap = ncap;
	}
	(*exports)[(*n)++] = *e;
	return 0;
}

/*
 * Reads the n stat names of ifc and decides once which stats are exported
 * and how, so a tick only reads values. The include regex is applied here:
 * it is the agent's setting for its lifetime. ifc is changed only on success.
 */
static int iface_load(int fd, struct ethtool_if *ifc, uint32_t n, const struct collector_env *env)
{
	struct ethtool_gstrings *names;
	struct ethtool_stats *values;
	struct ethtool_export *exports = NULL;
	size_t n_exports = 0, cap = 0;
	int r;

	names = calloc(1, sizeof(*names) + (size_t)n * ETH_GSTRING_LEN);
	values = calloc(1, sizeof(*values) + (size_t)n * sizeof(values->data[0]));
	if (!names || !values) {
		r = -ENOMEM;
		goto out;
	}
	names->cmd = ETHTOOL_GSTRINGS;
	names->string_set = ETH_SS_STATS;
	names->len = n;
	r = ethtool_ioctl(fd, ifc, names);
	if (r < 0)
		goto out;
	/* The count changed since GSSET_INFO: try again next tick. */
	if (names->len != n) {
		r = -EAGAIN;
		goto out;
	}
	for (uint32_t i = 0; i < n && r == 0; i++) {
		struct ethtool_export e = { .index = i };

		/* A name fills its slot without a NUL when it is 32 bytes long. */
		memcpy(e.stat, names->data + (size_t)i * ETH_GSTRING_LEN, ETH_GSTRING_LEN);
		e.stat[trimmed_len(e.stat)] = '\0';
		if (e.stat[0] == '\0')
			continue;
		if (ethtool_classify(e.stat, &e.class))
			e.stat[0] = '\0';
		else if (env->ethtool_include &&
			 regexec(env->ethtool_include, e.stat, 0, NULL, 0) == 0)
			e.class.desc = &families[FAM_STAT];
		else
			continue;
		r = export_add(&exports, &n_exports, &cap, &e);
	}
	if (r < 0)
		goto out;
	free(ifc->values);
	free(ifc->exports);
	ifc->values = values;
	ifc->exports = exports;
	ifc->n_exports = n_exports;
	ifc->n_stats = n;
	values = NULL;
	exports = NULL;
out:
	free(names);
	free(values);
	free(exports);
	return r;
}

/*
 * Asks for the count every tick: GSTATS writes as many values as the driver
 * has now, whatever size the caller says its buffer is, so a count that grew
 * (more channels) must be seen before the values are read. The window
 * between the two ioctls remains; ethtool(8) lives with it too.
 */
static int iface_refresh(int fd, struct ethtool_if *ifc, const struct collector_env *env)
{
	uint32_t n;
	int r = ethtool_count(fd, ifc, &n);

	if (r == 0 && n != ifc->n_stats)
		r = iface_load(fd, ifc, n, env);
	return r;
}

static int iface_sample(int fd, struct ethtool_if *ifc, struct sample_sink *out)
{
	int r;

	ifc->values->cmd = ETHTOOL_GSTATS;
	ifc->values->n_stats = ifc->n_stats;
	r = ethtool_ioctl(fd, ifc, ifc->values);
	if (r < 0)
		return r;
	/* Names no longer line up with values; next tick reloads them. */
	if (ifc->values->n_stats != ifc->n_stats)
		return -EAGAIN;
	for (size_t i = 0; i < ifc->n_exports; i++) {
		const struct ethtool_export *e = &ifc->exports[i];
		struct label labels[1 + ETHTOOL_CLASS_LABELS];
		size_t n = 1;

		labels[0] = (struct label){ "interface", ifc->name };
		for (size_t j = 0; j < e->class.n_labels; j++)
			labels[n++] = e->class.labels[j];
		if (e->stat[0])
			labels[n++] = (struct label){ "stat", e->stat };
		/* A full registry counts what it drops; nothing to add here. */
		(void)sample_counter(out, e->class.desc, labels, n, ifc->values->data[e->index]);
	}
	return 0;
}

static void iface_free(struct ethtool_if *ifc)
{
	if (!ifc)
		return;
	free(ifc->values);
	free(ifc->exports);
	free(ifc);
}

static void iface_remove(struct ethtool_state *st, size_t pos)
{
	iface_free(st->ifs[pos]);
	memmove(st->ifs + pos, st->ifs + pos + 1, (st->n_ifs - pos - 1) * sizeof(*st->ifs));
	st->n_ifs--;
}

/*
 * Returns the entry for name at position pos, inserting one if it is new.
 * Interfaces arrive sorted, like st->ifs, so entries that sort before name are
 * interfaces gone since the last walk, and are dropped.
 */
static int iface_at(struct ethtool_state *st, size_t pos, const char *name, struct ethtool_if **ret)
{
	struct ethtool_if *ifc;

	while (pos < st->n_ifs && strcmp(st->ifs[pos]->name, name) < 0)
		iface_remove(st, pos);
	if (pos < st->n_ifs && strcmp(st->ifs[pos]->name, name) == 0) {
		*ret = st->ifs[pos];
		return 0;
	}
	if (st->n_ifs == st->cap_ifs) {
		size_t ncap = st->cap_ifs ? st->cap_ifs * 2 : 8;
		struct ethtool_if **nifs = realloc(st->ifs, ncap * sizeof(*nifs));

		if (!nifs)
			return -ENOMEM;
		st->ifs = nifs;
		st->cap_ifs = ncap;
	}
	ifc = calloc(1, sizeof(*ifc));
	if (!ifc)
		return -ENOMEM;
	/* The caller checked that name fits. */
	memcpy(ifc->name, name, strlen(name) + 1);
	memmove(st->ifs + pos + 1, st->ifs + pos, (st->n_ifs - pos) * sizeof(*st->ifs));
	st->ifs[pos] = ifc;
	st->n_ifs++;
	*ret = ifc;
	return 0;
}

/* One walk over class/net: init probes (out NULL, notes into why), sample reads. */
struct ethtool_walk {
	struct ethtool_state *st;
	const struct collector_env *env;
	struct sample_sink *out;
	char *why;
	size_t why_len;
	size_t pos; /* st->ifs entries kept so far */
	unsigned n_ok;
	int err; /* the last error that was not "no stats here" */
};

/* Appends "ethtool: operation not supported on lo" to the doctor note. */
static void why_add(char *why, size_t why_len, const char *ifname, int err)
{
	size_t used = strlen(why);
	char reason[128];

	if (used + 1 >= why_len)
		return;
	/* fabmon's messages are lowercase; strerror's start with a capital */
	(void)snprintf(reason, sizeof(reason), "%s", strerror(-err));
	reason[0] = (char)tolower((unsigned char)reason[0]);
	(void)snprintf(why + used, why_len - used, "%sethtool: %s on %s", used ? "; " : "", reason,
		       ifname);
}

static int walk_one(const char *name, void *arg)
{
	struct ethtool_walk *w = arg;
	struct ethtool_if *ifc;
	int r;

	if (strlen(name) >= IFNAMSIZ || !collector_want_interface(w->env, name))
		return 0;
	r = iface_at(w->st, w->pos, name, &ifc);
	if (r < 0)
		return r;
	w->pos++;
	r = iface_refresh(w->st->fd, ifc, w->env);
	if (r == 0 && w->out)
		r = iface_sample(w->st->fd, ifc, w->out);
	/* ENODEV: gone since the listing, or a fixture tree's interface. */
	if (r == 0) {
		w->n_ok++;
	} else if (r != -ENODEV && w->why) {
		why_add(w->why, w->why_len, name, r);
	} else if (r != -ENODEV && r != -EOPNOTSUPP) {
		sample_skip(w->out);
		w->err = r;
	}
	return 0;
}

/* Walks class/net; on success drops the entries of interfaces not seen. */
static int ethtool_walk(struct ethtool_walk *w)
{
	int r = sysfs_list_dirs(w->env->sysfs_root, "class/net", walk_one, w);

	if (r >= 0)
		while (w->st->n_ifs > w->pos)
			iface_remove(w->st, w->st->n_ifs - 1);
	return r;
}

static void ethtool_fini(void *state)
{
	struct ethtool_state *st = state;

	if (!st)
		return;
	for (size_t i = 0; i < st->n_ifs; i++)
		iface_free(st->ifs[i]);
	free(st->ifs);
	if (st->fd >= 0)
		(void)close(st->fd);
	free(st);
}

static int ethtool_init(const struct collector_env *env, void **ret_state, char *why,
			size_t why_len)
{
	struct ethtool_state *st;
	struct ethtool_walk w;
	int r;

	why[0] = '\0';
	st = calloc(1, sizeof(*st));
	if (!st) {
		(void)snprintf(why, why_len, "ethtool: out of memory");
		return -ENOMEM;
	}
	/* Any socket carries SIOCETHTOOL; AF_UNIX serves a kernel without IPv4,
	 * as in ethtool(8). */
	st->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (st->fd < 0)
		st->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (st->fd < 0) {
		r = -errno;
		(void)snprintf(why, why_len, "ethtool: unable to open a socket: %s", strerror(-r));
		goto out;
	}
	w = (struct ethtool_walk){ .st = st, .env = env, .why = why, .why_len = why_len };
	r = ethtool_walk(&w);
	if (r < 0) {
		(void)snprintf(why, why_len, "ethtool: unable to list '%s/class/net': %s",
			       env->sysfs_root, strerror(-r));
		goto out;
	}
	if (w.n_ok == 0) {
		if (why[0] == '\0')
			(void)snprintf(why, why_len,
				       "ethtool: no interface in '%s/class/net' has stats",
				       env->sysfs_root);
		r = -EOPNOTSUPP;
		goto out;
	}
	*ret_state = st;
	st = NULL;
	r = 0;
out:
	ethtool_fini(st);
	return r;
}

static int ethtool_sample(void *state, const struct collector_env *env, struct sample_sink *out)
{
	struct ethtool_walk w = { .st = state, .env = env, .out = out };
	int r = ethtool_walk(&w);

	/* One interface failing is a skipped value; all of them, a failed tick. */
	if (r >= 0)
		r = w.n_ok == 0 && w.err < 0 ? w.err : 0;
	return r;
}

const struct collector_ops ethtool_collector = {
	.name = "ethtool",
	.init = ethtool_init,
	.sample = ethtool_sample,
	.fini = ethtool_fini,
};
