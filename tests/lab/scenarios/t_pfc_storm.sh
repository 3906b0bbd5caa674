#!/bin/bash
# SPDX-License-Identifier: MIT
# A PFC storm through counter files: on a copy of the real mlx5_0 tree the
# test advances port_xmit_wait while the port sends nothing (held by pause
# frames) and fabmon opens a pfc_storm event on that port, then closes it
# when the waiting stops. A busy port (waiting, but sending at a high rate)
# raises nothing.
. tests/lib.sh
. tests/lab/lab.sh

root=$WORK/sys
mkdir -p "$root/class"
cp -R "$SHARED_FIXTURES/sysfs/class/infiniband" "$root/class/"
chmod -R u+w "$root"
cnt=$root/class/infiniband/mlx5_0/ports/1/counters
port=$(free_port)
start_agent "$port" --db "$WORK/p.db" --interval 100ms --collectors rdma --sysfs-root "$root"
active='fabmon_event_active{kind="pfc_storm",cause="network",subject="device=mlx5_0,port=1"}'

# advance: SECONDS WAIT_STEP DATA_STEP [ONSET], every 50 ms (bounded); the
# time of its first step into the file ONSET: the storm starts when the
# counters first show it, not when this shell forked and read them (40-60 ms
# earlier on the lab's VM, which the latency counted once)
advance() {
	wait=$(cat "$cnt/port_xmit_wait") data=$(cat "$cnt/port_xmit_data")
	for _ in $(seq $(($1 * 20))); do
		wait=$((wait + $2)) data=$((data + $3))
		[ -z "${4:-}" ] || [ -s "$4" ] || date +%s%3N >"$4"
		echo $wait >"$cnt/port_xmit_wait.new" && mv "$cnt/port_xmit_wait.new" "$cnt/port_xmit_wait"
		echo $data >"$cnt/port_xmit_data.new" && mv "$cnt/port_xmit_data.new" "$cnt/port_xmit_data"
		sleep 0.05
	done
}

# busy, not frozen: 5M words (20 MB) per 50 ms is 400 MB/s, far over 1 % of 25 Gb/s
advance 2 1000000 5000000
[ -z "$(metric "$port" "$active")" ] || fail "a busy port was called a storm"
[ "$(metric "$port" 'fabmon_events_total{kind="pfc_storm",cause="network"}')" = 0 ] || fail "storm on a busy port"

# frozen: waiting every tick, nothing sent
advance 2 1000000 0 "$WORK/onset" &
writer=$!
on_exit "kill $writer"
await_metric "$port" "$active" 1 2 || { cat "$WORK/agent.log"; fail "no pfc_storm event on mlx5_0 port 1"; }
seen=$SEEN t0=$(cat "$WORK/onset")
wait $writer
grep -q "event pfc_storm opened: device=mlx5_0,port=1" "$WORK/agent.log" || fail "no open message"
await_metric "$port" "$active" "" 2 || fail "event did not close when the waiting stopped"
grep -q "event pfc_storm closed: device=mlx5_0,port=1" "$WORK/agent.log" || fail "no close message"
[ "$(metric "$port" 'fabmon_events_total{kind="pfc_storm",cause="network"}')" = 1 ] || fail "want exactly one storm"
kill "$AGENT_PID"; wait "$AGENT_PID"
row=$(sqlite3 "$WORK/p.db" "SELECT kind, subject, end_ms IS NOT NULL FROM events")
[ "$row" = "pfc_storm|device=mlx5_0,port=1|1" ] || fail "events table: $row"
echo "pfc_storm on device=mlx5_0,port=1 seen $((seen - t0)) ms after the port froze (100 ms ticks)"
start=$(sqlite3 "$WORK/p.db" "SELECT start_ms FROM events")
echo "onset -> first tick over the bound: $((start - t0)) ms"
lab_open "$WORK/p.db" pfc_storm "$t0"
exit 0
