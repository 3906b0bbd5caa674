#!/bin/bash
# SPDX-License-Identifier: MIT
# A connection entry that nothing has touched for as long as it has waited
# (no ACK, no retransmission, no close) is a connection that went away
# unseen, not a stall: a live one with data out retransmits at every RTO.
# Two entries go into the agent's fm_tcp map (tests/lab/tcpinject.c), both
# 5 s without ack progress: one quiet all that time (gone), one touched
# 100 ms ago (alive). Only the live one shows an ack stall and a stall event.
. tests/lib.sh
need_root
LAB_BIN=${LAB_BIN:-$PWD/build/lab}
[ -x "$LAB_BIN/tcpinject" ] || fail "no tcpinject in $LAB_BIN"
port=$(free_port)
# no interface for the tc probe: the tracepoints and their map are the test
start_agent "$port" --db "$WORK/o.db" --interval 100ms --collectors bpf --interfaces 'fmnone0'
[ "$(metric "$port" 'fabmon_probe_up{probe="tcp_retransmit"}')" = 1 ] ||
	skip "the tcp_retransmit probe is not up here: the orphan rule needs it ($(grep -m1 retransmit "$WORK/agent.log"))"
"$LAB_BIN/tcpinject" "$AGENT_PID" 198.18.7.1 5000 5000 >/dev/null || fail "tcpinject (gone) failed"
"$LAB_BIN/tcpinject" "$AGENT_PID" 198.18.7.2 5000 100 >/dev/null || fail "tcpinject (alive) failed"
gone='{peer="198.18.7.1",source="bpf"}'
alive='{peer="198.18.7.2",source="bpf"}'
for _ in $(seq 30); do
	a=$(metric "$port" "fabmon_tcp_ack_stall_seconds$alive")
	[ -n "$a" ] && awk -v v="$a" 'BEGIN { exit !(v >= 5) }' && break
	sleep 0.1
done
awk -v v="${a:-0}" 'BEGIN { exit !(v >= 5) }' || fail "live entry's ack stall: ${a:-absent}, want >= 5 s"
sleep 0.5
g=$(metric "$port" "fabmon_tcp_ack_stall_seconds$gone")
[ "${g:-0}" = 0 ] || fail "gone entry's ack stall: $g, want 0"
[ "$(metric "$port" 'fabmon_event_active{kind="stall",cause="network",subject="peer=198.18.7.2"}')" = 1 ] ||
	fail "no stall event on the live entry's peer: $(grep event "$WORK/agent.log")"
[ -z "$(metric "$port" 'fabmon_event_active{kind="stall",cause="network",subject="peer=198.18.7.1"}')" ] ||
	fail "a stall event on the gone entry's peer"
echo "live entry: ack stall $a s and a stall event; gone entry: ack stall ${g:-0}, no event"
