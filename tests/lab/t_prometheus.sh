#!/bin/bash
# SPDX-License-Identifier: MIT
# A real Prometheus (Debian's) scraping three fabmon agents in lab ranks,
# with fabmon's recording rules and its alert rules (the `for:` and range
# windows shortened, evaluated every second). Prometheus runs in the
# switch namespace on its loopback, and reaches the agents over the lab
# bridge (198.18.0.254); the test asks its HTTP API:
# 1. every agent's series are there with the expected labels (job,
#    instance, interface, device, port, collector, peer), the tick rate is
#    the agents' interval, bytes sent and received across the bridge agree
#    under a ring all-reduce, and the recording rules produce sane values;
# 2. three faults at once, each on its own rank — rank 1's RDMA port frozen
#    by back-pressure (port_xmit_wait growing, nothing sent), rank 2's
#    RDMA port retransmitting (local_ack_timeout_err growing), rank 3's
#    agent stopped with SIGSTOP — make FabmonPfcStorm,
#    FabmonRdmaRetransmissionBurst and FabmonAgentDown go pending and fire
#    for that rank only, and resolve when the faults end;
# 3. rank 1's RDMA counter tree taken away makes FabmonCollectorDown fire
#    for its rdma collector, and putting it back resolves it.
. tests/lib.sh
need_root
command -v prometheus >/dev/null || fail "prometheus missing (make deps)"
command -v jq >/dev/null || fail "jq missing (make deps)"
. tests/lab/lab.sh

lab_up 3
lab_exec sw ip addr add 198.18.0.254/24 dev br0 || fail "unable to address the switch bridge"
LAB_PORT=9478
for r in 1 2 3; do
	root=$WORK/sys$r
	lab_sysfs "$root"
	# the last --listen wins: every address of the rank, so the bridge too
	lab_agent $r --listen ":$LAB_PORT" --db "$WORK/a$r.db" --interval 200ms \
		--sysfs-root "$root" --collectors netdev,ethtool,rdma,qdisc,bpf --collector-retry 1s
	eval "agent$r=\$AGENT_PID"
done
inst() { echo "198.18.0.$1:$LAB_PORT"; }

# the shipped rules; the alerts' `for:` at 2 s and range windows at seconds
d=dashboards/prometheus
sed -e 's/^\( *for:\).*/\1 2s/' -e 's/\[1m\]/[5s]/g; s/\[5m\]/[10s]/g; s/\[6h\]/[2m]/g' \
	"$d/fabmon-alerts.rules.yml" >"$WORK/alerts.yml"
lab_prometheus "$WORK/alerts.yml" "$PWD/$d/fabmon-recording.rules.yml"
prom=$LAB_PROM

api() { lab_exec sw curl -sf --max-time 3 "$@"; }
# q EXPR: the instant query's result vector as JSON
# (at Unix time $2 if given)
q() {
	api --data-urlencode "query=$1" ${2:+--data-urlencode "time=$2"} \
		http://127.0.0.1:9090/api/v1/query | jq -c '.data.result'
}
# qv EXPR [TIME]: the value of a one-series result, or empty
qv() { q "$@" | jq -r 'if length == 1 then .[0].value[1] else empty end'; }
# alerts: "NAME STATE INSTANCE" a line, from /api/v1/alerts
alerts() {
	api http://127.0.0.1:9090/api/v1/alerts |
		jq -r '.data.alerts[] | "\(.labels.alertname) \(.state) \(.labels.instance)"' | sort
}
ms() { date +%s%3N; }
# until_true SECONDS CMD...: runs CMD every 0.25 s until it succeeds
until_true() {
	n=$(($1 * 4)); shift
	for _ in $(seq "$n"); do
		"$@" && return 0
		kill -0 "$prom" 2>/dev/null || { cat "$WORK/prometheus.log"; fail "prometheus exited"; }
		sleep 0.25
	done
	return 1
}

t0=$(ms)
# (Prometheus's discovery hands the first targets over after 5 s)
all_up() { [ "$(qv 'sum(up{job="fabmon"})')" = 3 ]; }
until_true 15 all_up || { api http://127.0.0.1:9090/api/v1/targets | jq .; fail "targets not all up"; }
echo "prometheus $(prometheus --version 2>&1 | awk 'NR == 1 { print $3 }'): 3 agents up after $(($(ms) - t0)) ms"

# 1. series, labels, rates under a ring all-reduce
tx_sum='sum(fabmon_netdev_transmit_bytes_total{job="fabmon",interface="eth0"})'
rx_sum='sum(fabmon_netdev_receive_bytes_total{job="fabmon",interface="eth0"})'
before=$(date +%s.%3N)
lab_loadgen ring-allreduce 5 --size 1M
sleep 3.5
for r in 1 2 3; do
	i=$(inst $r)
	for s in "fabmon_netdev_receive_bytes_total{job=\"fabmon\",instance=\"$i\",interface=\"eth0\"}" \
		"fabmon_rdma_port_transmit_wait_total{instance=\"$i\",device=\"mlx5_0\",port=\"1\"}" \
		"fabmon_collector_up{instance=\"$i\",collector=\"rdma\"}" \
		"fabmon_collector_up{instance=\"$i\",collector=\"bpf\"}" \
		"fabmon_agent_info{instance=\"$i\",version=~\".+\"}"; do
		[ -n "$(qv "$s")" ] || fail "no series $s"
	done
	[ "$(qv "fabmon_collector_up{instance=\"$i\",collector=\"rdma\"}")" = 1 ] || fail "rdma not up on $i"
	# the tc probe names the peers of the ring: both other ranks
	peers=$(q "sum by (peer) (rate(fabmon_flow_bytes_total{instance=\"$i\",direction=\"tx\",peer=~\"198.18.0.[123]\"}[3s])) > 0" |
		jq -r '[.[].metric.peer] | sort | join(",")')
	want=$(for p in 1 2 3; do [ $p = $r ] || echo 198.18.0.$p; done | paste -sd,)
	[ "$peers" = "$want" ] || fail "$i: peers with traffic '$peers', want '$want'"
	# ticks every 200 ms: 5 a second
	tr=$(qv "rate(fabmon_ticks_total{instance=\"$i\"}[4s])")
	awk -v t="$tr" 'BEGIN { exit !(t >= 4.5 && t <= 5.5) }' || fail "$i: tick rate $tr/s, want 5"
done
# while the ring runs: every rank sends, under its link's speed
rates=$(q 'rate(fabmon_netdev_transmit_bytes_total{job="fabmon",interface="eth0"}[3s]) / fabmon_netdev_speed_bytes' |
	jq -r '[.[].value[1]] | join(" ")')
[ "$(echo $rates | wc -w)" = 3 ] || fail "transmit rates of eth0: '$rates'"
for v in $rates; do
	awk -v v="$v" 'BEGIN { exit !(v > 0.0001 && v < 1) }' || fail "eth0 sends $v of its speed"
done
util=$(qv 'max(instance_interface:fabmon_link_utilization:ratio_rate1m{interface="eth0"})')
nodes=$(q 'instance:fabmon_netdev_transmit_bytes:sum_rate1m > 0' | jq length)
lab_loadgen_wait
sleep 1.5 # a scrape of the counters at rest
after=$(date +%s.%3N)
# the bridge forwards what the ranks send: bytes sent and received agree
tx=$(awk -v a="$(qv "$tx_sum" "$after")" -v b="$(qv "$tx_sum" "$before")" 'BEGIN { printf "%.0f", a - b }')
rx=$(awk -v a="$(qv "$rx_sum" "$after")" -v b="$(qv "$rx_sum" "$before")" 'BEGIN { printf "%.0f", a - b }')
awk -v t="$tx" -v r="$rx" 'BEGIN { exit !(t > 1e6 && r > 0 && t / r > 0.99 && t / r < 1.01) }' ||
	fail "eth0 over the ring: sent $tx bytes, received $rx"
awk -v u="$util" 'BEGIN { exit !(u > 0 && u <= 1) }' || fail "link utilization $util"
[ "$nodes" = 3 ] || fail "recording rule by node: $nodes series"
echo "ring all-reduce: eth0 of 3 ranks sent $tx bytes, received $rx, each under its speed" \
	"($(echo $rates | tr ' ' '\n' | xargs printf '%.3f ')of it); ticks 5/s; peers and labels as expected"

quiet=$(alerts | grep -E 'FabmonPfcStorm|FabmonRdmaRetransmissionBurst|FabmonAgentDown|FabmonCollectorDown')
[ -z "$quiet" ] || fail "alerts before any fault: $quiet"

# 2. three faults at once. advance FILE STEP SECONDS: FILE grows by STEP
# every 50 ms (bounded); the port's data counters stay where they are
advance() {
	v=$(cat "$1")
	for _ in $(seq $(($3 * 20))); do
		v=$((v + $2))
		echo $v >"$1.new" && mv "$1.new" "$1"
		sleep 0.05
	done
}
port=class/infiniband/mlx5_0/ports/1
advance "$WORK/sys1/$port/counters/port_xmit_wait" 1000000 20 &
w1=$!
on_exit "kill $w1"
advance "$WORK/sys2/$port/hw_counters/local_ack_timeout_err" 50 20 &
w2=$!
on_exit "kill $w2"
kill -STOP "$agent3"
on_exit "kill -CONT $agent3"
t0=$(ms)
declare -A pending=() firing=() resolved=()
want="FabmonPfcStorm:$(inst 1) FabmonRdmaRetransmissionBurst:$(inst 2) FabmonAgentDown:$(inst 3)"
watch_fire() {
	a=$(alerts)
	for w in $want; do
		n=${w%%:*} i=${w#*:}
		echo "$a" | grep -q "^$n pending $i$" && [ -z "${pending[$n]:-}" ] && pending[$n]=$(($(ms) - t0))
		echo "$a" | grep -q "^$n firing $i$" && [ -z "${firing[$n]:-}" ] && firing[$n]=$(($(ms) - t0))
	done
	# on its own rank only
	wrong=$(echo "$a" | grep -E 'FabmonPfcStorm|FabmonRdmaRetransmissionBurst|FabmonAgentDown|FabmonCollectorDown' |
		grep -v -e "^FabmonPfcStorm .* $(inst 1)$" -e "^FabmonRdmaRetransmissionBurst .* $(inst 2)$" \
			-e "^FabmonAgentDown .* $(inst 3)$")
	[ -z "$wrong" ] || fail "alerts on the wrong rank: $wrong"
	[ ${#firing[@]} = 3 ]
}
until_true 20 watch_fire || { alerts; grep event "$WORK/agent.log"; fail "not every fault fired: $(alerts | tr '\n' ';')"; }
for w in $want; do
	n=${w%%:*}
	[ -n "${pending[$n]:-}" ] || fail "$n never seen pending"
done
sub=$(api http://127.0.0.1:9090/api/v1/alerts | jq -r '.data.alerts[] | select(.labels.alertname == "FabmonPfcStorm") | .labels.subject')
[ "$sub" = "device=mlx5_0,port=1" ] || fail "FabmonPfcStorm subject '$sub'"

kill "$w1" "$w2" 2>/dev/null
wait "$w1" "$w2" 2>/dev/null
kill -CONT "$agent3"
t0=$(ms)
watch_resolve() {
	a=$(alerts)
	for w in $want; do
		n=${w%%:*}
		echo "$a" | grep -q "^$n " || { [ -n "${resolved[$n]:-}" ] || resolved[$n]=$(($(ms) - t0)); }
	done
	[ ${#resolved[@]} = 3 ]
}
until_true 25 watch_resolve || fail "not every alert resolved: $(alerts | tr '\n' ';')"
for w in $want; do
	n=${w%%:*}
	echo "$n on ${w#*:}: pending after ${pending[$n]} ms, firing after ${firing[$n]} ms, resolved ${resolved[$n]} ms after the fault ended"
done

# 3. rank 1's RDMA tree gone: its rdma collector goes down, then comes back
mv "$WORK/sys1/class/infiniband" "$WORK/ib1"
t0=$(ms)
cd_fires() { alerts | grep -q "^FabmonCollectorDown firing $(inst 1)$"; }
until_true 20 cd_fires || { grep rdma "$WORK/agent.log"; fail "FabmonCollectorDown did not fire: $(alerts | tr '\n' ';')"; }
fired=$(($(ms) - t0))
[ "$(alerts | grep -c FabmonCollectorDown)" = 1 ] || fail "collector down elsewhere: $(alerts | tr '\n' ';')"
mv "$WORK/ib1" "$WORK/sys1/class/infiniband"
t0=$(ms)
cd_gone() { ! alerts | grep -q FabmonCollectorDown; }
until_true 20 cd_gone || fail "FabmonCollectorDown did not resolve"
echo "FabmonCollectorDown on $(inst 1) rdma: firing after $fired ms, resolved $(($(ms) - t0)) ms after the tree came back"
kill -0 "$prom" || fail "prometheus exited"
exit 0
