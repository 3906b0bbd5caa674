#!/bin/bash
# SPDX-License-Identifier: MIT
# Prefill -> decode hand-offs of 4 MiB over TCP between two ranks, the agent
# on the prefill rank (198.18.0.1), switch ports at 400 Mbit/s. Clean: every
# hand-off takes about the same time, no event, and the durations show in the
# fabmon_tcp_transfer_duration_seconds histogram. Then the port towards the
# decode rank is congested down to 100 Mbit/s: hand-offs take four times as
# long as their baseline and a slow_handoff naming 198.18.0.2 opens, and
# closes once the port is back. No other event.
. tests/lib.sh
. tests/lab/lab.sh
need_root
[ -x "${LAB_BIN:-$PWD/build/lab}/loadgen" ] || fail "no loadgen in ${LAB_BIN:-$PWD/build/lab}"
lab_up 2
for r in 1 2; do lab_shape "$LAB-p$r" 400mbit; done
lab_agent 1 --db "$WORK/r.db" --interval 100ms --collectors bpf --interfaces eth0
culprit=peer=198.18.0.2

lab_loadgen handoff 5
lab_loadgen_wait
lab_expect "$WORK/r.db"
series='fabmon_tcp_transfer_duration_seconds_count{peer="198.18.0.2",source="bpf"}'
n=$(lab_metric "$series")
iters=$(grep -c '^ *[0-9]' "$WORK/handoff.1.out")
# each hand-off is a transfer (the last may end after the agent's last
# read); a sender descheduled mid-buffer for longer than the path needs to
# drain it ends one early (everything sent was acknowledged) and its rest
# counts as another, which the lab's two CPUs do now and then
[ "${n:-0}" -ge $((iters - 1)) ] && [ "$n" -le $((2 * iters)) ] ||
	fail "transfers counted ${n:-none}, hand-offs made $iters"
sum=$(lab_metric 'fabmon_tcp_transfer_duration_seconds_sum{peer="198.18.0.2",source="bpf"}')
echo "clean hand-offs: $iters, transfers counted $n, mean $(awk -v s="$sum" -v n="$n" 'BEGIN { printf "%.1f", 1000 * s / n }') ms, no event"

lab_loadgen handoff 14
sleep 3
lab_fault slow_handoff $culprit 6 "lab_shape $LAB-p2 100mbit" "lab_shape $LAB-p2 400mbit"
lab_loadgen_wait
lab_expect "$WORK/r.db" slow_handoff $culprit
exit 0
