# SPDX-License-Identifier: MIT
# The test lab's fabric, sourced by tests/lab/t_*.sh after tests/lib.sh:
# ranks are network namespaces, each with one veth into a Linux bridge that
# lives in a "switch" namespace. Addresses come from 198.18.0.0/15 only.
# Every name carries LAB (unique per run), so teardown removes exactly what
# this run made and nothing else.
LAB=fm$$
LAB_RANKS=0

# lab_up N: makes ranks 1..N (namespaces $LAB-r1.. with eth0 = 198.18.0.i/24)
# and the switch namespace $LAB-sw with bridge br0 and ports p1..pN.
lab_up() {
	on_exit lab_down
	ip netns add "$LAB-sw" || fail "unable to create namespace $LAB-sw"
	ip -n "$LAB-sw" link add br0 type bridge
	ip -n "$LAB-sw" link set br0 up
	ip -n "$LAB-sw" link set lo up
	i=1
	while [ $i -le "$1" ]; do
		ip netns add "$LAB-r$i" || fail "unable to create namespace $LAB-r$i"
		ip -n "$LAB-r$i" link set lo up
		ip link add "$LAB-p$i" netns "$LAB-sw" type veth peer name eth0 netns "$LAB-r$i" ||
			fail "unable to create veth for rank $i"
		ip -n "$LAB-sw" link set "$LAB-p$i" master br0 up
		ip -n "$LAB-r$i" addr add "198.18.0.$i/24" dev eth0
		ip -n "$LAB-r$i" link set eth0 up
		i=$((i + 1))
	done
	LAB_RANKS=$1
}

# lab_exec RANK CMD...: runs CMD in rank RANK's namespace (with its own /sys).
lab_exec() {
	r=$1; shift
	ip netns exec "$LAB-r$r" "$@"
}

# lab_spawn RANK CMD...: starts CMD in the background in rank RANK's
# namespace; LAB_PID is its pid (ip netns exec execs CMD, so signals reach it;
# "lab_exec ... &" would fork a subshell and $! would be the subshell's).
lab_spawn() {
	r=$1; shift
	ip netns exec "$LAB-r$r" "$@" &
	LAB_PID=$!
	on_exit "kill -9 $LAB_PID"
}

# lab_agent RANK ARGS...: starts `fabmon agent ARGS` in rank RANK on a free
# loopback port (LAB_PORT), logging to $WORK/agent.log, and waits (10 s at
# most) for /readyz. AGENT_PID is its pid.
lab_agent() {
	LAB_AGENT_RANK=$1; shift
	[ -n "${LAB_PORT:-}" ] || LAB_PORT=$(free_port)
	lab_spawn "$LAB_AGENT_RANK" "$FABMON" agent --listen "127.0.0.1:$LAB_PORT" "$@" \
		>>"$WORK/agent.log" 2>&1
	AGENT_PID=$LAB_PID
	for _ in $(seq 100); do
		lab_scrape readyz >/dev/null 2>&1 && return 0
		kill -0 "$AGENT_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$WORK/agent.log" >&2
	fail "agent in rank $LAB_AGENT_RANK not ready"
}

# lab_scrape [PATH]: the lab agent's /metrics (or /PATH).
lab_scrape() {
	lab_exec "$LAB_AGENT_RANK" curl -sf "http://127.0.0.1:$LAB_PORT/${1:-metrics}"
}

# lab_metric SERIES: the value of one series on the lab agent, or empty.
lab_metric() {
	lab_scrape | awk -v s="$1" '$1 == s { print $2; exit }'
}

lab_down() {
	i=1
	while [ $i -le "$LAB_RANKS" ]; do
		ip netns del "$LAB-r$i" 2>/dev/null
		i=$((i + 1))
	done
	ip netns del "$LAB-sw" 2>/dev/null
	LAB_RANKS=0
}
