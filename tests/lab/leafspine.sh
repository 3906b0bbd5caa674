# SPDX-License-Identifier: MIT
# A routed leaf-spine fabric for the lab, sourced after tests/lib.sh and
# tests/lab/lab.sh (for lab_ns_del and LAB): leaves $LAB-l1..l2 and spines
# $LAB-s1..s2 are Linux routers, each leaf linked to each spine; hosts
# $LAB-h1..h8, four on each leaf's bridge. ECMP between the leaves hashes
# on the 5-tuple (fib_multipath_hash_policy=1), so UDP source ports spread
# over the spines. Every router answers TTL expiry as Linux does, from the
# address the packet came in on, without ICMP rate limits.
#
# Addresses, all in 198.18.0.0/15: hosts of leaf L are 198.18.L.11-14 behind
# 198.18.L.1; the link of leaf L and spine S is 198.19.LS.0/24, the leaf .1,
# the spine .2 (spine 1 seen from leaf 1's hosts is 198.19.11.2).
LS_HOSTS=8
LS_NS=""

# ls_host_addr I: host I's address (I from 1).
ls_host_addr() {
	echo "198.18.$((($1 - 1) / 4 + 1)).$((($1 - 1) % 4 + 11))"
}

ls_router() {
	ip netns add "$LAB-$1" || fail "unable to create namespace $LAB-$1"
	LS_NS="$LS_NS $LAB-$1"
	ip -n "$LAB-$1" link set lo up
	for k in net.ipv4.ip_forward=1 net.ipv4.fib_multipath_hash_policy=1 \
		net.ipv4.icmp_ratelimit=0 net.ipv4.icmp_errors_use_inbound_ifaddr=1 \
		net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0; do
		ip netns exec "$LAB-$1" sysctl -qw "$k" || fail "sysctl $k in $LAB-$1"
	done
}

# ls_up: builds the fabric; ls_down (registered) removes it.
ls_up() {
	on_exit ls_down
	for r in l1 l2 s1 s2; do ls_router $r; done
	for l in 1 2; do
		ip -n "$LAB-l$l" link add br0 type bridge || fail "bridge in leaf $l"
		ip -n "$LAB-l$l" addr add "198.18.$l.1/24" dev br0
		ip -n "$LAB-l$l" link set br0 up
		for s in 1 2; do
			ip link add "s$s" netns "$LAB-l$l" type veth peer name "l$l" netns "$LAB-s$s" ||
				fail "link leaf $l - spine $s"
			ip -n "$LAB-l$l" addr add "198.19.$l$s.1/24" dev "s$s"
			ip -n "$LAB-s$s" addr add "198.19.$l$s.2/24" dev "l$l"
			ip -n "$LAB-l$l" link set "s$s" up
			ip -n "$LAB-s$s" link set "l$l" up
			ip -n "$LAB-s$s" route add "198.18.$l.0/24" via "198.19.$l$s.1" ||
				fail "route from spine $s to leaf $l"
		done
	done
	for l in 1 2; do
		o=$((3 - l))
		ip -n "$LAB-l$l" route add "198.18.$o.0/24" \
			nexthop via "198.19.${l}1.2" dev s1 nexthop via "198.19.${l}2.2" dev s2 ||
			fail "ECMP route in leaf $l"
	done
	i=1
	while [ $i -le $LS_HOSTS ]; do
		l=$(((i - 1) / 4 + 1))
		ip netns add "$LAB-h$i" || fail "unable to create namespace $LAB-h$i"
		LS_NS="$LS_NS $LAB-h$i"
		ip -n "$LAB-h$i" link set lo up
		ip link add eth0 netns "$LAB-h$i" type veth peer name "h$i" netns "$LAB-l$l" ||
			fail "veth of host $i"
		ip -n "$LAB-l$l" link set "h$i" master br0 up
		ip -n "$LAB-h$i" addr add "$(ls_host_addr $i)/24" dev eth0
		ip -n "$LAB-h$i" link set eth0 up
		ip -n "$LAB-h$i" route add default via "198.18.$l.1"
		i=$((i + 1))
	done
}

ls_down() {
	for ns in $LS_NS; do lab_ns_del "$ns"; done
	LS_NS=""
}

# ls_loss SPINE LEAF PERCENT: drops PERCENT % of what spine SPINE forwards to
# leaf LEAF (nftables numgen: this kernel has no netem); "off" removes it.
ls_loss() {
	if [ "$3" = off ]; then
		ip netns exec "$LAB-s$1" nft delete table inet lab_loss || fail "unable to remove the loss"
		return 0
	fi
	ip netns exec "$LAB-s$1" nft -f - <<-NFT || fail "unable to add loss on spine $1 to leaf $2"
		table inet lab_loss {
			chain forward_loss {
				type filter hook forward priority 0;
				oifname "l$2" numgen random mod 100 < $3 drop
			}
		}
	NFT
}

# The cluster's monitoring on the fabric, for fabmon locate's lab: a
# management network apart from the fabric (namespace $LAB-mgmt, bridge br0,
# 198.19.200.254; host I's mgmt0 is 198.19.200.(10+I)), so that a fault
# under test never cuts a scrape, as an out-of-band network would not.
LS_MGMT=198.19.200
LS_PORT=9478
LS_PROM=""

# ls_mgmt_up: the management network (removed with the fabric).
ls_mgmt_up() {
	ls_router mgmt
	ip -n "$LAB-mgmt" link add br0 type bridge || fail "bridge in mgmt"
	ip -n "$LAB-mgmt" addr add "$LS_MGMT.254/24" dev br0
	ip -n "$LAB-mgmt" link set br0 up
	for i in $(seq $LS_HOSTS); do
		ip link add mgmt0 netns "$LAB-h$i" type veth peer name "m$i" netns "$LAB-mgmt" ||
			fail "mgmt veth of host $i"
		ip -n "$LAB-mgmt" link set "m$i" master br0 up
		ip -n "$LAB-h$i" addr add "$LS_MGMT.$((10 + i))/24" dev mgmt0
		ip -n "$LAB-h$i" link set mgmt0 up
	done
}

# ls_agents ARGS...: on every host an agent counting its own namespace's
# eth0 (bpf, netdev) and probing the other hosts (mesh, every 100 ms: a 1 %
# loss shows within 10 s), listening on its mgmt0; ARGS are added.
ls_agents() {
	printf '[{"targets": [%s]}]\n' "$(for i in $(seq $LS_HOSTS); do
		printf '"%s:%d",' "$(ls_host_addr "$i")" $LS_PORT
	done | sed 's/,$//')" >"$WORK/targets.json"
	for i in $(seq $LS_HOSTS); do
		ip netns exec "$LAB-h$i" "$FABMON" agent --db "$WORK/h$i.db" \
			--listen "$LS_MGMT.$((10 + i)):$LS_PORT" --interval 100ms \
			--collectors netdev,bpf,sockets,mesh --interfaces eth0 --bpf-netns "/run/netns/$LAB-h$i" \
			--mesh-targets "$WORK/targets.json" --mesh-interval 100ms \
			--mesh-source-pps 400 "$@" >"$WORK/h$i.log" 2>&1 &
		on_exit "kill -CONT $! ; kill -9 $!"
	done
	for i in $(seq $LS_HOSTS); do
		for _ in $(seq 100); do
			ls_mgmt curl -sf --max-time 1 "$LS_MGMT.$((10 + i)):$LS_PORT/readyz" >/dev/null && break
			sleep 0.1
		done
		ls_mgmt curl -sf --max-time 1 "$LS_MGMT.$((10 + i)):$LS_PORT/readyz" >/dev/null ||
			{ cat "$WORK/h$i.log"; fail "agent on host $i not ready"; }
	done
}

# ls_mgmt CMD...: runs CMD in the management namespace.
ls_mgmt() {
	ip netns exec "$LAB-mgmt" "$@"
}

# ls_prometheus RULES: Debian's Prometheus on the management network
# (127.0.0.1:9090 in $LAB-mgmt), scraping every agent each second as job
# "fabmon", each target's instance its fabric address (the address its
# peers' events name), and evaluating RULES each second; waits until every
# agent is up (20 s at most).
ls_prometheus() {
	{
		printf 'global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n'
		printf '  evaluation_interval: 1s\nrule_files:\n  - %s\n' "$1"
		printf 'scrape_configs:\n  - job_name: fabmon\n    static_configs:\n'
		for i in $(seq $LS_HOSTS); do
			printf "      - targets: ['%s.%d:%d']\n" $LS_MGMT $((10 + i)) $LS_PORT
			printf "        labels: {instance: '%s:%d'}\n" "$(ls_host_addr "$i")" $LS_PORT
		done
	} >"$WORK/prometheus.yml"
	promtool check config "$WORK/prometheus.yml" >"$WORK/check.out" 2>&1 ||
		{ cat "$WORK/check.out"; fail "generated prometheus.yml"; }
	ls_mgmt prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
		--web.listen-address=127.0.0.1:9090 --log.level=warn >"$WORK/prometheus.log" 2>&1 &
	LS_PROM=$!
	on_exit "kill $LS_PROM"
	up=0
	for _ in $(seq 80); do
		up=$(ls_api query --data-urlencode 'query=sum(up{job="fabmon"})' 2>/dev/null |
			jq -r '.data.result[0].value[1] // 0')
		[ "$up" = $LS_HOSTS ] && return 0
		kill -0 "$LS_PROM" 2>/dev/null || break
		sleep 0.25
	done
	cat "$WORK/prometheus.log"
	fail "$up of $LS_HOSTS agents up in Prometheus"
}

# ls_api PATH [CURL ARGS...]: Prometheus' /api/v1/PATH.
ls_api() {
	p=$1
	shift
	ls_mgmt curl -sf --max-time 3 "$@" "http://127.0.0.1:9090/api/v1/$p"
}

# ls_loadgen PATTERN SECONDS: loadgen's PATTERN over TCP among all hosts
# (4 MiB a rank an iteration, as lab_loadgen: an all-to-all's half MiB to
# each peer is more than a stopped reader's window takes), in the
# background on fresh ports; LS_LOADGEN holds the pids (each a timeout
# whose child is the rank).
ls_loadgen() {
	LS_LOADGEN_PORT=$((${LS_LOADGEN_PORT:-23000} + 10))
	peers=$(for i in $(seq $LS_HOSTS); do printf '%s,' "$(ls_host_addr "$i")"; done)
	LS_LOADGEN=""
	for i in $(seq $LS_HOSTS); do
		ip netns exec "$LAB-h$i" timeout -k 1 $(($2 + 30)) "${LAB_BIN:-$PWD/build/lab}/loadgen" \
			--rank $((i - 1)) --ranks $LS_HOSTS --peers "${peers%,}" --port "$LS_LOADGEN_PORT" \
			--pattern "$1" --transport tcp --size 4M --iters 100000 --duration "$2" \
			--timeout 20 >"$WORK/loadgen.$i.out" 2>&1 &
		LS_LOADGEN="$LS_LOADGEN $!"
		on_exit "kill -9 $!"
	done
}

# ls_loadgen_stop: ends the last ls_loadgen's ranks (resumed if stopped).
ls_loadgen_stop() {
	for p in $LS_LOADGEN; do
		pkill -CONT -P "$p" 2>/dev/null
		kill "$p" 2>/dev/null
	done
	for p in $LS_LOADGEN; do wait "$p" 2>/dev/null; done
	LS_LOADGEN=""
}

# ls_link_ends LINK: the two ends of LINK, "NS DEV NS DEV", the leaf's
# last: "hI" is host I's access link, "lLsS" the link of leaf L and spine S.
ls_link_ends() {
	case "$1" in
	h[1-8]) echo "$LAB-h${1#h} eth0 $LAB-l$(((${1#h} - 1) / 4 + 1)) $1" ;;
	l[12]s[12]) echo "$LAB-s${1:3:1} l${1:1:1} $LAB-l${1:1:1} s${1:3:1}" ;;
	*) fail "ls_link_ends: no link '$1'" ;;
	esac
}

# ls_fault_end NS DEV KIND ARG: one end of ls_fault's link.
ls_fault_end() {
	case "$3-$4" in
	loss-off) ip netns exec "$1" nft delete table netdev lab_fault ;;
	loss-*)
		ip netns exec "$1" nft -f - <<-NFT
			table netdev lab_fault {
				chain in {
					type filter hook ingress device "$2" priority 0;
					numgen random mod 1000 < $(awk -v p="$4" 'BEGIN { printf "%d", p * 10 }') drop
				}
			}
		NFT
		;;
	throttle-off) ip netns exec "$1" tc qdisc del dev "$2" root ;;
	throttle-*) ip netns exec "$1" tc qdisc replace dev "$2" root tbf rate "$4" burst 32kb latency 50ms ;;
	*) false ;;
	esac
}

# ls_fault LINK KIND ARG: breaks LINK both ways: KIND loss drops ARG % (0.1
# steps) of what arrives at either end (nftables numgen on the netdev
# ingress hook: this kernel has no netem); throttle shapes both ends to ARG
# (tc units) with a tbf of 50 ms of queue; down sets the leaf's end down
# (the other loses its carrier, and keeps its routes: a spine goes on
# sending into the dead link, as one without a routing protocol would;
# the leaf's ECMP route skips the dead next hop and takes it back when it
# is up). ARG "off" puts it back.
ls_fault() {
	read -r ns1 dev1 ns2 dev2 <<<"$(ls_link_ends "$1")"
	case "$2" in
	down) ip -n "$ns2" link set "$dev2" "$([ "$3" = off ] && echo up || echo down)" ;;
	*) ls_fault_end "$ns1" "$dev1" "$2" "$3" && ls_fault_end "$ns2" "$dev2" "$2" "$3" ;;
	esac || fail "ls_fault $1 $2 $3 failed"
}
