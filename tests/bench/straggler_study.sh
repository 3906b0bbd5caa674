#!/bin/bash
# SPDX-License-Identifier: MIT
# Records a ring's per-tick TCP counters around repeated straggler faults,
# for tests/bench/straggler_replay.py to replay the straggler's open rule
# over (docs/testing.md: the straggler replay).
#
# A 4-rank lab whose switch ports run at 200 Mbit/s, as t_straggler; the
# agent on rank 1 at 100 ms ticks with the bpf collector; a 4 MiB ring
# all-reduce for STUDY_CLEAN seconds (default 40) with no fault, then
# STUDY_FAULTS times (default 4) the port towards rank 3 at half rate for
# 4 s and back for 4 s. STUDY_FAULTS=0 STUDY_CLEAN=600 is a clean run.
#
# Usage: straggler_study.sh OUT. Writes into directory OUT: onsets and offs
# (each fault's start and end, Unix ms, one a line), events (the agent's,
# as kind|subject|start_ms|open_ms|end_ms|evidence), and one CSV a metric
# (`fabmon history --csv` at 10 ms steps) for the straggler's inputs.
# Environment: FABMON (default build/fabmon), LAB_BIN (loadgen's directory,
# default build/lab); run as root from the repository root, after make.
# Everything it starts dies with the lab on exit.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. tests/lib.sh
. tests/lab/lab.sh
need_root
[ $# = 1 ] || fail "usage: straggler_study.sh OUT"
FABMON=${FABMON:-$PWD/build/fabmon}
[ -x "$FABMON" ] || fail "no fabmon at $FABMON (make)"
[ -x "${LAB_BIN:-$PWD/build/lab}/loadgen" ] || fail "no loadgen in ${LAB_BIN:-$PWD/build/lab}"
out=$1 clean=${STUDY_CLEAN:-40} faults=${STUDY_FAULTS:-4}
case "$clean$faults" in *[!0-9]*) fail "STUDY_CLEAN and STUDY_FAULTS are whole numbers" ;; esac
# history keeps 100000 steps a query: 10 ms steps cover 1000 s
[ $((clean + faults * 8)) -le 900 ] || fail "a run of over 900 s does not fit one 10 ms history query"
mkdir -p "$out" || fail "unable to make $out"
: >"$out/onsets"
: >"$out/offs"
lab_up 4
for r in 1 2 3 4; do lab_shape "$LAB-p$r" 200mbit; done
lab_agent 1 --db "$out/r.db" --interval 100ms --collectors bpf --interfaces eth0
t0=$(date +%s)
lab_loadgen ring-allreduce $((clean + faults * 8 + 4))
echo "ring all-reduce: ${clean} s clean, then $faults faults"
sleep "$clean"
for i in $(seq "$faults"); do
	lab_onset "lab_shape $LAB-p3 100mbit" >/dev/null
	echo "$LAB_T0" >>"$out/onsets"
	sleep 4
	lab_onset "lab_shape $LAB-p3 200mbit" >/dev/null
	echo "$LAB_T0" >>"$out/offs"
	sleep 4
	echo "fault $i of $faults done"
done
lab_loadgen_wait
kill "$AGENT_PID"
wait "$AGENT_PID"
sqlite3 "$out/r.db" "SELECT kind, subject, start_ms, open_ms, end_ms, evidence FROM events" \
	>"$out/events" || fail "unable to read the events of $out/r.db"
for m in acked_bytes_total busy_seconds_total delivery_rate_bytes_per_second \
	upstream_busy_rate_bytes_per_second; do
	"$FABMON" history --db "$out/r.db" --since "$t0" --step 10ms --agg last --csv \
		"fabmon_tcp_$m" >"$out/fabmon_tcp_$m.csv" || fail "unable to export fabmon_tcp_$m"
done
echo "$out: $(wc -l <"$out/onsets") faults, $(wc -l <"$out/events") events"
