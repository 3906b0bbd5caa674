#!/bin/bash
# SPDX-License-Identifier: MIT
# One agent per network namespace, and a tc probe that is not lost in
# silence. With traffic flowing into rank 1 and its agent attached to eth0:
# `fabmon doctor` leaves the filters and the counters alone and names the
# agent; a second agent in the namespace exits 1 naming the first one's pid
# and leaves it alone too; `tc filter del` on eth0 takes the probe down
# (fabmon_probe_up{probe="tc"} 0, said once in the log, the reason in
# doctor) until collector_retry puts it back, and the counters rise again.
. tests/lib.sh
. tests/lab/lab.sh
need_root
lab_up 2
lab_agent 1 --db "$WORK/a.db" --interval 200ms --collectors bpf --interfaces eth0 \
	--collector-retry 10s
up='fabmon_probe_up{probe="tc"}'
rx='fabmon_bpf_packets_total{interface="eth0",direction="rx"}'
doctor() { lab_exec 1 "$FABMON" doctor --db "$WORK/none.db" --collectors bpf --interfaces eth0; }
attached() { [ "$(lab_filters 1 eth0 ingress)" = 1 ] && [ "$(lab_filters 1 eth0 egress)" = 1 ]; }

[ "$(lab_metric "$up")" = 1 ] || { cat "$WORK/agent.log"; fail "tc probe not up"; }
attached || fail "no fabmon filters on eth0"
# 120 s at most; stopped by lab_down
lab_spawn 2 timeout 120 ping -q -i 0.05 -c 2400 198.18.0.1
lab_rising "$rx"

# 1. doctor reports and changes nothing
out=$(doctor) || fail "doctor failed: $out"
attached || fail "doctor took the agent's filters: $out"
lab_rising "$rx"
echo "$out" | grep -q "^tc .*agent pid $AGENT_PID" || fail "doctor does not name agent pid $AGENT_PID: $out"
! echo "$out" | grep -qi "removed" || fail "doctor says it removed something: $out"
echo "$out" | grep '^tc '

# 2. a second agent in the namespace: exit 1, naming the first
out=$(lab_exec 1 timeout 20 "$FABMON" agent --listen "127.0.0.1:$(free_port)" \
	--db "$WORK/b.db" --collectors bpf --interfaces eth0 2>&1)
rc=$?
[ $rc = 1 ] || fail "second agent: exit $rc, want 1: $out"
echo "$out" | grep -q "pid $AGENT_PID" || fail "second agent does not name pid $AGENT_PID: $out"
echo "second agent: exit 1: $(echo "$out" | tail -n 1)"
attached || fail "the second agent took the first one's filters"
[ "$(lab_metric "$up")" = 1 ] || fail "tc probe down after the second agent"
lab_rising "$rx"

# 3. someone deletes the agent's ingress filter: down, said once, back at
# the next collector_retry (10 s: doctor, slow to load its probes on a busy
# host, must look before the filters are back), counting again
lab_exec 1 tc filter del dev eth0 ingress || fail "tc filter del failed"
lab_await_metric "$up" 0 5
# and 0 is the truth: nothing counts eth0's ingress until it is back
a=$(lab_metric "$rx")
sleep 1
b=$(lab_metric "$rx")
[ "$(lab_metric "$up")" = 0 ] && [ "$a" != "$b" ] && fail "$rx rose from $a to $b while $up was 0"
echo "tc filter del: $up 0, $rx stands at $b"
out=$(doctor)
echo "$out" | grep -q "eth0.*gone" || fail "doctor does not say the filter is gone: $out"
echo "$out" | grep '^tc '
lab_await_metric "$up" 1 20
attached || fail "filters not back on eth0 after $up went 1"
lab_rising "$rx"
n=$(grep -c "eth0.*gone" "$WORK/agent.log")
[ "$n" = 1 ] || { cat "$WORK/agent.log"; fail "the loss was logged $n times, want once"; }
grep "eth0" "$WORK/agent.log" | tail -n 2

# 4. a clean stop detaches and lets go of the lock
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || fail "agent exit status $? after SIGTERM"
[ "$(lab_filters 1 eth0 ingress)" = 0 ] && [ "$(lab_filters 1 eth0 egress)" = 0 ] ||
	fail "filters left after SIGTERM"
out=$(doctor)
echo "$out" | grep -q "agent pid" && fail "doctor still names an agent after it stopped: $out"
exit 0
