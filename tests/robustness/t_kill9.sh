#!/bin/bash
# SPDX-License-Identifier: MIT
# kill -9 the agent while it writes, KILL9_RUNS times (default 50; make bench 100) on the
# same database, at a moment that varies from 0 to 300 ms after it is ready:
# each time PRAGMA integrity_check is ok; every tick the agent had reported as
# committed (fabmon_store_last_tick_timestamp_seconds on /metrics just before
# the kill) is in the file, so at most the tick in flight is lost; and every
# stored tick has exactly one sample of a series reported every tick, read as
# an operator reads them (the staged ticks of a killed agent are packed by
# the next one: none lost, none packed twice). Prints the figures.
. tests/lib.sh

runs=${KILL9_RUNS:-50}
db=$WORK/crash.db
port=$(free_port)
t0=$(date +%s%N)
for i in $(seq 1 "$runs"); do
	start_agent "$port" --db "$db" --interval 100ms --collectors netdev,qdisc --interfaces lo
	# 0..299 ms: before, during and between the writes of a 100 ms tick
	sleep "$(printf '0.%03d' $((RANDOM % 300)))"
	t=$(metric "$port" fabmon_store_last_tick_timestamp_seconds)
	kill -9 "$AGENT_PID"
	wait "$AGENT_PID" 2>/dev/null
	[ -n "$t" ] || fail "run $i: no fabmon_store_last_tick_timestamp_seconds"
	ok=$(sqlite3 "$db" "PRAGMA integrity_check")
	[ "$ok" = ok ] || fail "run $i: integrity_check says: $ok"
	want=$(awk -v t="$t" 'BEGIN { printf "%.0f", t * 1000 }')
	have=$(sqlite3 "$db" "SELECT max(ts_ms) FROM ticks")
	[ "$have" -ge "$want" ] || fail "run $i: last committed tick $want missing (newest is $have)"
	gap=$(sqlite3 "$db" "SELECT count(*) FROM ticks WHERE ts_ms = $want")
	[ "$gap" = 1 ] || fail "run $i: tick $want not stored"
	# every tick stored one collector_up sample: none lost or packed twice
	# when this agent packed what the one before had staged
	n=$(sqlite3 "$db" "SELECT count(*) FROM ticks")
	s=$(stored_count "$db" fabmon_collector_up --label collector=netdev)
	[ "$s" = "$n" ] || fail "run $i: $n ticks but $s fabmon_collector_up{collector=\"netdev\"} samples"
done
ms=$((($(date +%s%N) - t0) / 1000000))
blocks=$(sqlite3 "$db" "SELECT count(*) FROM blocks")
staged=$(sqlite3 "$db" "SELECT count(*) FROM stage")
echo "$runs kill -9 runs in $ms ms: integrity ok every time, every committed tick kept;" \
	"$n ticks, each with its samples ($blocks packed blocks, $staged ticks staged)"
exit 0
