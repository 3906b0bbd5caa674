/* SPDX-License-Identifier: MIT */
#ifndef FABMON_REPLAY_H
#define FABMON_REPLAY_H

/*
 * fabmon replay FILE: reads a pcap or pcapng capture (Ethernet, Linux cooked
 * SLL or SLL2) with libpcap, as fast as it can, counts its traffic as the tc
 * probe would (collector/pcap/capture.h) and prints per-QP and per-peer tables,
 * or one JSON object with --json. argv[0] is "replay".
 * Exit status: 0 the whole file was read (frames that did not parse are
 * counted, and the first are named); 1 the file could not be read, or broke
 * part-way (what came before is reported, and the packet where it broke);
 * 2 usage error.
 */
int replay_main(int argc, char **argv);

#endif
