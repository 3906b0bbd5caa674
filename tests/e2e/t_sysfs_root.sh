#!/bin/bash
# SPDX-License-Identifier: MIT
# --sysfs-root points the collectors that read sysfs at a tree; bpf and pcap
# attach to and capture on this host's interfaces whatever it says, so with
# another root and the default collectors they stay off: no collector_up
# series of theirs, a log line saying why, and no tc filter on any interface
# of the network namespace the agent runs in. That namespace is one this
# test makes (lo and a veth pair), so the host's own interfaces are never
# touched. Named in --collectors, bpf runs and attaches there: the check
# for filters sees them when they are there.
. tests/lib.sh
need_root
ns=fabmon-t-sysfs-$$
ip netns add "$ns" 2>/dev/null || skip "unable to make a network namespace"
on_exit "ip netns del $ns"
ip -n "$ns" link set lo up
ip -n "$ns" link add d0 type veth peer name d1 && ip -n "$ns" link set d0 up ||
	fail "unable to add a veth pair"
in_ns() { ip netns exec "$ns" "$@"; }
# every tc filter on the namespace's interfaces, either direction
filters() {
	for dev in lo d0; do
		for dir in ingress egress; do in_ns tc filter show dev "$dev" "$dir"; done
	done
}
[ -z "$(filters)" ] || fail "a fresh namespace with tc filters: $(filters)"
root=$WORK/sys
netdev_tree "$root" eth0 1
port=$(free_port)

# ns_agent ARGS...: an agent in the namespace, ticking every 200ms; waits for
# three ticks
ns_agent() {
	# not through in_ns: a function run in the background is a subshell,
	# and AGENT_PID would be its pid, not the agent's
	ip netns exec "$ns" "$FABMON" agent --listen "127.0.0.1:$port" --db "$WORK/s.db" --interval 200ms \
		--sysfs-root "$root" "$@" >"$WORK/agent.log" 2>&1 &
	AGENT_PID=$!
	on_exit "kill -9 $AGENT_PID"
	for _ in $(seq 100); do
		in_ns curl -sf "http://127.0.0.1:$port/metrics" >"$WORK/metrics" 2>/dev/null &&
			awk '$1 == "fabmon_ticks_total" && $2 >= 3 { ok = 1 } END { exit !ok }' \
				"$WORK/metrics" && return 0
		kill -0 "$AGENT_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$WORK/agent.log" >&2
	fail "agent $* not ticking"
}
stop_agent() {
	kill -TERM "$AGENT_PID"
	wait "$AGENT_PID"
}

ns_agent
[ -z "$(filters)" ] || fail "tc filters on the namespace's interfaces: $(filters)"
grep -q '^fabmon_collector_up{collector="netdev"} 1$' "$WORK/metrics" ||
	fail "netdev not up on the tree: $(grep collector_up "$WORK/metrics")"
for c in bpf pcap; do
	! grep -q "^fabmon_collector_up{collector=\"$c\"}" "$WORK/metrics" ||
		fail "$c runs with --sysfs-root $root and the default collectors"
done
grep -q "bpf, pcap and sockets left off: sysfs_root is not /sys" "$WORK/agent.log" ||
	fail "no word on bpf, pcap and sockets left off: $(cat "$WORK/agent.log")"
stop_agent
echo "default collectors with --sysfs-root: bpf and pcap off, said once, no tc filter"

# asked for by name, bpf runs (where this host can load it) and attaches
ns_agent --collectors netdev,bpf
grep -q '^fabmon_collector_up{collector="bpf"}' "$WORK/metrics" ||
	fail "bpf named in --collectors but not run: $(cat "$WORK/agent.log")"
if grep -q '^fabmon_collector_up{collector="bpf"} 1$' "$WORK/metrics"; then
	[ -n "$(filters)" ] || fail "bpf up, and no tc filter seen: the check above cannot fail"
	echo "--collectors netdev,bpf: bpf up, its tc filters seen"
else
	echo "--collectors netdev,bpf: bpf run but down here ($(grep 'collector bpf' "$WORK/agent.log"))"
fi
! grep -q "left off" "$WORK/agent.log" || fail "'left off' said with --collectors given"
stop_agent
exit 0
