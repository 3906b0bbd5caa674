/* SPDX-License-Identifier: MIT */
#ifndef FABMON_EXPOSITION_H
#define FABMON_EXPOSITION_H

#include "agent/lib/strbuf.h"
#include "agent/registry/registry.h"

/*
 * Renders the series reported in the registry's current tick as Prometheus
 * text exposition format 0.0.4: "# HELP" and "# TYPE" once per family,
 * families in name order, series in label order. Link series (netdev,
 * ethtool, qdisc) whose interface has an LLDP neighbour
 * (fabmon_lldp_neighbor_info) get a neighbor="SYSTEM/PORT" label. Appends to
 * out; returns 0 or -ENOMEM. Not reentrant: the tick thread's.
 */
int exposition_render(struct registry *reg, struct strbuf *out);

/* Appends value the way the text format wants it (integers without a
 * fraction, NaN and +Inf spelled as Prometheus does). */
void exposition_format_value(struct strbuf *out, double value);

#endif
