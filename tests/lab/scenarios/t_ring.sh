#!/bin/bash
# SPDX-License-Identifier: MIT
# Ring all-reduce on four ranks over TCP, the agent on lab rank 2 (it sends
# to rank 3), switch ports at 400 Mbit/s. Clean: no event. Then the switch
# port towards rank 3 goes down mid-ring: rank 2's data to rank 3 and rank
# 3's to rank 4 sit unacknowledged, and a stall naming 198.18.0.3 — the rank
# cut off both ways, nothing of its acknowledged — opens; rank 4's stall is
# its victim's and not raised. It closes once the link is back. No other
# event.
. tests/lib.sh
. tests/lab/lab.sh
need_root
[ -x "${LAB_BIN:-$PWD/build/lab}/loadgen" ] || fail "no loadgen in ${LAB_BIN:-$PWD/build/lab}"
lab_up 4
for r in 1 2 3 4; do lab_shape "$LAB-p$r" 400mbit; done
lab_agent 2 --db "$WORK/r.db" --interval 100ms --collectors bpf --interfaces eth0
culprit=peer=198.18.0.3

lab_clean_ring "$WORK/r.db" 4

lab_loadgen ring-allreduce 8
sleep 2
lab_fault stall $culprit 3 "ip -n $LAB-sw link set $LAB-p3 down" "ip -n $LAB-sw link set $LAB-p3 up"
lab_loadgen_wait
# TCP backs its retransmission timer off while the link is down, so when it
# comes back a connection to rank 3 can move once and stall again before its
# next retransmission. A wait of a quarter of stall_after holds the event
# open (STALL_HOLD_SHARE); one that stays under that for three ticks first
# still shows as a second stall event on the culprit, never on anyone else
lab_expect "$WORK/r.db" stall $culprit 2
# cut off: nothing to or from rank 3 acknowledged for the read bound either
age=$(sqlite3 "$WORK/r.db" "SELECT json_extract(evidence, '$.progress_age_seconds') FROM events ORDER BY id LIMIT 1")
echo "rank 3's last ack either way, at the stall's first tick: ${age} s before"
awk -v a="${age:-0}" 'BEGIN { exit !(a >= 0.3) }' || fail "progress age $age under the read bound"
exit 0
