#!/bin/bash
# SPDX-License-Identifier: MIT
# The mesh collector on a routed leaf-spine fabric (tests/lab/leafspine.sh):
# 2 % loss on spine 1's link down to leaf 2. The agents on leaf 1's hosts
# see probes to leaf 2's hosts lost only on flows whose hops cross spine 1,
# and open lossy_link events naming spine 1's address (198.19.11.2) and no
# hop of spine 2 (or no hop, where a losing flow's trace went unanswered at
# one), within 10 s (the goal; the test allows 45). Then a host whose
# agent is paused (SIGSTOP) is unreachable to its peers, not a lossy link;
# a host whose link is down, its kernel silent too, is a stall (the path
# cut); and a host whose own link loses names its interface, not its peers. At
# the defaults (a probe a second on each of 8 flows) each host's first
# loss comes after 3 s on average (0.32 a second: 4 peers, about 4 flows
# each through spine 1, 2 %); every peer with a flow across the hops that
# lost it is then probed every 125 ms, and the losses of all of them across
# spine 1 are judged together: the second comes a second or two later. All
# four hosts have seen a first by 10 s in 85 % of runs only (each misses
# with e^-3.2), so the goal is a median's, not a p90's, at these defaults;
# the time of each host is printed.
. tests/lib.sh
. tests/lab/lab.sh
. tests/lab/leafspine.sh
need_root
command -v nft >/dev/null || skip "no nft (nftables)"
ls_up
for i in 2 5 8; do
	ip netns exec "$LAB-h1" ping -c 1 -W 1 "$(ls_host_addr $i)" >/dev/null ||
		fail "no route from host 1 to host $i"
done

targets=$WORK/targets.json
{
	printf '[{"targets": ['
	for i in $(seq $LS_HOSTS); do
		printf '"%s:9478"' "$(ls_host_addr "$i")"
		[ "$i" = $LS_HOSTS ] || printf ', '
	done
	printf ']}]\n'
} >"$targets"

started=$(date +%s)
for i in $(seq $LS_HOSTS); do
	ip netns exec "$LAB-h$i" "$FABMON" agent --db "$WORK/h$i.db" --listen 127.0.0.1:9478 \
		--collectors mesh --mesh-targets "$targets" \
		--mesh-source-pps 400 >"$WORK/h$i.log" 2>&1 &
	eval "PID$i=$!"
	on_exit "kill -CONT $! ; kill -9 $!"
done
scrape() { ip netns exec "$LAB-h$1" curl -s --max-time 2 127.0.0.1:9478/metrics; }
# await_event HOST PATTERN SECONDS: until host HOST's /metrics has a line
# matching PATTERN (WAITED: the ms it took); 1, with its open events
# shown, if none came in SECONDS
await_event() {
	t=$(date +%s%3N)
	for _ in $(seq $(($3 * 10))); do
		scrape "$1" | grep -q "$2" && break
		sleep 0.1
	done
	WAITED=$(($(date +%s%3N) - t))
	scrape "$1" | grep -q "$2" && return 0
	scrape "$1" | grep event_active
	return 1
}
for i in $(seq $LS_HOSTS); do
	for _ in $(seq 100); do
		ip netns exec "$LAB-h$i" curl -sf --max-time 1 127.0.0.1:9478/readyz >/dev/null && break
		sleep 0.1
	done
	ip netns exec "$LAB-h$i" curl -sf --max-time 1 127.0.0.1:9478/readyz >/dev/null ||
		{ cat "$WORK/h$i.log"; fail "agent on host $i not ready"; }
done

# fabmon ping: host 1's flows to host 5 spread over both spines (8 fresh
# source ports miss one of 2 spines once in 128 runs: a second try)
for _ in 1 2; do
	out=$(ip netns exec "$LAB-h1" "$FABMON" ping 198.18.2.11) || { echo "$out"; fail "ping of host 5"; }
	echo "$out" | grep -q ' 198\.19\.11\.2 198\.19\.21\.1 198\.18\.2\.11$' &&
		echo "$out" | grep -q ' 198\.19\.12\.2 198\.19\.22\.1 198\.18\.2\.11$' && break
done
echo "$out"
echo "$out" | grep -q ' 198\.19\.11\.2 198\.19\.21\.1 198\.18\.2\.11$' &&
	echo "$out" | grep -q ' 198\.19\.12\.2 198\.19\.22\.1 198\.18\.2\.11$' ||
	fail "host 1's flows to host 5 do not cross both spines"
# the first probes went to agents not started yet: out of the loss window
# (10 s) before the fault
sleep $((started + 12 - $(date +%s)))
for i in $(seq $LS_HOSTS); do
	scrape "$i" | grep -q '^fabmon_event_active{' &&
		{
			scrape "$i" | grep event_active
			ip netns exec "$LAB-h$i" curl -s --max-time 2 127.0.0.1:9478/api/v1/events
			fail "events on host $i before any fault"
		}
done

# each flow's losses so far (the first probes, to agents not started yet)
for i in 1 2 3 4; do
	scrape "$i" | grep '^fabmon_mesh_flow_probes_lost_total{' >"$WORK/before.$i"
done
ls_loss 1 2 2
# the goal is 10 s; the test allows 45, as a host's first losses come by
# chance (the time is printed, and a late one is no wrong answer)
t0=$(date +%s%3N)
named="" at=""
while [ $(($(date +%s%3N) - t0)) -lt 45000 ]; do
	for i in 1 2 3 4; do
		case "$named" in *" $i"*) continue ;; esac
		scrape "$i" | grep '^fabmon_event_active{kind="lossy_link"' | grep -q '198\.19\.11\.2' &&
			named="$named $i" at="${at:+$at, }host $i $(($(date +%s%3N) - t0)) ms"
	done
	[ ${#named} = 8 ] && break
	sleep 0.1
done
seen=$(date +%s%3N)
for i in 1 2 3 4; do scrape "$i" | grep '^fabmon_event_active{kind="lossy_link"'; done
if [ ${#named} != 8 ]; then
	for i in 1 2 3 4; do
		case "$named" in *" $i"*) continue ;; esac
		echo "host $i, which named no spine: its flows' losses, hops and log"
		scrape "$i" | grep -E '^fabmon_mesh_(flow_probes_lost_total|probes_(sent|lost)_total|hop_info|losing_flows)|^fabmon_collector_(up|errors)' | grep -v 'hop="[123]"'
		tail -n 20 "$WORK/h$i.log"
	done
	fail "after 45 s only hosts$named name spine 1 (198.19.11.2)"
fi
echo "every host of leaf 1 named spine 1 in a lossy_link after $((seen - t0)) ms ($at)"
sleep 3
for i in 1 2 3 4; do
	m=$(scrape "$i")
	# a peer whose losing flows' traces went unanswered at a hop (the
	# lossy link drops trace probes too; such a hop is unknown, not
	# guessed) has its lossy_link name no hop: less precise, not wrong
	other=$(echo "$m" | grep '^fabmon_event_active{kind="lossy_link"' | grep -v '198\.19\.11\.2')
	echo "$other" | grep -q 'hops=' &&
		fail "host $i has lossy_link events that name hops but not spine 1: $other"
	[ -z "$other" ] || echo "host $i: a lossy_link that names no hop: $other"
	# every flow that lost since the fault crosses spine 1
	{ sed 's/^/before /' "$WORK/before.$i"; echo "$m"; } | awk -v host="$i" '
		function key() { match($0, /peer="[^"]*",flow="[^"]*"/); return substr($0, RSTART, RLENGTH) }
		/^before / { sub(/^before /, ""); before[key()] = $2; next }
		/^fabmon_mesh_hop_info\{/ { hops[key()] = hops[key()] " " $1 }
		/^fabmon_mesh_hop_info\{/ && /address="198\.19\.11\.2"/ { via1[key()] = 1 }
		/^fabmon_mesh_flow_probes_lost_total\{/ {
			k = key()
			if (k ~ /198\.18\.2\./ && $2 > before[k] + 0) { lost[k] = $2 - before[k]; n++ } }
		END {
			for (k in lost) if (!(k in via1)) {
				print "host " host ": " k " lost " lost[k] " off spine 1; hops:" hops[k]; bad = 1 }
			printf "host %s: %d flows to leaf 2 lost probes, all through spine 1\n", host, n
			exit bad }' || fail "a flow that does not cross spine 1 lost probes"
done

ls_loss 1 2 off
# the lossy_link events close once their window holds no loss
for _ in $(seq 300); do
	scrape 1 | grep -q '^fabmon_event_active{kind="lossy_link"' || break
	sleep 0.1
done
scrape 1 | grep -q '^fabmon_event_active{kind="lossy_link"' && fail "host 1's lossy_link events stay open"
lossy0=$(scrape 1 | awk '/^fabmon_events_total\{kind="lossy_link"/ { print $2 }')
kill -STOP "$PID8"
await_event 1 '^fabmon_event_active{kind="unreachable",cause="host",subject="peer=198.18.2.14"}' 10 ||
	fail "host 8, paused, is not unreachable to host 1 after 10 s"
echo "paused host 8 unreachable to host 1 after $WAITED ms"
sleep 2
lossy1=$(scrape 1 | awk '/^fabmon_events_total\{kind="lossy_link"/ { print $2 }')
[ "$lossy0" = "$lossy1" ] || fail "the paused host raised lossy_link events ($lossy0 -> $lossy1)"
kill -CONT "$PID8"

# host 7's link down: its kernel, which answered host 1's knocks before,
# falls silent with its agent, so the path is cut (cause network), where
# a paused host's kernel still answers
unreachable() { scrape 1 | awk '/^fabmon_events_total\{kind="unreachable"/ { n += $2 } END { print n + 0 }'; }
unreachable0=$(unreachable)
ls_fault h7 down on
await_event 1 '^fabmon_event_active{kind="stall",cause="network",subject="peer=198.18.2.13"}' 10 ||
	fail "host 7, its link down, is no stall to host 1 after 10 s"
echo "host 7, its link down, a stall to host 1 after $WAITED ms"
scrape 1 | grep '^fabmon_mesh_kernel_silent_seconds{peer="198.18.2.13"' | sed 's/^/  /'
[ "$(unreachable)" = "$unreachable0" ] ||
	fail "host 7, its link down, was unreachable (cause host) to host 1 ($unreachable0 -> $(unreachable))"
ls_fault h7 down off

# 5 % loss on host 3's own link: every path of host 3 crosses it, so its
# agent names its interface, in one lossy_link, within 20 s
ls_fault h3 loss 5
await_event 3 '^fabmon_event_active{kind="lossy_link",cause="network",subject="interface=eth0"}' 20 ||
	fail "host 3, its own link lossy, names no interface after 20 s"
echo "host 3 named its own interface after $WAITED ms; its other events:"
scrape 3 | grep '^fabmon_event_active{' | grep -v "interface=eth0" | sed 's/^/  /'
ls_fault h3 loss off
exit 0
