#!/bin/bash
# SPDX-License-Identifier: MIT
# fabmon locate on a live lab: four ranks, each with its own agent counting
# only its own namespace (--bpf-netns), Debian's Prometheus in the switch
# namespace scraping them every second with the cluster rules loaded. An
# all-to-all over TCP (receive buffers of 1 MiB at most, ports at 400
# Mbit/s, as in scenarios/t_pause_rank.sh) runs clean first: locate names
# nobody. Then rank 3's loadgen is stopped (SIGSTOP), as a hung rank: the
# other ranks' data to it backs up and their agents open host_stall events
# naming 198.18.0.3. locate, polled every 2 s, must name host 198.18.0.3
# top-1 (the time from the pause is printed) and no other host, and
# FabmonHostSuspect must fire for it and no other host.
. tests/lib.sh
need_root
command -v prometheus >/dev/null || fail "prometheus missing (make deps)"
command -v jq >/dev/null || fail "jq missing (make deps)"
LAB_BIN=${LAB_BIN:-$PWD/build/lab}
[ -x "$LAB_BIN/loadgen" ] || fail "no loadgen in $LAB_BIN"
. tests/lab/lab.sh

lab_up 4
lab_exec sw ip addr add 198.18.0.254/24 dev br0 || fail "unable to address the switch bridge"
LAB_PORT=9478
for r in 1 2 3 4; do
	lab_shape "$LAB-p$r" 400mbit
	lab_exec $r sysctl -qw net.ipv4.tcp_rmem="4096 131072 1048576" || fail "unable to set tcp_rmem"
	# the last --listen and --bpf-netns win: every address; this rank only
	lab_agent $r --listen ":$LAB_PORT" --db "$WORK/a$r.db" --interval 100ms \
		--collectors netdev,bpf,sockets --interfaces eth0 --bpf-netns "/run/netns/$(lab_ns $r)"
done

d=dashboards/prometheus
# the alert's for: shortened to the scrape's scale
sed -e 's/^\( *for:\).*/\1 2s/' "$d/fabmon-cluster.rules.yml" >"$WORK/cluster.yml"
lab_prometheus "$WORK/cluster.yml"
prom=$LAB_PROM
api() { lab_exec sw curl -sf --max-time 3 "$@"; }
locate() { lab_exec sw "$FABMON" locate --prometheus http://127.0.0.1:9090 "$@"; }
ups() {
	api --data-urlencode 'query=sum(up{job="fabmon"})' http://127.0.0.1:9090/api/v1/query |
		jq -r '.data.result[0].value[1] // 0'
}
for _ in $(seq 80); do
	[ "$(ups 2>/dev/null)" = 4 ] && break
	kill -0 "$prom" 2>/dev/null || { cat "$WORK/prometheus.log"; fail "prometheus exited"; }
	sleep 0.25
done
[ "$(ups)" = 4 ] || fail "not every agent is up in Prometheus"
echo "prometheus: 4 agents up"

# clean: an all-to-all, nobody named
t_clean=$(date +%s)
lab_loadgen all-to-all 6
lab_loadgen_wait
sleep 2
locate --since "$t_clean" --json >"$WORK/clean.json" || fail "locate (clean) failed"
[ "$(jq '.suspects | length' "$WORK/clean.json")" = 0 ] ||
	fail "clean all-to-all names suspects: $(jq -c .suspects "$WORK/clean.json")"
echo "clean all-to-all: no suspect ($(jq .nodes "$WORK/clean.json") nodes, $(jq .queries "$WORK/clean.json") queries)"

# rank 3 hangs: its loadgen runs under timeout, the stopped process is
# timeout's child
t_fault=$(date +%s)
lab_loadgen all-to-all 40
sleep 3
lab_loadgen_pid 3
rank3=$LAB_LOADGEN_PID
t0=$(date +%s%3N)
kill -STOP "$rank3"
on_exit "kill -CONT $rank3"
top="" found=""
for _ in $(seq 20); do
	sleep 2
	locate --since "$t_fault" --json >"$WORK/fault.json" 2>"$WORK/err" || continue
	top=$(jq -r '.suspects[0] | "\(.kind) \(.suspect)"' "$WORK/fault.json")
	[ "$top" = "host 198.18.0.3" ] && { found=$(($(date +%s%3N) - t0)); break; }
done
[ -n "$found" ] || { grep event "$WORK/agent.log"; fail "locate's top-1 is '$top', want host 198.18.0.3"; }
echo "paused rank 3: locate names host 198.18.0.3 top-1 $found ms after the pause:"
locate --since "$t_fault"
# a rank a step behind, still waiting on rank 3, leaves the data of a rank
# a step ahead unread: its own agent says it waits, and it is no suspect
others=$(jq -r '.suspects[] | select(.kind == "host" and .suspect != "198.18.0.3") | .suspect' \
	"$WORK/fault.json")
[ -z "$others" ] || fail "locate names hosts other than 198.18.0.3: $others"
alerting() {
	api http://127.0.0.1:9090/api/v1/alerts |
		jq -e '.data.alerts[] | select(.labels.alertname == "FabmonHostSuspect" and
			.labels.suspect == "198.18.0.3" and .state == "firing")' >/dev/null
}
for _ in $(seq 20); do
	alerting && break
	sleep 0.5
done
alerting || fail "FabmonHostSuspect does not fire for 198.18.0.3"
wrong=$(api http://127.0.0.1:9090/api/v1/alerts | jq -r '.data.alerts[] |
	select(.labels.alertname == "FabmonHostSuspect" and .labels.suspect != "198.18.0.3") |
	.labels.suspect')
[ -z "$wrong" ] || fail "FabmonHostSuspect fires for $wrong too"
echo "FabmonHostSuspect fires for 198.18.0.3, no other host"
kill -CONT "$rank3"
lab_loadgen_wait
