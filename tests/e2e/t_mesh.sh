#!/bin/bash
# SPDX-License-Identifier: MIT
# The mesh collector over loopback (127.0.0.2 and .3 are this host too, not
# its own addresses): the agent probes the hosts of a file_sd target list and
# answers itself (every probe from 127.0.0.1: more than a source's default
# rate, with fabmon ping's); /metrics shows RTT and loss per peer and lints clean;
# `fabmon ping` exits 0 when every flow answers and 1 when none does; a
# target file broken while the agent runs is reported with its file and
# line, and the previous list kept.
. tests/lib.sh
port=$(free_port)
mport=$(free_port)
targets=$WORK/targets.json
cat >"$targets" <<-JSON
	[{"targets": ["127.0.0.2:9478", "127.0.0.3:9478"], "labels": {"job": "fabmon"}}]
JSON
start_agent "$port" --db "$WORK/m.db" --collectors mesh --mesh-targets "$targets" \
	--mesh-listen ":$mport" --mesh-allow 127.0.0.0/8 --mesh-interval 200ms --mesh-source-pps 1000
await_metric "$port" fabmon_mesh_peers 2 5 || { cat "$WORK/agent.log"; fail "not probing 2 peers"; }
sleep 1.5
curl -sf "http://127.0.0.1:$port/metrics" >"$WORK/metrics" || fail "scrape failed"
# each peer's series name the interface the kernel routes it by
count=$(awk '$1 == "fabmon_mesh_rtt_seconds_count{peer=\"127.0.0.2\",interface=\"lo\"}" { print $2 }' "$WORK/metrics")
lost=$(awk '$1 == "fabmon_mesh_probes_lost_total{peer=\"127.0.0.2\",interface=\"lo\"}" { print $2 }' "$WORK/metrics")
[ "${count:-0}" -ge 16 ] || { grep mesh "$WORK/metrics"; fail "want 16 answered probes or more, got '$count'"; }
[ "$lost" = 0 ] || fail "probes lost over loopback: $lost"
echo "127.0.0.2: $count probes answered, none lost; $(grep -c '^fabmon_mesh' "$WORK/metrics") mesh series"
# flows that agree show neither per-flow series nor hops
grep '^fabmon_mesh_\(flow_\|hop_info\)' "$WORK/metrics" && fail "per-flow series of a clean peer"
# stored, for fabmon history and the API, as every series is
stored=$(stored_count "$WORK/m.db" fabmon_mesh_probes_sent_total --label peer=127.0.0.2)
[ "${stored:-0}" -ge 1 ] || fail "fabmon history has no probes to 127.0.0.2"
if command -v promtool >/dev/null; then
	out=$(promtool check metrics <"$WORK/metrics" 2>&1) || fail "promtool: $out"
	[ -z "$out" ] || fail "promtool: $out"
fi

out=$("$FABMON" ping --port "$mport" 127.0.0.2) || { echo "$out"; fail "ping of a live responder: exit $?"; }
echo "$out" | grep -q '^127.0.0.2: 8 flows, 8 answered, 0 lost' || { echo "$out"; fail "ping: $out"; }
echo "$out" | grep -q '^flow 7 sport [0-9]*: rtt [0-9.]* ms  hops 127.0.0.2$' || fail "ping: no hops: $out"
echo "$out" | tail -1
out=$("$FABMON" ping --port "$(free_port)" --flows 2 --timeout 300ms 127.0.0.3)
[ $? = 1 ] || fail "ping with no responder: want exit 1"
echo "$out" | grep -q '2 flows, 0 answered, 2 lost' || fail "ping with no responder: $out"
"$FABMON" ping --help | grep -q '^usage: fabmon ping' || fail "ping --help"
"$FABMON" ping >/dev/null 2>&1
[ $? = 2 ] || fail "ping without a peer: want exit 2"
"$FABMON" ping --flows 65 127.0.0.2 >/dev/null 2>&1
[ $? = 2 ] || fail "ping --flows 65: want exit 2"

# targets given, probing is on without naming mesh among the collectors:
# beside every other collector (fabmon doctor starts them all, without
# probing), and with another sysfs root (a container's)
out=$("$FABMON" doctor --mesh-targets "$targets" --db "$WORK/m.db")
echo "$out" | grep -q '^mesh  *available  *yes  *mesh: 2 targets, 8 flows each' ||
	{ echo "$out"; fail "doctor: no mesh line with the targets"; }
echo "$out" | grep '^mesh'
"$FABMON" doctor --db "$WORK/m.db" | grep -q '^mesh  *unavailable  *no .*probing off' ||
	fail "doctor: mesh not off without targets"
netdev_tree "$WORK/sys" eth0 0
port2=$(free_port)
"$FABMON" agent --listen "127.0.0.1:$port2" --db "$WORK/m2.db" --sysfs-root "$WORK/sys" \
	--mesh-targets "$targets" --mesh-listen ":$(free_port)" >"$WORK/agent2.log" 2>&1 &
on_exit "kill -9 $!"
await_metric "$port2" fabmon_mesh_peers 2 5 ||
	{ cat "$WORK/agent2.log"; fail "targets given, another sysfs root: not probing"; }
# a list of collectors without mesh leaves it off, and says so
out=$(timeout 2 "$FABMON" agent --listen "127.0.0.1:$(free_port)" --db "$WORK/m3.db" \
	--collectors netdev --mesh-targets "$targets" 2>&1)
echo "$out" | grep -q 'collectors does not name mesh: probing off' ||
	{ echo "$out"; fail "mesh targets with a list of collectors without mesh: not said"; }

printf '[\n {"targets": ["127.0.0.4:9478"]},\n {"targets": ["127.0.0.5:9478",]}\n]\n' >"$targets"
await_metric "$port" fabmon_mesh_targets_errors_total 1 5 ||
	{ cat "$WORK/agent.log"; fail "a broken target file is not counted"; }
grep -q "$targets:3:" "$WORK/agent.log" || { cat "$WORK/agent.log"; fail "no 'FILE:3:' in the log"; }
[ "$(metric "$port" fabmon_mesh_peers)" = 2 ] || fail "the previous targets were not kept"
grep "$targets:3:" "$WORK/agent.log"
exit 0
