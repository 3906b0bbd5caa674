#!/bin/bash
# SPDX-License-Identifier: MIT
# Ring all-reduce on four ranks over TCP, the agent on lab rank 1 (its raw
# tracepoints see every rank's sockets: the four ring links). Every switch
# port runs at 200 Mbit/s. Clean: no event. Then the port towards rank 3
# runs at half rate: the ring goes at the speed of that link, and a
# straggler naming 198.18.0.3 opens (the link 2 -> 3 delivers half of what
# the other three do), and closes once the port is back. No other event.
. tests/lib.sh
. tests/lab/lab.sh
need_root
[ -x "${LAB_BIN:-$PWD/build/lab}/loadgen" ] || fail "no loadgen in ${LAB_BIN:-$PWD/build/lab}"
lab_up 4
for r in 1 2 3 4; do lab_shape "$LAB-p$r" 200mbit; done
lab_agent 1 --db "$WORK/r.db" --interval 100ms --collectors bpf --interfaces eth0
culprit=peer=198.18.0.3

lab_loadgen ring-allreduce 8
lab_loadgen_wait
lab_expect "$WORK/r.db"
echo "clean ring: $(grep -c '^ *[0-9]' "$WORK/ring-allreduce.0.out") iterations, no event"

lab_loadgen ring-allreduce 14
sleep 3
lab_fault straggler $culprit 6 "lab_shape $LAB-p3 100mbit" "lab_shape $LAB-p3 200mbit"
lab_loadgen_wait
lab_expect "$WORK/r.db" straggler $culprit
exit 0
