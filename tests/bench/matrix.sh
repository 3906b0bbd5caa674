#!/bin/bash
# SPDX-License-Identifier: MIT
# The seeded scenario matrix (`make bench`, block "matrix"): each seed picks
# one run's parameters — 4 or 8 ranks, ticks of 200 ms or 1 s, switch ports
# at 50 Mbit/s to unshaped, the traffic's generator (loadgen's ring
# all-reduce, all-gather, all-to-all or hand-off; iperf3; peerflood), host
# load (none, or stress-ng on both cores), the fault and its culprit rank,
# its onset at a random point of a tick — so a run can be repeated
# (tests/bench/matrix.py params SEED shows them; matrix_run.sh runs one).
# Rules are tuned on one range of seeds and judged on another: both tables
# print, and a rule that helps only the tuning seeds shows as a gap.
#
#   MATRIX_SEED=N            one run, its line and its table
#   MATRIX_SEEDS=A-B         one range, one table (or a list: 5,7,10-12)
#   MATRIX_TUNE=A-B, MATRIX_REPORT=C-D   the two ranges otherwise (defaults
#                            0-14 and 1000-1014: about 25 min on 2 cores)
#   MATRIX_RESULTS=FILE      keep the runs' JSON lines there (appended)
#   MATRIX_KEEP=DIR          keep each run's work directory there
#   MATRIX_MESH=1            every agent also probes every rank (mesh)
#
# Reading the table: per fault, runs, recall (a right event: the kind and
# culprit the table below expects, from any rank's agent, from the onset on)
# and "+cause" (the expected cause too, from the `cause` label or column; an
# agent without one says "unknown", a miss), and onset -> the event on
# /metrics, p50/p90 in seconds, at each tick. Then every kind raised:
# precision (right / raised; an event opened before the fault's command or in a run without a
# fault is wrong) with and without the cause. Then false events per hour of
# clean traffic (clean runs and the time before a fault's onset), network
# kinds and host_stall apart, without and with host load. One line per run
# as it goes: its parameters and its events, rN:kind:subject:cause.
#
# Exit 0 when the runs went through (whatever they found), 1 when one could
# not run, 77 (with the reason) when a tool it needs is missing or not root.
# `matrix.sh --expect` prints the table of what each fault must raise.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
cd "$(dirname "$0")/../.." || exit 1
set -u
# What each fault must raise: any of KINDS, naming any of SUBJECTS ("|"
# between choices), with CAUSE. @IP is the culprit rank's address; "own:"
# only from the culprit rank's own agent (what that host sees of itself),
# "*" any subject. A throttled port is a
# slow link: straggler in a ring, incast in an all-to-all, slow_handoff in a
# hand-off (the kinds tests/lab/scenarios raise for it). RDMA
# retransmissions are lossy_link's evidence, as issue 32 names them.
# Random loss on a TCP path (the loss fault) is found by the mesh's probes
# (MATRIX_MESH=1); without them it scores as a miss (docs/events.md).
EXPECT="# fault   kinds                                  subjects                      cause
throttle  straggler|incast|hotspot|slow_handoff  peer=@IP|own:interface=eth0   network
loss      lossy_link                             peer=@IP|own:interface=eth0   network
pause     host_stall                             peer=@IP|own:*                host
down      stall                                  peer=@IP|own:interface=eth0   network
pfc       pfc_storm                              own:device=mlx5_0,port=1      network
rdma_retx lossy_link                             own:device=mlx5_0,port=1      network"
# --expect: prints the table (for tests/lab/t_matrix_smoke.sh)
[ "${1:-}" != --expect ] || { echo "$EXPECT"; exit 0; }
[ "$(id -u)" = 0 ] || { echo "SKIP: the matrix needs root (network namespaces)"; exit 77; }
LAB_BIN=${LAB_BIN:-$PWD/build/lab}
for tool in python3 iperf3 stress-ng nft ip curl "$LAB_BIN/loadgen" "$LAB_BIN/peerflood"; do
	command -v "$tool" >/dev/null ||
		{ echo "SKIP: no $tool (make deps; make $LAB_BIN/...): the matrix not run"; exit 77; }
done

WORK=$(mktemp -d /tmp/fabmon-matrix-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
echo "$EXPECT" >"$WORK/expect"
RESULTS=${MATRIX_RESULTS:-$WORK/results}
[ -z "${MATRIX_KEEP:-}" ] || mkdir -p "$MATRIX_KEEP"
if [ -n "${MATRIX_SEED:-}" ]; then
	SETS="run=$MATRIX_SEED"
elif [ -n "${MATRIX_SEEDS:-}" ]; then
	SETS="runs=$MATRIX_SEEDS"
else
	SETS="tune=${MATRIX_TUNE:-0-14} report=${MATRIX_REPORT:-1000-1014}"
fi
# Upper bound on one run: they take 30-60 s (an 8-rank lab's agents take
# their time to load their probes on a busy host).
RUN_BOUND_S=300

start=$(date +%s)
failed=0
echo "scenario matrix, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); sets: $SETS"
for set in $SETS; do
	for seed in $(python3 tests/bench/matrix.py seeds "${set#*=}"); do
		n=$(cat "$RESULTS" 2>/dev/null | wc -l)
		timeout -k 10 $RUN_BOUND_S bash tests/bench/matrix_run.sh "$seed" "$RESULTS" \
			>"$WORK/run.out" 2>&1
		rc=$?
		if [ $rc != 0 ] || [ "$(wc -l <"$RESULTS")" = "$n" ]; then
			echo "seed $seed: the run failed (exit $rc):"
			tail -n 5 "$WORK/run.out" | sed 's/^/    /'
			failed=$((failed + 1))
			continue
		fi
		python3 tests/bench/matrix.py line "$WORK/expect" "$(tail -n 1 "$RESULTS")"
	done
done
python3 tests/bench/matrix.py score "$WORK/expect" "$RESULTS" $SETS
echo "matrix: $(($(date +%s) - start)) s, $failed runs failed"
[ "$failed" = 0 ]
