/* SPDX-License-Identifier: MIT */
#ifndef FABMON_CLI_LOCATE_H
#define FABMON_CLI_LOCATE_H

/*
 * fabmon locate --prometheus URL [--since T] [--until T] [--json|--csv]
 * [--ca-file F] [--cert F --key F] [--user U --password-file F]: asks
 * Prometheus what every node reported over the window and prints a ranked
 * list of suspects (host, switch port, mesh hop) with their evidence
 * (agent/cli/locate_score.h). argv[0] is "locate". Exit status: 0 the list
 * was printed (also when it is empty), 1 Prometheus could not be asked or
 * refused a query, 2 usage error.
 */
int locate_main(int argc, char **argv);

#endif
