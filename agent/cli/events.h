/* SPDX-License-Identifier: MIT */
#ifndef FABMON_CLI_EVENTS_H
#define FABMON_CLI_EVENTS_H

/*
 * fabmon events [--since T] [--until T] [--kind K] [--subject S] [--db PATH]
 * [--json|--csv] [--utc]: the events that overlap the window, oldest first,
 * read-only from the database. argv[0] is "events". Exit status: 0 listed,
 * 1 database missing or unusable, 2 usage error.
 */
int events_main(int argc, char **argv);

#endif
