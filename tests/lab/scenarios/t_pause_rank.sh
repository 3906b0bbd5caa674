#!/bin/bash
# SPDX-License-Identifier: MIT
# Ring all-reduce on four ranks over TCP, the agent on lab rank 2 (which
# sends to rank 3), switch ports at 400 Mbit/s, receive buffers of 1 MiB at
# most (a ring step's chunk, so a rank that stops reading closes its
# window rather than soaking up the ring's data). Clean: no event. Then rank
# 3's loadgen is stopped (SIGSTOP) mid-ring, as a rank that hangs in a
# kernel or a debugger would: it stops reading while its kernel goes on
# acknowledging, rank 2's data to it backs up behind a closed window, and a
# host_stall (cause host: the host, not the fabric) naming 198.18.0.3 opens
# once it has lasted host_stall_after; it closes after SIGCONT, and the
# ring finishes. No other event: no network stall, no straggler. Its
# evidence carries this host's CPU waiting share (the pressure collector).
. tests/lib.sh
. tests/lab/lab.sh
need_root
[ -x "${LAB_BIN:-$PWD/build/lab}/loadgen" ] || fail "no loadgen in ${LAB_BIN:-$PWD/build/lab}"
lab_up 4
for r in 1 2 3 4; do
	lab_shape "$LAB-p$r" 400mbit
	lab_exec $r sysctl -qw net.ipv4.tcp_rmem="4096 131072 1048576" || fail "unable to set tcp_rmem"
done
lab_agent 2 --db "$WORK/r.db" --interval 100ms --collectors bpf,pressure --interfaces eth0
culprit=peer=198.18.0.3

lab_clean_ring "$WORK/r.db" 5

lab_loadgen ring-allreduce 10
sleep 3
lab_loadgen_pid 3
rank3=$LAB_LOADGEN_PID
lab_fault host_stall $culprit 4 "kill -STOP $rank3" "kill -CONT $rank3"
lab_loadgen_wait
lab_expect "$WORK/r.db" host_stall $culprit
# what this host knows of its CPU: the pressure collector's share, in [0, 1]
share=$(sqlite3 "$WORK/r.db" "SELECT json_extract(evidence, '$.host_cpu_waiting_share') FROM events WHERE kind = 'host_stall' LIMIT 1")
awk -v s="$share" 'BEGIN { exit !(s != "" && s >= 0 && s <= 1) }' ||
	fail "host_stall evidence without this host's CPU waiting share: '$share'"
echo "host_stall evidence: host_cpu_waiting_share $share"
exit 0
