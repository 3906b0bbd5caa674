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

lab_clean_ring "$WORK/r.db" 8

lab_loadgen ring-allreduce 14
sleep 3
lab_fault straggler $culprit 6 "lab_shape $LAB-p3 100mbit" "lab_shape $LAB-p3 200mbit"
lab_loadgen_wait
lab_expect "$WORK/r.db" straggler $culprit
# The upstream gauge names each link's sender's own receiving: rank 4's
# data comes from rank 3, fed by the slow link; rank 3's from rank 2, fed by
# a full-rate one. Medians over one second within the fault's first two (it
# held 2 s past its event's open).
upstream() {
	"$FABMON" history --db "$WORK/r.db" --since $((LAB_T0 / 1000 + 1)) \
		--until $((LAB_T0 / 1000 + 2)) --step 100ms --agg last --csv \
		--label peer="$1" fabmon_tcp_upstream_busy_rate_bytes_per_second |
		awk -F, 'NR > 1 && $NF > 0 { print $NF }' | sort -g |
		awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : 0 }'
}
up4=$(upstream 198.18.0.4)
up3=$(upstream 198.18.0.3)
printf "upstream busy rate during the fault: rank 4's %.0f B/s, rank 3's %.0f B/s\n" "$up4" "$up3"
awk -v a="$up4" -v b="$up3" 'BEGIN { exit !(a > 0 && a < 0.7 * b) }' ||
	fail "rank 4's upstream ($up4) does not read the slow link under rank 3's ($up3)"
exit 0
