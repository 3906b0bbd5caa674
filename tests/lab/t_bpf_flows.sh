#!/bin/bash
# SPDX-License-Identifier: MIT
# The bpf collector on a real link: a TCP stream of known size from rank 2 to
# rank 1 shows as rank-1 per-peer bytes (payload plus header overhead); a
# RoCEv2 stream with PSN gaps injected shows exactly those gaps; an interface
# made after start gets the probe; `fabmon doctor` run while traffic flows
# leaves the agent's filters and counters alone; nothing is left attached
# after the agent stops, also after kill -9 and a restart.
. tests/lib.sh
. tests/lab/lab.sh
need_root
lab_up 2
db=$WORK/bpf.db
agent() { lab_agent 1 --db "$db" --interval 500ms --collectors bpf --interfaces 'eth0|late0'; }
m() { lab_metric "$1"; }
wait_metric() { # SERIES MIN: until the value is >= MIN (10 s at most); prints it
	for _ in $(seq 100); do
		v=$(m "$1")
		if [ -n "$v" ] && awk -v v="$v" -v w="$2" 'BEGIN { exit !(v >= w) }'; then
			echo "$v"
			return 0
		fi
		sleep 0.1
	done
	echo "${v:-absent}"
	return 1
}
filters() { lab_filters 1 "$@"; }

agent
[ "$(m 'fabmon_probe_up{probe="tc"}')" = 1 ] || { cat "$WORK/agent.log"; fail "tc probe not up"; }
[ "$(filters eth0 ingress)" -ge 1 ] && [ "$(filters eth0 egress)" -ge 1 ] ||
	fail "no fabmon filter on eth0"

# 1. TCP: 4 MB from rank 2 to rank 1
size=4000000
lab_exec 1 timeout 20 nc -l -p 5001 >/dev/null &
sleep 0.3
head -c $size /dev/zero | lab_exec 2 timeout 20 nc -N 198.18.0.1 5001 || fail "nc send failed"
series='fabmon_flow_bytes_total{interface="eth0",direction="rx",peer="198.18.0.2",source="bpf"}'
got=$(wait_metric "$series" $size) || fail "rx bytes from the peer: $got, want >= $size"
# Ethernet + IPv4 + TCP with timestamps: 66 bytes per <= 1448-byte segment,
# and a few control segments
max=$(awk -v s=$size 'BEGIN { printf "%.0f", s * 1.06 + 10000 }')
awk -v g="$got" -v m="$max" 'BEGIN { exit !(g <= m) }' || fail "rx bytes $got above $max"
echo "TCP: sent $size bytes of payload, probe counted $got bytes from the peer"
# the interface's total (fm_ifslots, or fm_ifstats where the slot is taken)
# holds at least the flow's bytes
ifb=$(wait_metric 'fabmon_bpf_bytes_total{interface="eth0",direction="rx"}' "$got") ||
	fail "eth0 rx bytes total: $ifb, want >= $got"
[ "$(m 'fabmon_bpf_packets_total{interface="eth0",direction="tx"}')" -gt 0 ] ||
	fail "eth0 tx packets total: none counted"
echo "TCP: eth0 rx total $ifb bytes"

# 2. RoCEv2: 1000 packets, a PSN skipped after every 100th: 9 gaps
out=$(lab_exec 2 "$LAB_BIN/roce_gen" 198.18.0.1 1000 100) || fail "roce_gen failed"
echo "roce_gen: $out"
want_gaps=$(echo "$out" | awk '{ print $4 }')
pk='{interface="eth0",direction="rx",peer="198.18.0.2",source="bpf"}'
got=$(wait_metric "fabmon_roce_packets_total{interface=\"eth0\",direction=\"rx\",peer=\"198.18.0.2\",source=\"bpf\",class=\"send\"}" 1000) ||
	fail "RoCE send packets: $got, want 1000"
gaps=$(m "fabmon_roce_psn_gaps_total$pk")
[ "$gaps" = "$want_gaps" ] || fail "PSN gaps: $gaps, want $want_gaps"
[ "$(m "fabmon_roce_psn_missing_total$pk")" = "$want_gaps" ] || fail "missing PSNs wrong"
[ "$(m "fabmon_roce_psn_duplicates_total$pk")" = 0 ] || fail "duplicates where none were sent"
echo "RoCEv2: $got packets, $gaps PSN gaps counted ($want_gaps injected)"

# 3. an interface made after start gets the probe within a tick or two
lab_exec 1 ip link add late0 type veth peer name late1
lab_exec 1 ip link set late0 up
lab_exec 1 ip link set late1 up
for _ in $(seq 40); do
	[ "$(filters late0 ingress)" -ge 1 ] && break
	sleep 0.1
done
[ "$(filters late0 ingress)" -ge 1 ] || fail "late0 did not get the probe"

# 4. doctor changes nothing: the agent's filters stay, its counters rise on,
# and doctor names the agent that holds them
lab_spawn 2 timeout 30 ping -q -i 0.05 -c 500 198.18.0.1
ping_pid=$LAB_PID
rx='fabmon_bpf_packets_total{interface="eth0",direction="rx"}'
lab_rising "$rx"
out=$(lab_exec 1 "$FABMON" doctor --db "$WORK/none.db" --collectors bpf --interfaces 'eth0|late0') ||
	fail "doctor failed: $out"
[ "$(filters eth0 ingress)" = 1 ] && [ "$(filters eth0 egress)" = 1 ] &&
	[ "$(filters late0 ingress)" = 1 ] || fail "filters gone after doctor: $out"
lab_rising "$rx"
echo "$out" | grep -q "agent pid $AGENT_PID" || fail "doctor does not name agent pid $AGENT_PID: $out"
echo "$out" | grep '^tc '
kill "$ping_pid"

# 5. clean exit detaches; kill -9 leaves filters that the next start removes
kill -TERM $AGENT_PID
wait $AGENT_PID
[ "$(filters eth0 ingress)" = 0 ] && [ "$(filters eth0 egress)" = 0 ] &&
	[ "$(filters late0 ingress)" = 0 ] || fail "filters left after SIGTERM: eth0 $(filters eth0 ingress)/$(filters eth0 egress), late0 $(filters late0 ingress)"
agent
kill -9 $AGENT_PID
wait $AGENT_PID 2>/dev/null
[ "$(filters eth0 ingress)" -ge 1 ] || echo "note: no filter survived kill -9 (kernel detached it)"
agent
[ "$(filters eth0 ingress)" = 1 ] || fail "stale filter not replaced: $(filters eth0 ingress) on eth0"
grep -q "earlier fabmon" "$WORK/agent.log" || echo "note: agent did not report removing stale filters"
kill -TERM $AGENT_PID
wait $AGENT_PID
[ "$(filters eth0 ingress)" = 0 ] || fail "filters left after kill -9, restart and SIGTERM"
links=$(bpftool link show 2>/dev/null | grep -c 'fabmon_' || true)
[ "$links" = 0 ] || fail "$links BPF links left"
exit 0
