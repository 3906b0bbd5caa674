/* SPDX-License-Identifier: MIT */
#ifndef FABMON_PAUSE_SERIES_H
#define FABMON_PAUSE_SERIES_H

#include <stdint.h>

#include "collector/collector.h"
#include "collector/pcap/capture.h"

/*
 * Emits the PAUSE and PFC frames counted in p (capture.h) as series of
 * interface ifname, per priority (or the link's), once a slot has a frame:
 * frames and quanta asked, and the time paused up to now_ns where the frames
 * were timed (the link's speed known). The pcap collector's per mirror port,
 * and `fabmon replay`'s for its capture file, so that the detectors read a
 * captured PFC storm as they read a NIC's own pause counters.
 */
void pause_series_emit(const struct capture_pause *p, const char *ifname, uint64_t now_ns,
		       struct sample_sink *out);

#endif
