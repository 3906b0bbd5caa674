#!/bin/bash
# SPDX-License-Identifier: MIT
# Ring all-reduce on four ranks over TCP, the agent on lab rank 2 (it sends
# to rank 3). Clean: no event. Then the switch port towards rank 3 goes
# down for 2 s mid-ring: rank 2's data to rank 3 sits unacknowledged and a
# stall naming 198.18.0.3 opens, and closes once the link is back.
. tests/lib.sh
. tests/lab/lab.sh
need_root
[ -x "${LAB_BIN:-$PWD/build/lab}/loadgen" ] || fail "no loadgen in ${LAB_BIN:-$PWD/build/lab}"
lab_up 4
lab_agent 2 --db "$WORK/r.db" --interval 100ms --collectors bpf --interfaces eth0
total() { lab_metric 'fabmon_events_total{kind="'"$1"'"}'; }

lab_loadgen ring-allreduce 4
lab_loadgen_wait
for k in stall incast pfc_storm; do
	[ "$(total $k)" = 0 ] || { grep event "$WORK/agent.log"; fail "$k on a clean ring"; }
done
echo "clean ring: $(grep -c '^ *[0-9]' "$WORK/ring-allreduce.0.out") iterations, no event"

lab_loadgen ring-allreduce 8
sleep 2
t0=$(date +%s%3N)
ip -n "$LAB-sw" link set "$LAB-p3" down
for _ in $(seq 30); do
	[ "$(lab_metric 'fabmon_event_active{kind="stall",subject="peer=198.18.0.3"}')" = 1 ] && break
	sleep 0.1
done
t1=$(date +%s%3N)
ip -n "$LAB-sw" link set "$LAB-p3" up
[ "$(lab_metric 'fabmon_event_active{kind="stall",subject="peer=198.18.0.3"}')" = 1 ] ||
	{ grep event "$WORK/agent.log"; fail "no stall naming rank 3 while its link was down"; }
echo "link down -> stall on peer=198.18.0.3 seen after $((t1 - t0)) ms"
lab_loadgen_wait
for _ in $(seq 30); do
	grep -q "event stall closed: peer=198.18.0.3" "$WORK/agent.log" && break
	sleep 0.1
done
grep -q "event stall closed: peer=198.18.0.3" "$WORK/agent.log" || fail "stall did not close"
# A downed link stalls the whole ring, so symptoms elsewhere may come with
# the culprit (reported, not failed: telling them apart is the detectors'
# next step).
# The culprit's stall is in the table; which symptom opens first is not yet
# decided by the detectors (a stalled ring stalls other peers within a tick).
n=$(sqlite3 "$WORK/r.db" "SELECT count(*) FROM events WHERE kind = 'stall' AND subject = 'peer=198.18.0.3'")
[ "$n" -ge 1 ] || fail "no stall row naming rank 3"
first=$(sqlite3 "$WORK/r.db" "SELECT kind || ' ' || subject FROM events ORDER BY start_ms, id LIMIT 1")
echo "first event: $first"
others=$(sqlite3 "$WORK/r.db" "SELECT kind || ' ' || subject FROM events
	WHERE NOT (kind = 'stall' AND subject = 'peer=198.18.0.3')" | sort | uniq -c | tr '\n' ';')
[ -z "$others" ] || echo "note: secondary events after the culprit: $others"
exit 0
