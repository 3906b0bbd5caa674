#!/bin/bash
# SPDX-License-Identifier: MIT
# A flow explosion: FLOOD_FLOWS (default a million) distinct UDP flows, one
# datagram each, from rank 1 to rank 2 over the lab bridge (sources in
# 198.18.128.0/20, build/lab/flowflood), through the tc probe of an agent on
# rank 1's eth0 whose flow map holds FLOOD_MAP_FLOWS (default 65536). The
# map must be full at its max_entries; what it could not keep must be
# counted: the flows sent = the entries held + the entries the full LRU map
# pushed out (fabmon_bpf_map_evicted_entries_total) + new flows it could not
# store (fabmon_bpf_flow_update_failures_total), exactly; the agent's RSS
# stays bounded (printed, and within FLOOD_RSS_MIB of where it started).
. tests/lib.sh
. tests/lab/lab.sh
need_root
flows=${FLOOD_FLOWS:-1000000}
max=${FLOOD_MAP_FLOWS:-65536}
lab_up 2
lab_agent 1 --db "$WORK/flood.db" --interval 500ms --collectors bpf --interfaces eth0 \
	--bpf-max-flows "$max" --bpf-flow-idle 1d
[ "$(lab_metric 'fabmon_probe_up{probe="tc"}')" = 1 ] || { cat "$WORK/agent.log"; skip "tc probe not up here"; }
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$AGENT_PID/status"; }
m() { lab_metric "$1"; }
sleep 1
rss0=$(rss) rssmax=$rss0
out=$(lab_exec 1 timeout 120 "$LAB_BIN/flowflood" 198.18.0.2 "$flows" 60 &
	# RSS while the flows pour in
	while kill -0 $! 2>/dev/null; do
		r=$(rss)
		[ "${r:-0}" -gt "$rssmax" ] && rssmax=$r
		sleep 0.2
	done
	echo "rssmax=$rssmax")
echo "$out"
sent=$(echo "$out" | sed -n 's/^flows=\([0-9]*\) .*/\1/p')
rssmax=$(echo "$out" | sed -n 's/^rssmax=//p')
[ "$sent" = "$flows" ] || fail "flowflood sent $sent of $flows flows in 60 s"
# two ticks so that the last packets are read
sleep 1.5
ev='fabmon_bpf_map_evicted_entries_total{map="fm_flows"}'
fl='fabmon_bpf_flow_update_failures_total{interface="eth0",direction="tx"}'
for _ in $(seq 20); do
	a=$(m "$ev") && sleep 0.6 && [ "$(m "$ev")" = "$a" ] && break
done
entries=$(m 'fabmon_bpf_map_entries{map="fm_flows"}')
cap=$(m 'fabmon_bpf_map_max_entries{map="fm_flows"}')
evicted=$(m "$ev")
failed=$(m "$fl")
r=$(rss)
[ "${r:-0}" -gt "$rssmax" ] && rssmax=$r
echo "flows sent $sent; map fm_flows: $entries of $cap entries, $evicted evicted, ${failed:-0} not stored"
echo "agent RSS: $rss0 KiB before, at most $rssmax KiB during and after"
[ "$cap" = "$max" ] || fail "fm_flows max_entries $cap, want $max"
# an LRU map fills to its max_entries (per-CPU free lists may leave a few)
[ "$entries" -ge $((max * 98 / 100)) ] || fail "fm_flows holds $entries of $max: not full"
[ $((entries + evicted + ${failed:-0})) = "$sent" ] ||
	fail "held $entries + evicted $evicted + not stored ${failed:-0} != $sent flows sent"
[ "$rssmax" -le $((rss0 + ${FLOOD_RSS_MIB:-64} * 1024)) ] ||
	fail "RSS grew from $rss0 to $rssmax KiB"
kill -0 "$AGENT_PID" || fail "agent died"
exit 0
