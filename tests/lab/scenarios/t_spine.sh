#!/bin/bash
# SPDX-License-Identifier: MIT
# An oversubscribed spine during ring all-reduce. Four ranks over TCP, two
# per leaf (198.18.0.1-2 on br0, .3-.4 on br1): the ring crosses the spine
# uplink twice, .2 -> .3 out of u1 and .4 -> .1 out of u2. The agent runs in
# the switch namespace on the two uplink ends. Clean, with u1 shaped
# generously (to its own speed): no event. Then u1 is shaped to 150 Mbit/s
# mid-ring: the ring's cross-leaf traffic fills it and queues in
# its tbf, and a hotspot naming u1 (and nothing else) opens; it closes once
# the shaping is removed.
. tests/lib.sh
. tests/lab/lab.sh
need_root
[ -x "${LAB_BIN:-$PWD/build/lab}/loadgen" ] || fail "no loadgen in ${LAB_BIN:-$PWD/build/lab}"
KINDS="hotspot incast stall pfc_storm straggler slow_handoff"
lab_up_spine 4
up1=$LAB-u1
lab_agent sw --db "$WORK/s.db" --interval 100ms --collectors netdev,qdisc \
	--interfaces "$LAB-u1|$LAB-u2"
active='fabmon_event_active{kind="hotspot",cause="network",subject="interface='$up1'"}'
total() { lab_metric 'fabmon_events_total{kind="'"$1"'",cause="'"$(lab_cause "$1")"'"}'; }
# mean and least bus bandwidth of a rank's iterations, GB/s: in a ring every
# link carries busbw, so this is what each uplink direction carried (printed
# beside the link's speed, so a clean run shows how close to the bound it came)
busbw() {
	awk '/^ *[0-9]/ { s += $NF; n++; if (!m || $NF < m) m = $NF }
		END { if (n) printf "mean %.3f min %.3f", s / n, m }' "$1"
}

# clean, the uplink shaped generously (to its own speed): a qdisc that may
# hold packets back now and then, on a link far from full
lab_shape "$up1" 10gbit
lab_loadgen ring-allreduce 4
lab_loadgen_wait
for k in $KINDS; do
	[ "$(total $k)" = 0 ] || { grep event "$WORK/agent.log"; fail "$k on a clean ring"; }
done
speed=$(lab_metric 'fabmon_netdev_speed_bytes{interface="'$up1'"}')
over=$(lab_scrape | awk '/^fabmon_qdisc_overlimits_total\{interface="'$up1'",kind="tbf"/ { print $2 }')
echo "clean ring, uplink shaped to 10 Gbit/s: $(grep -c '^ *[0-9]' "$WORK/ring-allreduce.0.out")" \
	"iterations, busbw $(busbw "$WORK/ring-allreduce.0.out") GB/s on a $speed B/s link," \
	"${over:-no} tbf overlimits, no event"
lab_shape "$up1" off

lab_loadgen ring-allreduce 10
sleep 1
lab_onset "lab_shape $up1 150mbit"
t0=$LAB_T0
seen=""
for _ in $(seq 50); do
	[ "$(lab_metric "$active")" = 1 ] && { seen=$(date +%s%3N); break; }
	sleep 0.1
done
[ -n "$seen" ] || { grep event "$WORK/agent.log"; fail "no hotspot on $up1 within 5 s"; }
echo "uplink shaped to 150 Mbit/s -> hotspot on interface=$up1 seen after $((seen - t0)) ms"
sleep 1
[ "$(lab_metric "$active")" = 1 ] || fail "the hotspot on $up1 closed while the uplink was shaped"
# the capacity the detector used: the shaper's rate, 150 Mbit/s in bytes
lab_scrape | grep -q '^fabmon_qdisc_rate_bytes{interface="'$up1'",kind="tbf",.*parent="root"} 18750000$' ||
	fail "no tbf rate of 18750000 B/s on $up1 in /metrics"
t2=$(date +%s%3N)
lab_shape "$up1" off
closed=""
for _ in $(seq 30); do
	[ -z "$(lab_metric "$active")" ] && { closed=$(date +%s%3N); break; }
	sleep 0.1
done
[ -n "$closed" ] || { grep event "$WORK/agent.log"; fail "hotspot did not close after unshaping"; }
echo "shaping removed -> hotspot closed after $((closed - t2)) ms"
lab_loadgen_wait
echo "ring shaped for $((closed - t0)) ms of 10 s: $(grep -c '^ *[0-9]' "$WORK/ring-allreduce.0.out")" \
	"iterations, busbw $(busbw "$WORK/ring-allreduce.0.out") GB/s"
grep -q "event hotspot opened: interface=$up1" "$WORK/agent.log" || fail "no open message"
grep -q "event hotspot closed: interface=$up1" "$WORK/agent.log" || fail "no close message"
kill "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null
rows=$(sqlite3 "$WORK/s.db" "SELECT kind || '|' || subject || '|' || (end_ms IS NOT NULL) FROM events")
# on failure, each event's ms from the shaping (t0) and from its removal
# (t2), and its evidence: what a re-open or a second subject looked like
[ "$rows" = "hotspot|interface=$up1|1" ] || {
	sqlite3 "$WORK/s.db" "SELECT kind, subject, start_ms - $t0, end_ms - $t2, evidence FROM events"
	fail "want one closed hotspot on $up1, events: $rows"
}
echo "evidence: $(sqlite3 "$WORK/s.db" "SELECT evidence FROM events")"
echo "onset -> first tick over the bound: $(($(sqlite3 "$WORK/s.db" "SELECT start_ms FROM events") - t0)) ms"
lab_open "$WORK/s.db" hotspot "$t0"
exit 0
