#!/bin/bash
# SPDX-License-Identifier: MIT
# All-to-all on four ranks over TCP, the agent on lab rank 2 (its raw
# tracepoints see every rank's sockets, so it compares the paths to all four
# receivers). The switch ports run at 400 Mbit/s, so that links, not the
# lab's two CPUs, set what each path delivers, as on a fabric. Clean: no
# event. Then the switch port towards rank 3 drops to 50 Mbit/s mid-run:
# every sender's path to rank 3 collapses while the paths to the others do
# not, and an incast naming 198.18.0.3 opens, and closes once the port is
# back. No other event is raised. The fault is given 8 s: the rule holds
# `incast_for` (1.5 s) after two slow 1 MiB transfers set the receiver's
# median, about 2 s in all, and a 2-core VM at times takes twice that.
. tests/lib.sh
. tests/lab/lab.sh
need_root
[ -x "${LAB_BIN:-$PWD/build/lab}/loadgen" ] || fail "no loadgen in ${LAB_BIN:-$PWD/build/lab}"
lab_up 4
for r in 1 2 3 4; do lab_shape "$LAB-p$r" 400mbit; done
lab_agent 2 --db "$WORK/r.db" --interval 100ms --collectors bpf --interfaces eth0
culprit=peer=198.18.0.3

lab_loadgen all-to-all 8 --size 1M
lab_loadgen_wait
lab_expect "$WORK/r.db"
echo "clean all-to-all: $(grep -c '^ *[0-9]' "$WORK/all-to-all.0.out") iterations, no event"

lab_loadgen all-to-all 15 --size 1M
sleep 3
lab_fault incast $culprit 8 "lab_shape $LAB-p3 50mbit" "lab_shape $LAB-p3 400mbit"
lab_loadgen_wait
lab_expect "$WORK/r.db" incast $culprit
exit 0
