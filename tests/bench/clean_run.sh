#!/bin/bash
# SPDX-License-Identifier: MIT
# The clean run of `make bench` (block "detect"): a 4-rank lab whose switch
# ports all run at 400 Mbit/s, the agent on rank 2 as the scenarios run it
# (100 ms ticks) with the bpf, netdev, qdisc, sockets and pressure
# collectors on eth0, and loadgen cycling ring all-reduce, all-to-all,
# all-gather and a hand-off (rank 0 -> 1) over TCP, CLEAN_PHASE_SECS each
# (default 30), for CLEAN_SECS in all (default 600); with CLEAN_LOAD=stress,
# stress-ng keeps both cores busy all along. No fault: every event it
# raises is a false one. Prints the events by kind and subject (each with
# its evidence), the ticks run and the iterations each pattern completed,
# then one line for run.sh (H: the host_stall events among E):
#   clean: seconds S ticks T events E phases P failed_phases F host_stall H
# Exits 0 when the run went through (whatever it raised), 1 when it could
# not (lab, agent or database); a loadgen rank that fails is counted, not
# fatal. Environment: FABMON, LAB_BIN (loadgen's directory); run from the
# repository root. Everything it starts dies with the lab on exit.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh
. tests/lab/lab.sh
need_root
[ -x "${LAB_BIN:-$PWD/build/lab}/loadgen" ] || fail "no loadgen in ${LAB_BIN:-$PWD/build/lab}"
command -v sqlite3 >/dev/null || skip "no sqlite3 (make deps)"
CLEAN_SECS=${CLEAN_SECS:-600}
PHASE_SECS=${CLEAN_PHASE_SECS:-30}
PATTERNS="ring-allreduce all-to-all all-gather handoff"
DB=$WORK/clean.db

# phase_wait PATTERN START_MS: waits for the ranks of the last lab_loadgen
# and adds "PATTERN ITERS RC START_MS" to $WORK/phases: the most iterations
# a rank's summary reports (the hand-off's bystanders report none), the
# worst exit status. Unlike lab_loadgen_wait it does not end the run on a
# failed rank.
phase_wait() {
	worst=0
	for p in $LAB_LOADGEN; do
		wait "$p" || worst=$?
	done
	iters=$(cat "$WORK/$1".[0-9]*.out | awk '/^# summary:/ && $4 > n { n = $4 } END { print n + 0 }')
	echo "$1 $iters $worst $2" >>"$WORK/phases"
	[ "$worst" = 0 ] || { echo "loadgen $1 failed (exit $worst):"; tail -n 3 "$WORK/$1".[0-9]*.out; }
}

lab_up 4
for r in 1 2 3 4; do lab_shape "$LAB-p$r" 400mbit; done
agent_t0=$(date +%s)
lab_agent 2 --db "$DB" --interval 100ms --collectors bpf,netdev,qdisc,sockets,pressure \
	--interfaces eth0
echo "lab $LAB: 4 ranks, switch ports tbf 400 Mbit/s; agent on rank 2, 100 ms ticks," \
	"bpf,netdev,qdisc,sockets,pressure on eth0; host load: ${CLEAN_LOAD:-none}"
if [ "${CLEAN_LOAD:-none}" = stress ]; then
	command -v stress-ng >/dev/null || skip "no stress-ng (make deps)"
	# in the switch's namespace, so that lab_down's kill takes its workers too
	lab_spawn sw stress-ng --cpu 2 --timeout $((CLEAN_SECS + 60)) --quiet
fi
echo "patterns: $PATTERNS (TCP, 4 MiB a rank an iteration), $PHASE_SECS s each, $CLEAN_SECS s in all"

: >"$WORK/phases"
t0=$(date +%s)
set -- $PATTERNS
# bounded: each phase is at most PHASE_SECS + loadgen's 20 s timeout (+30 s
# by timeout(1)), and none starts past CLEAN_SECS
while [ $(($(date +%s) - t0)) -lt "$CLEAN_SECS" ]; do
	left=$((CLEAN_SECS - ($(date +%s) - t0)))
	secs=$((left < PHASE_SECS ? left : PHASE_SECS))
	p0=$(date +%s%3N)
	lab_loadgen "$1" "$secs"
	phase_wait "$1" "$p0"
	kill -0 "$AGENT_PID" 2>/dev/null || { tail -n 20 "$WORK/agent.log"; fail "the agent died"; }
	set -- "${@:2}" "$1"
done
secs=$(($(date +%s) - t0))
ticks=$(lab_metric fabmon_ticks_total)
up=$(($(date +%s) - agent_t0))
kill "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null

awk '{ n[$1] += $2; p[$1]++; if ($3) f[$1]++ }
	END { for (k in n) printf "  %-15s %6d iterations in %d phases%s\n", k, n[k], p[k],
		f[k] ? sprintf(", %d failed", f[k]) : "" }' "$WORK/phases" | sort
echo "ticks: ${ticks:-?} in the agent's ${up} s (at 100 ms: $((up * 10)))"
events=$(sqlite3 "$DB" "SELECT count(*) FROM events") || fail "unable to read $DB"
host_stalls=$(sqlite3 "$DB" "SELECT count(*) FROM events WHERE kind = 'host_stall'")
ev=$(lab_events "$DB")
echo "events by kind and subject:${ev:- none}"
if [ "$events" -gt 0 ]; then
	echo "the events: start (s into the run), the pattern then running, kind, subject,"
	echo "duration (s, - while open), peak score, evidence:"
	sqlite3 -separator ' ' "$DB" "SELECT start_ms, kind, subject,
		coalesce((end_ms - start_ms) / 1000.0, '-'), peak_score, evidence FROM events" |
		awk -v t0="$t0" 'NR == FNR { at[NR] = $4; pat[NR] = $1; n = NR; next } {
			p = "(no load yet)"
			for (i = 1; i <= n; i++) if ($1 >= at[i]) p = pat[i]
			$1 = sprintf("  +%.1f %s", $1 / 1000 - t0, p)
			print
		}' "$WORK/phases" -
fi
awk -v s="$secs" -v t="${ticks:-0}" -v e="$events" -v h="$host_stalls" '{ p++; if ($3) f++ }
	END { printf "clean: seconds %d ticks %d events %d phases %d failed_phases %d host_stall %d\n",
		s, t, e, p, f, h }' "$WORK/phases"
exit 0
