#!/bin/bash
# SPDX-License-Identifier: MIT
# A full disk: the agent keeps serving /metrics, says once that the store is
# failing (log and fabmon_store_up 0), and writes again when space returns,
# with an intact database and every committed tick kept.
. tests/lib.sh
need_root
mnt=$WORK/mnt
mkdir -p "$mnt"
mount -t tmpfs -o size=4m fabmon-test "$mnt" || skip "unable to mount a tmpfs"
on_exit "umount -l '$mnt'"
port=$(free_port)
start_agent "$port" --db "$mnt/f.db" --interval 100ms --collectors netdev,qdisc
sleep 0.5
[ "$(metric "$port" fabmon_store_up)" = 1 ] || fail "store not up at start"
before=$(sqlite3 "$mnt/f.db" "SELECT count(*) FROM ticks")
# fill the file system; dd stops at ENOSPC
dd if=/dev/zero of="$mnt/filler" bs=64k 2>/dev/null
for _ in $(seq 50); do
	[ "$(metric "$port" fabmon_store_up)" = 0 ] && break
	sleep 0.1
done
[ "$(metric "$port" fabmon_store_up)" = 0 ] || fail "store_up stayed 1 on a full disk"
errs=$(metric "$port" fabmon_store_errors_total)
sleep 0.5
[ "$(metric "$port" fabmon_store_errors_total)" -gt "$errs" ] || fail "errors not counted per tick"
n=$(grep -c "store: .*retrying every tick" "$WORK/agent.log")
[ "$n" = 1 ] || fail "store failure logged $n times, want once"
curl -sf "http://127.0.0.1:$port/metrics" | grep -q '^fabmon_netdev_receive_bytes_total' ||
	fail "/metrics not served while the disk is full"
rm -f "$mnt/filler"
for _ in $(seq 50); do
	[ "$(metric "$port" fabmon_store_up)" = 1 ] && break
	sleep 0.1
done
[ "$(metric "$port" fabmon_store_up)" = 1 ] || fail "store did not resume when space returned"
grep -q "store: writing again" "$WORK/agent.log" || fail "no resume message"
grep "store:" "$WORK/agent.log"
kill "$AGENT_PID"; wait "$AGENT_PID"
[ "$(sqlite3 "$mnt/f.db" 'PRAGMA integrity_check')" = ok ] || fail "database damaged"
after=$(sqlite3 "$mnt/f.db" "SELECT count(*) FROM ticks")
[ "$after" -gt "$before" ] || fail "ticks lost: $before before, $after after"
echo "full disk: $errs+ failed ticks, resumed; $before -> $after ticks, integrity ok"
exit 0
