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

lab_down() {
	i=1
	while [ $i -le "$LAB_RANKS" ]; do
		ip netns del "$LAB-r$i" 2>/dev/null
		i=$((i + 1))
	done
	ip netns del "$LAB-sw" 2>/dev/null
	LAB_RANKS=0
}
