#!/bin/bash
# SPDX-License-Identifier: MIT
# kill -9 the agent while it writes, 20 times on the same database: each time
# PRAGMA integrity_check is ok and every tick the agent had reported as
# committed (fabmon_store_last_tick_timestamp_seconds on /metrics just before
# the kill) is in the file: at most the tick in flight is lost; and the
# samples staged by a killed agent are packed by the next one exactly once.
. tests/lib.sh

db=$WORK/crash.db
port=$(free_port)
for i in $(seq 1 20); do
	start_agent "$port" --db "$db" --interval 100ms --collectors netdev,qdisc
	# let it write a few ticks; vary the moment of the kill
	sleep 0.$((3 + i % 6))
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
done
n=$(sqlite3 "$db" "SELECT count(*) FROM ticks")
# every tick stored one collector_up sample: none lost or packed twice when
# the next agent packed what the killed one had staged
s=$(stored_count "$db" fabmon_collector_up --label collector=netdev)
[ "$s" = "$n" ] || fail "$n ticks but $s fabmon_collector_up{collector=\"netdev\"} samples"
echo "20 kill -9 runs: integrity ok every time; $n ticks, each with its samples"
exit 0
