#!/bin/bash
# SPDX-License-Identifier: MIT
# The mesh collector's costs and accuracy (`make bench`, block "mesh"),
# between two namespaces of our own joined by a veth pair (198.18.0.0/24);
# the responder's namespace answers all of 198.19.0.0/16 (a local route), so
# one responder process stands for BENCH_MESH_PEERS peers (default 1000):
#   - RTT accuracy: `fabmon ping` (8 flows) beside ping(8) on the same path
#   - an agent probing every peer on 8 flows at 1 s for BENCH_MESH_SECS
#     (default 60): CPU of its mesh thread and of the whole process, user
#     and system apart, its RSS beside the same agent without the mesh, the
#     probes lost; and the same with mesh_max_series 16, which leaves the
#     probing and drops its series
#   - the kernel's floor: the same datagrams from a bare loop
#     (tests/bench/udpfloor.c, where it is built), one sendmsg() a datagram
#     as the engine sends them, and sendmmsg() 20 at a time
# Figures only; the goal (< 1 % of a core, < 10 MB extra) is printed beside.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh
need_root
FABMON=${FABMON:-$PWD/build/fabmon}
PEERS=${BENCH_MESH_PEERS:-1000}
SECS=${BENCH_MESH_SECS:-60}
A=fabmon-mesh-$$-a
B=fabmon-mesh-$$-b
HZ=$(getconf CLK_TCK)

down() {
	for ns in $A $B; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
		ip netns del "$ns" 2>/dev/null
	done
}
on_exit down
ip netns add $A && ip netns add $B || fail "unable to create the namespaces"
ip link add veth0 netns $A type veth peer name veth0 netns $B || fail "veth"
ip -n $A addr add 198.18.0.1/24 dev veth0
ip -n $B addr add 198.18.0.2/24 dev veth0
for ns in $A $B; do
	ip -n $ns link set lo up
	ip -n $ns link set veth0 up
done
ip -n $B route add local 198.19.0.0/16 dev lo || fail "local route"
ip -n $A route add 198.19.0.0/16 via 198.18.0.2 || fail "route to the peers"

# the responder: every probe comes from one source, 8 flows x PEERS a second
ip netns exec $B "$FABMON" agent --db "$WORK/b.db" --listen 127.0.0.1:9478 --collectors mesh \
	--mesh-peers 198.18.0.1 --mesh-allow 198.18.0.0/24 --mesh-source-pps 1000000 \
	>"$WORK/b.log" 2>&1 &
sleep 1
kill -0 $! 2>/dev/null || { cat "$WORK/b.log"; fail "responder did not start"; }

# cpu PID [COMM]: clock ticks the process (or its thread named COMM) used,
# "user system"
cpu() {
	if [ -n "${2:-}" ]; then
		for t in /proc/"$1"/task/*; do
			[ "$(cat "$t/comm" 2>/dev/null)" = "$2" ] || continue
			awk '{ print $14, $15 }' "$t/stat"
			return
		done
		echo 0 0
	else
		awk '{ print $14, $15 }' "/proc/$1/stat"
	fi
}
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

echo "== mesh: RTT accuracy on one veth path (ping 100 x vs fabmon ping 10 x 8 flows)"
p=$(ip netns exec $A ping -q -c 100 -i 0.01 198.19.0.1 | awk -F/ '/^rtt/ { print $5 }')
f=$(for _ in $(seq 10); do
	ip netns exec $A "$FABMON" ping --port 9479 198.19.0.1 | awk '/rtt avg/ {
		for (i = 1; i <= NF; i++) if ($i == "avg") print $(i + 1), $(i + 7) }'
done | awk '{ r += $1; d += $2; n++ } END { if (n) printf "%.3f %.3f", r / n, d / n }')
echo "  ping avg ${p:-?} ms; fabmon ping avg ${f% *} ms, of which the responder's ${f#* } ms"

targets=$WORK/targets.json
awk -v n="$PEERS" 'BEGIN { printf "[{\"targets\": ["
	for (i = 0; i < n; i++) printf "%s\"198.19.%d.%d:9478\"", i ? ", " : "", int(i / 250), i % 250 + 1
	print "]}]" }' >"$targets"

# run_agent ARGS...: an agent in A for SECS; prints "mesh_user mesh_sys
# total_user total_sys rss_kb" (clock ticks)
run_agent() {
	local m0 m1 t0 t1
	ip netns exec $A "$FABMON" agent --db "$WORK/a$RANDOM.db" --listen 127.0.0.1:9478 "$@" \
		>>"$WORK/a.log" 2>&1 &
	pid=$!
	sleep 10 # the first traces and the database's first rows
	m0=($(cpu $pid fabmon-mesh)) t0=($(cpu $pid))
	sleep $((SECS - 10))
	m1=($(cpu $pid fabmon-mesh)) t1=($(cpu $pid))
	echo "$((m1[0] - m0[0])) $((m1[1] - m0[1])) $((t1[0] - t0[0])) $((t1[1] - t0[1]))" \
		"$(rss_kb $pid)"
	ip netns exec $A curl -s 127.0.0.1:9478/metrics >"$WORK/a.metrics"
	kill $pid
	wait $pid 2>/dev/null
}

echo "== mesh: agent probing $PEERS peers x 8 flows at 1 s, ${SECS} s (first 10 s not counted)"
read -r _ _ base_tu base_ts base_rss <<<"$(run_agent --collectors netdev)"
read -r cap_mu cap_ms cap_tu cap_ts cap_rss <<<"$(run_agent --collectors netdev,mesh \
	--mesh-targets "$targets" --mesh-max-series 16)"
read -r mesh_mu mesh_ms mesh_tu mesh_ts mesh_rss <<<"$(run_agent --collectors netdev,mesh \
	--mesh-targets "$targets")"
s=$((SECS - 10))
awk -v mu="$mesh_mu" -v ms="$mesh_ms" -v tu="$mesh_tu" -v ts="$mesh_ts" -v b=$((base_tu + base_ts)) \
	-v hz="$HZ" -v s="$s" 'BEGIN { m = mu + ms; t = tu + ts
	printf "  mesh thread %.2f %% of a core (user %.2f %%, system %.2f %%; goal < 1 %%: %s)\n",
		100 * m / hz / s, 100 * mu / hz / s, 100 * ms / hz / s, 100 * m / hz / s < 1 ? "met" : "not met"
	printf "  whole agent %.2f %% (user %.2f %%, system %.2f %%; without the mesh %.2f %%)\n",
		100 * t / hz / s, 100 * tu / hz / s, 100 * ts / hz / s, 100 * b / hz / s }'
# open blocks fill for up to 256 s, so a run under that reads less than a
# steady agent holds (BENCH_MESH_SECS=300 for that)
awk -v a="$mesh_rss" -v b="$base_rss" -v s="$SECS" 'BEGIN {
	printf "  RSS after %d s %.1f MB, without the mesh %.1f MB: %.1f MB extra (goal < 10 MB: %s)\n",
		s, a / 1024, b / 1024, (a - b) / 1024, (a - b) < 10240 ? "met" : "not met" }'
awk -v m=$((cap_mu + cap_ms)) -v t=$((cap_tu + cap_ts)) -v a="$cap_rss" -v b="$base_rss" -v hz="$HZ" \
	-v s="$s" 'BEGIN {
	printf "  with mesh_max_series 16 (the probing alone, its series not kept): mesh thread %.2f %%, agent %.2f %%, %.1f MB extra\n",
		100 * m / hz / s, 100 * t / hz / s, (a - b) / 1024 }'
awk '/^fabmon_mesh_probes_sent_total\{/ { s += $2 } /^fabmon_mesh_probes_lost_total\{/ { l += $2 }
	/^fabmon_mesh_peers / { p = $2 } /^fabmon_registry_series / { r = $2 }
	/^fabmon_mesh_budget_deferred_total / { d = $2 }
	END { printf "  %d peers, %d probes sent, %d lost (%.3f %%), %d rounds deferred by mesh_pps, %d series held\n",
		p, s, l, s ? 100 * l / s : 0, d, r }' "$WORK/a.metrics"

floor=${BENCH_DIR:-$(dirname "$FABMON")/bench}/udpfloor
if [ -x "$floor" ]; then
	echo "== mesh: the kernel's floor, the same datagrams from a bare loop (udpfloor), $s s"
	for batch in 1 20; do
		ip netns exec $A "$floor" "$PEERS" "$s" $batch | awk -v b=$batch '{
			printf "  %s: %d sent, %d answered; %.2f %% of a core (user %.2f %%, system %.2f %%)\n",
				b == 1 ? "sendmsg() a datagram" : "sendmmsg() " b " at a time", $2, $4,
				$6 + $8, $6, $8 }'
	done
fi
exit 0
