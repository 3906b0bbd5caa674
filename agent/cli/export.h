/* SPDX-License-Identifier: MIT */
#ifndef FABMON_CLI_EXPORT_H
#define FABMON_CLI_EXPORT_H

/*
 * fabmon export --format openmetrics [--since T] [--until T] [--db PATH]
 * [--metric NAME] [--label K=V]... [--output FILE]: the stored samples of
 * the window in the OpenMetrics text format, for `promtool tsdb
 * create-blocks-from openmetrics` (backfilling a Prometheus that missed
 * them). argv[0] is "export". Exit status: 0 written, 1 the database is
 * missing or unusable or the output cannot be written, 2 usage error (also
 * an unknown --metric).
 */
int export_main(int argc, char **argv);

#endif
