#!/bin/bash
# SPDX-License-Identifier: MIT
# One writer a database: while an agent writes it, a second agent and
# `fabmon replay --db` on the same file are refused (exit 1, saying why) and
# the file is left as it was; readers (history, snapshot) still work; once the
# first agent has stopped, another may write it.
. tests/lib.sh
LAB_BIN=${LAB_BIN:-$PWD/build/lab}
[ -x "$LAB_BIN/pcapgen" ] || fail "no pcapgen in $LAB_BIN"
db=$WORK/w.db
root=$WORK/sys
netdev_tree "$root" eth0 1
port=$(free_port)
start_agent "$port" --db "$db" --interval 100ms --collectors netdev --sysfs-root "$root"
first=$AGENT_PID
"$FABMON" agent --db "$db" --listen "127.0.0.1:$((port + 1))" --collectors netdev \
	--sysfs-root "$root" >"$WORK/second.log" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "being written by another fabmon" "$WORK/second.log" ||
	fail "a second agent on the same database: exit $rc, $(cat "$WORK/second.log")"
"$LAB_BIN/pcapgen" --output "$WORK/c.pcap" --packets 100 >/dev/null || fail "pcapgen"
"$FABMON" replay --db "$db" "$WORK/c.pcap" >"$WORK/replay.log" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "being written by another fabmon" "$WORK/replay.log" ||
	fail "replay --db on a database an agent writes: exit $rc, $(cat "$WORK/replay.log")"
[ "$(stored_count "$db" fabmon_roce_packets_total 2>/dev/null)" = 0 ] || fail "the refused replay wrote"
"$FABMON" history --db "$db" --since 1m fabmon_collector_up >/dev/null ||
	fail "history while the agent writes"
kill -TERM "$first"
wait "$first"
start_agent "$port" --db "$db" --interval 100ms --collectors netdev --sysfs-root "$root"
echo "a second writer refused (agent and replay --db, exit 1), readers served, the next agent writes"
exit 0
