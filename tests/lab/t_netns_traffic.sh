#!/bin/bash
# SPDX-License-Identifier: MIT
# End to end on a real link: the agent runs in rank 1 of a two-rank lab;
# traffic sent from rank 2 shows up in /metrics (counter and rate) and in
# SQLite within one tick of when it was sent.
. tests/lib.sh
. tests/lab/lab.sh
need_root
lab_up 2
db=$WORK/lab.db
# ip netns exec gives the agent the namespace's own /sys/class/net
lab_agent 1 --db "$db" --interval 500ms --interfaces eth0
m() { lab_metric "$1"; }
series='fabmon_netdev_receive_bytes_total{interface="eth0"}'
lab_exec 2 ping -c 3 -i 0.2 -W 1 198.18.0.1 >/dev/null || fail "no path from rank 2 to rank 1"
sleep 1.2
before=$(m "$series")
t0=$(($(date +%s) - 1))
ticks0=$(m fabmon_ticks_total)
[ -n "$before" ] || { cat "$WORK/agent.log"; fail "no $series"; }
# 200 echo requests of 1400 bytes of payload: 200 * (1400 + 8 + 20 + 14) bytes
# arrive at rank 1's eth0 (ICMP, IPv4 and Ethernet headers)
lab_exec 2 ping -q -c 200 -i 0.005 -s 1400 -W 1 198.18.0.1 >/dev/null || fail "ping failed"
sent_ticks=$(m fabmon_ticks_total)
want=$(awk -v b="$before" 'BEGIN { printf "%.0f", b + 200 * 1442 }')
# rates times the nominal 500 ms: within a few % of the bytes
want0=$((200 * 1442 * 9 / 10))
seen=""
for _ in $(seq 30); do
	now=$(m "$series")
	if awk -v n="$now" -v w="$want" 'BEGIN { exit !(n >= w) }'; then seen=$(m fabmon_ticks_total); break; fi
	sleep 0.1
done
[ -n "$seen" ] || fail "rx bytes $now never reached $want"
lag=$((seen - sent_ticks))
echo "traffic visible $lag tick(s) after it was sent (ticks $ticks0 -> $sent_ticks -> $seen)"
[ $lag -le 1 ] || fail "traffic took $lag ticks to appear, want <= 1"
# what the database says, read as an operator would: the rates of each
# tick (500 ms apart: one a 100 ms step) since before the burst, and what
# they add up to
hist() {
	"$FABMON" history fabmon_netdev_receive_bytes_total --db "$db" --label interface=eth0 \
		--since "$t0" --until now --step 100ms --agg "$1" --json
}
rate=$(hist max | jq '[.points[][1]] | max')
stored=$(hist avg | jq '[.points[][1]] | add * 0.5 | floor')
echo "stored rx bytes since before the burst $stored (want >= $want0), peak rate $rate B/s"
awk -v s="$stored" -v w="$want0" 'BEGIN { exit !(s >= w) }' || fail "SQLite lags: $stored < $want0"
awk -v r="$rate" 'BEGIN { exit !(r > 100000) }' || fail "stored rate $rate too low for the burst"
exit 0
