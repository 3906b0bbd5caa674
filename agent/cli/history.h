/* SPDX-License-Identifier: MIT */
#ifndef FABMON_CLI_HISTORY_H
#define FABMON_CLI_HISTORY_H

/*
 * fabmon history METRIC [--label K=V]... [--since T] [--until T] [--step D]
 * [--agg avg|max|min|last|count] [--db PATH] [--json|--csv] [--utc]: the metric's
 * series over the window, one value a step (counters as per-second rates).
 * argv[0] is "history". Exit status: 0 shown, 1 database missing or
 * unusable, 2 usage error (also an unknown metric or too many series).
 */
int history_main(int argc, char **argv);

#endif
