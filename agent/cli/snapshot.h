/* SPDX-License-Identifier: MIT */
#ifndef FABMON_CLI_SNAPSHOT_H
#define FABMON_CLI_SNAPSHOT_H

/*
 * fabmon snapshot [--db PATH] [--since T] OUT.db: a consistent copy of the
 * database, safe while the agent writes. argv[0] is "snapshot". Exit
 * status: 0 written, 1 failure (no partial copy left), 2 usage error.
 */
int snapshot_main(int argc, char **argv);

#endif
