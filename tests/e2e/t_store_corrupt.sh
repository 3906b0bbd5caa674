#!/bin/bash
# SPDX-License-Identifier: MIT
# What the store reads back is checked, never trusted (README, Storage):
# the staged records of a killed agent whose series id no series has
# (0x08000001 and 0xfffffff0, as flipped bits make them: the first had the
# next agent allocate 1 GiB, the second failed its every tick) are skipped
# by the next agent, which stays ready and writing (fabmon_store_up 1),
# counts them in fabmon_store_corrupt_records_total and says so once in its
# log.
. tests/lib.sh
command -v sqlite3 >/dev/null || skip "no sqlite3"
db=$WORK/c.db
root=$WORK/sys
netdev_tree "$root" eth0 1
netdev_tree "$root" eth1 1
port=$(free_port)
run() { start_agent "$port" --db "$db" --interval 100ms --collectors netdev --sysfs-root "$root"; }
stop() { kill -TERM "$AGENT_PID" && wait "$AGENT_PID"; }

run
sleep 1
kill -9 "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null
# a stage blob: a version byte, then 21 bytes a record, the id first
newest=$(sqlite3 "$db" "SELECT max(ts_ms) FROM stage")
[ -n "$newest" ] || fail "the killed agent staged nothing"
sqlite3 "$db" "UPDATE stage SET data = substr(data, 1, 1) || x'01000008' || substr(data, 6)
	WHERE ts_ms = $newest;
	UPDATE stage SET data = substr(data, 1, 22) || x'f0ffffff' || substr(data, 27)
	WHERE ts_ms = (SELECT max(ts_ms) FROM stage WHERE ts_ms < $newest)" || fail "sqlite3"
run
sleep 0.5
[ "$(metric "$port" fabmon_store_up)" = 1 ] ||
	fail "store_up $(metric "$port" fabmon_store_up) after corrupt staged ids: $(cat "$WORK/agent.log")"
n=$(metric "$port" 'fabmon_store_corrupt_records_total{kind="stage"}')
[ "$n" = 2 ] || fail "fabmon_store_corrupt_records_total{kind=\"stage\"} is '$n', not 2"
[ "$(grep -c 'corrupt stage record' "$WORK/agent.log")" = 1 ] ||
	fail "not said once: $(cat "$WORK/agent.log")"
stop
echo "corrupt staged ids skipped and counted, said once; the agent kept writing (store_up 1)"
exit 0
