/* SPDX-License-Identifier: MIT */
#ifndef FABMON_ETHTOOL_H
#define FABMON_ETHTOOL_H

#include <stddef.h>

#include "collector/collector.h"

/* The most labels a known ethtool counter carries besides "interface". */
#define ETHTOOL_CLASS_LABELS 3

/* What a known ethtool stat is: its metric family and labels, "interface" left out. */
struct ethtool_class {
	const struct metric_desc *desc;
	struct label labels[ETHTOOL_CLASS_LABELS];
	size_t n_labels;
};

/*
 * Maps a driver's stat name ("rx_prio3_pause", trailing spaces ignored) to the
 * typed metric it is exported as. Returns 1 and fills *ret for a known
 * congestion or loss counter, 0 (leaving *ret alone) for any other name. The
 * desc and label strings are static. Pure: no I/O, no state.
 */
int ethtool_classify(const char *name, struct ethtool_class *ret);

#endif
