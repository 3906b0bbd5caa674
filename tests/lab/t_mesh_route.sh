#!/bin/bash
# SPDX-License-Identifier: MIT
# A peer's route moves to another interface (a failover to a second port):
# its mesh series follow it. Rank 1 reaches rank 2's 198.18.9.2 first by
# eth0 (the bridge), then by eth1 (a veth of its own to rank 2); within
# 15 s the series carry interface="eth1" (the engine hears of the change
# from the kernel, and looks routes up every 10 s besides), and the probes
# still answer.
. tests/lib.sh
. tests/lab/lab.sh
need_root
lab_up 2
ip link add eth1 netns "$LAB-r1" type veth peer name eth1 netns "$LAB-r2" || fail "veth eth1"
for i in 1 2; do
	ip -n "$LAB-r$i" addr add "198.18.1.$i/24" dev eth1
	ip -n "$LAB-r$i" link set eth1 up
done
ip -n "$LAB-r2" addr add 198.18.9.2/32 dev lo
ip -n "$LAB-r1" route add 198.18.9.2/32 via 198.18.0.2 dev eth0 || fail "route by eth0"
targets=$WORK/targets.json
echo '[{"targets": ["198.18.9.2:9478"]}]' >"$targets"
for i in 1 2; do
	lab_exec $i "$FABMON" agent --db "$WORK/r$i.db" --listen 127.0.0.1:9478 --collectors mesh \
		--mesh-targets "$targets" --mesh-allow 198.18.0.0/16 >"$WORK/r$i.log" 2>&1 &
	on_exit "kill -9 $!"
done
# answered PEER IF: rank 1's answered probes to PEER on series labelled IF
answered() {
	lab_exec 1 curl -s --max-time 2 127.0.0.1:9478/metrics | awk -v s="fabmon_mesh_rtt_seconds_count{peer=\"$1\",interface=\"$2\"}" \
		'$1 == s { print $2 }'
}
for _ in $(seq 50); do
	[ "$(answered 198.18.9.2 eth0)" ] && break
	sleep 0.1
done
[ "$(answered 198.18.9.2 eth0)" ] || { cat "$WORK/r1.log"; fail "no series of 198.18.9.2 on eth0"; }
ip -n "$LAB-r1" route replace 198.18.9.2/32 via 198.18.1.2 dev eth1 || fail "route by eth1"
moved=$(date +%s%3N)
for _ in $(seq 150); do
	[ "$(answered 198.18.9.2 eth1)" ] && break
	sleep 0.1
done
n=$(answered 198.18.9.2 eth1)
[ "$n" ] || fail "the series did not follow the route to eth1 in 15 s"
echo "series on eth1 after $(($(date +%s%3N) - moved)) ms"
# a round a second (jittered), shown at the next 1 s tick
for _ in $(seq 50); do
	[ "$(answered 198.18.9.2 eth1)" != "$n" ] && exit 0
	sleep 0.1
done
fail "no probe answered by eth1 in 5 s"

