/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "agent/http/exposition.h"
#include "agent/registry/label_text.h"

/* The digits of integral v by hand: most values are counts, and printf's
 * "%.0f" of them was a tenth of the tick at a thousand mesh peers. */
static void exposition_format_integer(struct strbuf *out, double v)
{
	char d[24];
	size_t i = sizeof(d);
	uint64_t u = (uint64_t)fabs(v);

	do
		d[--i] = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		d[--i] = '-';
	strbuf_add(out, d + i, sizeof(d) - i);
}

void exposition_format_value(struct strbuf *out, double v)
{
	if (isnan(v))
		strbuf_addstr(out, "NaN");
	else if (isinf(v))
		strbuf_addstr(out, v > 0 ? "+Inf" : "-Inf");
	else if (v == floor(v) && fabs(v) < 9007199254740992.0 && !(v == 0 && signbit(v)))
		exposition_format_integer(out, v); /* 2^53: exact in a double */
	else
		strbuf_addf(out, "%.15g", v);
}

/* HELP text escapes backslash and newline (text format 0.0.4). */
static void add_help(struct strbuf *out, const char *help)
{
	for (; *help; help++) {
		if (*help == '\\')
			strbuf_add(out, "\\\\", 2);
		else if (*help == '\n')
			strbuf_add(out, "\\n", 2);
		else
			strbuf_addch(out, *help);
	}
}

/*
 * Link series get the switch port at the far end of their interface as a
 * neighbor label, from fabmon_lldp_neighbor_info (the pcap collector's), so
 * that Prometheus can sum a hotspot's links by switch port without a join.
 * Only here, at the exposition: the registry and the database keep each
 * series under one identity whatever LLDP says.
 */
#define NEIGHBORS_MAX 64
static const char *const neighbor_families[] = { "fabmon_netdev_", "fabmon_ethtool_",
						 "fabmon_qdisc_" };

struct neighbor {
	char interface[64]; /* as escaped in the label text */
	char name[300]; /* "system_name/port_id", or chassis_id for a nameless one */
};

struct render_state {
	struct strbuf *out;
	const char *family;
	size_t family_len;
	struct neighbor nb[NEIGHBORS_MAX];
	size_t nnb;
};

static int note_neighbor(struct series *s, void *arg)
{
	struct render_state *st = arg;
	struct neighbor *nb = &st->nb[st->nnb];
	char system[256], port[256];

	if (st->nnb == NEIGHBORS_MAX || strcmp(s->name, "fabmon_lldp_neighbor_info") != 0)
		return 0;
	(void)label_value(s->labels, "interface", nb->interface, sizeof(nb->interface));
	(void)label_value(s->labels, "system_name", system, sizeof(system));
	if (!system[0])
		(void)label_value(s->labels, "chassis_id", system, sizeof(system));
	(void)label_value(s->labels, "port_id", port, sizeof(port));
	if (nb->interface[0] &&
	    snprintf(nb->name, sizeof(nb->name), "%s/%s", system, port) < (int)sizeof(nb->name))
		st->nnb++;
	return 0;
}

/* The neighbour of s's interface if s is a link series, or NULL. */
static const char *neighbor_of(const struct render_state *st, const struct series *s)
{
	char ifname[64];
	size_t i;

	if (!st->nnb)
		return NULL;
	for (i = 0; i < sizeof(neighbor_families) / sizeof(neighbor_families[0]); i++)
		if (strncmp(s->name, neighbor_families[i], strlen(neighbor_families[i])) == 0)
			break;
	if (i == sizeof(neighbor_families) / sizeof(neighbor_families[0]))
		return NULL;
	(void)label_value(s->labels, "interface", ifname, sizeof(ifname));
	for (i = 0; ifname[0] && i < st->nnb; i++)
		if (strcmp(st->nb[i].interface, ifname) == 0)
			return st->nb[i].name;
	return NULL;
}

/* The family a series belongs to: its name, less _bucket, _sum or _count
 * for a histogram's series. */
static size_t family_len(const struct series *s)
{
	static const char *const parts[] = { "_bucket", "_sum", "_count" };
	size_t n = strlen(s->name);

	if (s->type != METRIC_HISTOGRAM)
		return n;
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		size_t p = strlen(parts[i]);

		if (n > p && strcmp(s->name + n - p, parts[i]) == 0)
			return n - p;
	}
	return n;
}

static int render_one(struct series *s, void *arg)
{
	static const char *const types[] = { [METRIC_COUNTER] = "counter",
					     [METRIC_GAUGE] = "gauge",
					     [METRIC_HISTOGRAM] = "histogram" };
	struct render_state *st = arg;
	struct strbuf *out = st->out;
	size_t len = family_len(s);
	const char *nb = neighbor_of(st, s);

	if (!st->family || st->family_len != len || strncmp(st->family, s->name, len) != 0) {
		strbuf_addf(out, "# HELP %.*s ", (int)len, s->name);
		add_help(out, s->help);
		strbuf_addf(out, "\n# TYPE %.*s %s\n", (int)len, s->name, types[s->type]);
		st->family = s->name;
		st->family_len = len;
	}
	strbuf_addstr(out, s->name);
	if (*s->labels) {
		strbuf_addch(out, '{');
		strbuf_addstr(out, s->labels);
		if (nb)
			strbuf_addf(out, ",neighbor=\"%s\"", nb);
		strbuf_addch(out, '}');
	}
	strbuf_addch(out, ' ');
	exposition_format_value(out, s->value);
	strbuf_addch(out, '\n');
	return 0;
}

int exposition_render(struct registry *reg, struct strbuf *out)
{
	static struct render_state st;

	/* the tick thread is the only caller: one state, reused */
	memset(&st, 0, sizeof(st));
	st.out = out;
	(void)registry_foreach(reg, note_neighbor, &st);
	(void)registry_foreach(reg, render_one, &st);
	return out->failed ? -ENOMEM : 0;
}
