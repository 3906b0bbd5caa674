#!/bin/bash
# SPDX-License-Identifier: MIT
# Incast in all-to-all: four ranks run loadgen's all-to-all over TCP; clean,
# rank 1's agent raises nothing; with the switch port towards rank 3
# throttled (tbf, tiny buffer), it names rank 3 as the incast receiver and
# nothing else.
. tests/lib.sh
. tests/lab/lab.sh
need_root
LOADGEN=${LAB_BIN:-$PWD/build/lab}/loadgen
[ -x "$LOADGEN" ] || fail "no $LOADGEN"
lab_up 4
lab_agent 1 --db "$WORK/i.db" --interval 100ms --collectors bpf --interfaces eth0
base=21000
alltoall() { # SECONDS: all four ranks, waits for them
	base=$((base + 10))
	pids=""
	for r in 0 1 2 3; do
		lab_spawn $((r + 1)) timeout -k 1 $(($1 + 20)) "$LOADGEN" --rank $r --ranks 4 \
			--peers 198.18.0.1,198.18.0.2,198.18.0.3,198.18.0.4 --port $base \
			--pattern all-to-all --transport tcp --size 4M --iters 100000 --duration "$1" \
			>"$WORK/a2a.$r.out" 2>&1
		pids="$pids $LAB_PID"
	done
	for p in $pids; do
		wait "$p" || { cat "$WORK"/a2a.*.out; fail "loadgen failed"; }
	done
}
events() { lab_metric "fabmon_events_total{kind=\"$1\"}"; }

alltoall 4
[ "$(events incast)" = 0 ] || { grep event "$WORK/agent.log"; fail "incast on clean all-to-all"; }
[ "$(events stall)" = 0 ] || fail "stall on clean all-to-all"
echo "clean all-to-all: $(grep -c '^ ' "$WORK/a2a.0.out" 2>/dev/null || echo some) iterations, no event"

ip netns exec "$LAB-sw" tc qdisc add dev "$LAB-p3" root tbf rate 20mbit burst 4k limit 4500 ||
	fail "unable to throttle the port towards rank 3"
t0=$(date +%s%3N)
alltoall 5
[ "$(events incast)" -ge 1 ] || { lab_scrape | grep -E 'tcp_srtt'; fail "no incast event"; }
grep "event incast opened" "$WORK/agent.log"
grep -q "event incast opened: peer=198.18.0.3," "$WORK/agent.log" || fail "incast not on rank 3"
! grep "event incast opened" "$WORK/agent.log" | grep -qv "peer=198.18.0.3," ||
	fail "incast named another peer"
start=$(sqlite3 "$WORK/i.db" "SELECT min(start_ms) FROM events WHERE kind = 'incast'")
echo "incast on peer=198.18.0.3 from $((start - t0)) ms after the throttled run began"
exit 0
