#!/bin/bash
# SPDX-License-Identifier: MIT
# A lossy link through counter files: on a copy of the real mlx5_0 tree the
# test advances symbol_error beside the packets of a lightly used port (a bad
# cable or optic), and fabmon opens a lossy_link event with cause network on
# that port, then closes it when the errors stop. A clean port raises
# nothing. (Errors on a port near its capacity are a queue's: unit tests,
# test_detect_lossy.c; a writer this coarse cannot hold a rate near a
# port's capacity tick by tick.)
. tests/lib.sh
. tests/lab/lab.sh

lab_sysfs "$WORK/sys"
cnt=$WORK/sys/class/infiniband/mlx5_0/ports/1/counters
port=$(free_port)
start_agent "$port" --db "$WORK/l.db" --interval 100ms --collectors rdma --sysfs-root "$WORK/sys"
active=$(lab_active lossy_link device=mlx5_0,port=1)
total='fabmon_events_total{kind="lossy_link",cause="network"}'

# put FILE VALUE: writes a counter file whole, as the driver would
put() {
	echo "$2" >"$cnt/$1.new" && mv "$cnt/$1.new" "$cnt/$1"
}

# advance SECONDS ERRORS PACKETS WORDS [ONSET]: a step every 50 ms or so
# (bounded; slower on a loaded host), each of WORDS 4-byte words sent,
# PACKETS packets each way and ERRORS symbol errors; ONSET gets the time of
# the first step
advance() {
	data=$(cat "$cnt/port_xmit_data") tx=$(cat "$cnt/port_xmit_packets")
	rx=$(cat "$cnt/port_rcv_packets") errors=$(cat "$cnt/symbol_error")
	for _ in $(seq $(($1 * 20))); do
		[ -z "${5:-}" ] || [ -s "$5" ] || date +%s%3N >"$5"
		data=$((data + $4)) tx=$((tx + $3)) rx=$((rx + $3)) errors=$((errors + $2))
		put port_xmit_data $data
		put port_xmit_packets $tx
		put port_rcv_packets $rx
		put symbol_error $errors
		sleep 0.05
	done
}

# clean: 4 MB and 10000 packets each way a step, no errors
advance 2 0 10000 1000000
[ "$(metric "$port" "$total")" = 0 ] || fail "a lossy_link on a clean port"

# lossy: 20 symbol errors on 20000 packets a step (1000 per million), port light
advance 2 20 10000 1000000 "$WORK/onset" &
writer=$!
on_exit "kill $writer"
await_metric "$port" "$active" 1 2 || { cat "$WORK/agent.log"; fail "no lossy_link event on mlx5_0 port 1"; }
seen=$SEEN t0=$(cat "$WORK/onset")
wait $writer
advance 1 0 10000 1000000
await_metric "$port" "$active" "" 2 || fail "event did not close when the errors stopped"
[ "$(metric "$port" "$total")" = 1 ] || fail "want exactly one lossy_link"
kill "$AGENT_PID"
wait "$AGENT_PID"
echo "lossy_link on device=mlx5_0,port=1 seen $((seen - t0)) ms after the errors began (100 ms ticks)"
LAB_T0=$t0
lab_expect "$WORK/l.db" lossy_link device=mlx5_0,port=1
exit 0
