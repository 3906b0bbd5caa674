#!/bin/bash
# SPDX-License-Identifier: MIT
# A scrape never waits for a collector: block the netdev collector on a
# counter file that is a FIFO with no writer (its open() blocks), and
# /metrics still answers at once with the last tick's snapshot.
. tests/lib.sh

root=$WORK/sys
netdev_tree "$root" lab0 100
port=$(free_port)
start_agent "$port" --db "$WORK/s.db" --interval 200ms --collectors netdev --sysfs-root "$root"
fifo=$root/class/net/lab0/statistics/rx_bytes
rm "$fifo" && mkfifo "$fifo"
on_exit "echo 1 >'$fifo' &"
sleep 1 # the tick is now stuck in open()
before=$(metric "$port" fabmon_ticks_total)
for i in 1 2 3 4 5; do
	code=$(curl -s -o "$WORK/m" -w '%{http_code} %{time_total}' --max-time 1 "http://127.0.0.1:$port/metrics") ||
		fail "scrape $i did not answer within 1 s while the collector was blocked"
	echo "scrape $i during the blocked tick: $code s"
	grep -q '^fabmon_netdev_receive_bytes_total{interface="lab0"} 100$' "$WORK/m" ||
		fail "scrape $i lacks the last snapshot"
done
after=$(metric "$port" fabmon_ticks_total)
[ "$before" = "$after" ] || fail "ticks advanced ($before -> $after): the collector was not blocked"
curl -sf "http://127.0.0.1:$port/healthz" >/dev/null || fail "/healthz failed during a short stall"
# unblock: a writer opens the FIFO, the read returns, ticks resume
echo 250 >"$fifo"
rm -f "$fifo"; echo 300 >"$fifo"
i=0
while [ $i -lt 50 ]; do
	now=$(metric "$port" fabmon_ticks_total)
	[ "${now:-0}" -gt "$after" ] && break
	sleep 0.1; i=$((i + 1))
done
[ "${now:-0}" -gt "$after" ] || fail "ticks did not resume after the collector was unblocked"
exit 0
