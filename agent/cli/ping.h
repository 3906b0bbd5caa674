/* SPDX-License-Identifier: MIT */
#ifndef FABMON_CLI_PING_H
#define FABMON_CLI_PING_H

/*
 * fabmon ping PEER [--flows N] [--port PORT] [--dscp N] [--timeout DURATION]:
 * one probe to PEER's mesh responder on every flow (source port) and a path
 * trace of each; prints each flow's RTT or loss and its hops. argv[0] is
 * "ping". Exit 0 if every flow was answered, 1 if not, 2 on a usage error.
 */
int ping_main(int argc, char **argv);

#endif
