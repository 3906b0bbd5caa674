#!/bin/bash
# SPDX-License-Identifier: MIT
# A connection reset with data outstanding leaves no stall behind. Rank 2
# streams to rank 1, whose reader is stopped (SIGSTOP) until its window
# closes; then the reader is killed, its kernel answers the next segment
# with a reset, and the sender's socket goes from ESTABLISHED straight to
# CLOSE. That close must reach the collector, which forgets the connection:
# the sender-side ack stall towards rank 1 ends within a tick or two.
# Before the key took inet_sport, the reset's close missed the entry (the
# kernel zeroes skc_num first) and the stall grew until the entry aged out.
. tests/lib.sh
. tests/lab/lab.sh
need_root
lab_up 2
lab_agent 2 --db "$WORK/r.db" --interval 100ms --collectors bpf --interfaces eth0
[ "$(lab_metric 'fabmon_probe_up{probe="tcp_state"}')" = 1 ] || fail "tcp_state probe not up"
stall='fabmon_tcp_ack_stall_seconds{peer="198.18.0.1",source="bpf"}'
lab_exec 1 timeout 30 nc -l -p 5003 >/dev/null &
sleep 0.3
reader=$(lab_exec 1 pgrep -n -f 'nc -l -p 5003') || fail "no reader"
head -c 500000000 /dev/zero | lab_exec 2 timeout 30 nc 198.18.0.1 5003 2>/dev/null &
sender=$!
sleep 0.5
kill -STOP "$reader"
# the window fills and closes: the sender waits (a stall, the reader's)
for _ in $(seq 40); do
	v=$(lab_metric "$stall")
	[ -n "$v" ] && awk -v v="$v" 'BEGIN { exit !(v >= 1) }' && break
	sleep 0.1
done
awk -v v="${v:-0}" 'BEGIN { exit !(v >= 1) }' || fail "no stall while the reader is stopped: ${v:-absent}"
echo "reader stopped: ack stall $v s"
kill -KILL "$reader"
wait "$sender" 2>/dev/null
t0=$(date +%s%3N)
for _ in $(seq 30); do
	v=$(lab_metric "$stall")
	[ -z "$v" ] || [ "$v" = 0 ] && break
	sleep 0.1
done
[ -z "$v" ] || [ "$v" = 0 ] || fail "ack stall still ${v} s 3 s after the reset"
echo "reader killed, connection reset: the stall was gone after $(($(date +%s%3N) - t0)) ms"
