/* SPDX-License-Identifier: MIT */
#ifndef FABMON_CLI_TOP_H
#define FABMON_CLI_TOP_H

/*
 * fabmon top [--since T] [--until T] [--by link|peer] [--limit N] [--db PATH]
 * [--json|--csv]: links and peers ranked by time in congestion over the
 * window, then peak score. argv[0] is "top". Exit status as fabmon events.
 */
int top_main(int argc, char **argv);

#endif
