#!/bin/bash
# SPDX-License-Identifier: MIT
# SIGHUP reloads the config (a bad one is reported, the old one kept);
# SIGTERM and SIGINT finish the tick, close the database and exit 0.
. tests/lib.sh

conf=$WORK/fabmon.conf
printf '[agent]\ninterval = 200ms\ncollectors = netdev\n' >"$conf"
port=$(free_port)
start_agent "$port" --config "$conf" --db "$WORK/h.db"
[ "$(metric "$port" fabmon_tick_interval_seconds)" = 0.2 ] || fail "interval not from the file"

wait_for() { # SERIES VALUE: up to 5 s
	for _ in $(seq 50); do
		[ "$(metric "$port" "$1")" = "$2" ] && return 0
		sleep 0.1
	done
	fail "$1 never became $2 (is $(metric "$port" "$1"))"
}
printf '[agent]\ninterval = 300ms\ncollectors = netdev,qdisc\n' >"$conf"
kill -HUP "$AGENT_PID"
wait_for fabmon_tick_interval_seconds 0.3
wait_for 'fabmon_collector_up{collector="qdisc"}' 1
grep -q "configuration reloaded" "$WORK/agent.log" || fail "no reload message"

printf '[agent]\ninterval = yesterday\n' >"$conf"
kill -HUP "$AGENT_PID"
sleep 0.5
grep -q "reload: $conf:2: bad value 'yesterday' for 'interval'.*keeping the running configuration" \
	"$WORK/agent.log" || { cat "$WORK/agent.log"; fail "bad reload not reported"; }
kill -0 "$AGENT_PID" || fail "agent died on a bad reload"
[ "$(metric "$port" fabmon_tick_interval_seconds)" = 0.3 ] || fail "running config not kept"

for sig in TERM INT; do
	t=$(metric "$port" fabmon_store_last_tick_timestamp_seconds)
	kill -$sig "$AGENT_PID"
	wait "$AGENT_PID"
	rc=$?
	[ $rc -eq 0 ] || fail "SIG$sig: exit $rc, want 0"
	grep -q "SIG$sig: stopping" "$WORK/agent.log" || fail "SIG$sig: no stop message"
	want=$(awk -v t="$t" 'BEGIN { printf "%.0f", t * 1000 }')
	have=$(sqlite3 "$WORK/h.db" "SELECT max(ts_ms) FROM ticks")
	[ "$have" -ge "$want" ] || fail "SIG$sig: tick $want lost"
	[ ! -e "$WORK/h.db-wal" ] || [ ! -s "$WORK/h.db-wal" ] ||
		fail "SIG$sig: WAL not checkpointed on close"
	printf '[agent]\ninterval = 200ms\ncollectors = netdev\n' >"$conf"
	[ $sig = TERM ] && start_agent "$port" --config "$conf" --db "$WORK/h.db" --interval 200ms
done
exit 0
