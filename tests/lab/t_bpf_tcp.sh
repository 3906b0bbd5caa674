#!/bin/bash
# SPDX-License-Identifier: MIT
# TCP health from the tracepoints, on the sender: a tbf bottleneck with a small
# buffer on the switch port towards the receiver makes the sender retransmit
# and its smoothed RTT rise, and the drops show up by reason.
. tests/lib.sh
. tests/lab/lab.sh
need_root
lab_up 2
lab_agent 2 --db "$WORK/t.db" --interval 500ms --collectors bpf --interfaces eth0
m() { lab_metric "$1"; }
for p in tcp_retransmit tcp_probe kfree_skb; do
	[ "$(m "fabmon_probe_up{probe=\"$p\"}")" = 1 ] || { cat "$WORK/agent.log"; fail "probe $p not up"; }
done
send() { # BYTES PORT: rank 2 sends to rank 1
	lab_exec 1 timeout 30 nc -l -p "$2" >/dev/null &
	listener=$!
	sleep 0.3
	head -c "$1" /dev/zero | lab_exec 2 timeout 30 nc -N 198.18.0.1 "$2" || fail "send failed"
	wait $listener
}
peer='{peer="198.18.0.1",source="bpf"}'
# peak_srtt BYTES PORT: the largest srtt gauge while rank 2 sends (3 s at most
# of sampling); closed connections leave the gauge, so it is read meanwhile
peak_srtt() {
	send "$1" "$2" &
	sendpid=$!
	peak=0
	for _ in $(seq 15); do
		v=$(m "fabmon_tcp_srtt_seconds$peer")
		awk -v a="${v:-0}" -v b="$peak" 'BEGIN { exit !(a > b) }' && peak=$v
		kill -0 $sendpid 2>/dev/null || break
		sleep 0.2
	done
	wait $sendpid
}
peak_srtt 3000000000 5001
rtt0=$peak
sleep 0.6
re0=$(m "fabmon_tcp_retransmits_total$peer")
awk -v a="$rtt0" 'BEGIN { exit !(a > 0) }' || { lab_scrape | grep tcp_; fail "no srtt for the peer"; }
# the switch port towards rank 1: 10 Mbit/s, where a full segment takes
# 1.2 ms to cross, with room for 10 packets (12 ms), which a sender that
# fills it keeps partly full; with room for 3 (3.6 ms) the queue drained
# after each loss and the segments that followed went through on the
# bucket's burst: a CI run's peak srtt was 1.12 ms
ip -n "$LAB-sw" link show "$LAB-p1" >/dev/null || fail "no switch port"
ip netns exec "$LAB-sw" tc qdisc add dev "$LAB-p1" root tbf rate 10mbit burst 4k limit 15000 ||
	fail "unable to add tbf"
peak_srtt 4000000 5002
rtt1=$peak
sleep 1.2
re1=$(m "fabmon_tcp_retransmits_total$peer")
# nothing is sent towards rank 2, so none of its retransmissions is its own
# port's (collector/bpf/tcp_loss.h): every one is the path's
path1=$(m "fabmon_tcp_path_retransmits_total$peer")
drops=$(lab_scrape | awk '/^fabmon_kernel_drops_total/ { s += $2 } END { print s + 0 }')
echo "srtt ${rtt0}s unthrottled, ${rtt1}s peak through the bottleneck; retransmits ${re0:-0} -> $re1 (the path's: $path1); kernel drops $drops"
# a full segment takes 1.2 ms to cross 10 Mbit/s, and a standing queue
# more; the unthrottled path's srtt is the host's scheduling (0.17-1.2 ms
# seen here as other labs ran), so the floor is the bottleneck's, not a
# ratio
awk -v a="$rtt1" -v b="$rtt0" 'BEGIN { exit !(a >= 0.0012 && a > b) }' ||
	fail "srtt did not rise to the bottleneck's 1.2 ms ($rtt0 -> $rtt1)"
awk -v a="$re1" -v b="${re0:-0}" 'BEGIN { exit !(a > b) }' || fail "no retransmits counted"
[ "${path1:-none}" = "$re1" ] || fail "the path's retransmits ($path1) are not all of them ($re1)"
[ "$drops" -gt 0 ] || fail "no drops counted"
exit 0
