#!/bin/bash
# SPDX-License-Identifier: MIT
# Ring all-reduce on four ranks over TCP, switch ports at 400 Mbit/s, the
# agent on rank 3 itself with the sockets collector. Clean: no event. Then
# rank 3's loadgen is stopped (SIGSTOP) mid-ring: its kernel takes what
# rank 2 sends, into a receive buffer that may hold a whole chunk, so rank
# 2 need not see a window close (docs/events.md); but rank 3's own receive
# queue shows data standing unread, and a host_stall (cause host) naming
# this host's address opens once it has lasted host_stall_after. It closes
# after SIGCONT, and the ring finishes. The collector's unread bytes match
# what `ss` shows queued (Recv-Q) while the rank is stopped, and it counts
# no connection read; the connection it most likely waits on (the one to
# rank 4, which sends it nothing) has been quiet as long as ss says.
. tests/lib.sh
. tests/lab/lab.sh
need_root
[ -x "${LAB_BIN:-$PWD/build/lab}/loadgen" ] || fail "no loadgen in ${LAB_BIN:-$PWD/build/lab}"
lab_up 4
for r in 1 2 3 4; do
	lab_shape "$LAB-p$r" 400mbit
done
# its own namespace only, as on a host (the last --bpf-netns wins)
lab_agent 3 --db "$WORK/r.db" --interval 100ms --collectors bpf,sockets,pressure \
	--interfaces eth0 --bpf-netns "/run/netns/$(lab_ns 3)"
culprit=host=198.18.0.3

lab_clean_ring "$WORK/r.db" 5

lab_loadgen ring-allreduce 10
sleep 3
lab_loadgen_pid 3
rank3=$LAB_LOADGEN_PID
kill -STOP "$rank3"
sleep 1
# what the kernel shows queued, against the collector's tally (a reader
# stopped: neither moves while both are read)
ss_q=$(lab_exec 3 ss -Htn state established src 198.18.0.3 | awk '{ q += $1 } END { print q + 0 }')
got=$(lab_scrape metrics | awk '/^fabmon_tcp_unread_bytes\{local="198.18.0.3"\}/ { print $2 }')
[ -n "$got" ] && [ "$got" = "$ss_q" ] || fail "unread bytes: fabmon '$got', ss Recv-Q '$ss_q'"
echo "unread bytes with the rank stopped: fabmon $got, ss Recv-Q $ss_q"
# the awaited connection's quiet time against ss's lastrcv (milliseconds
# since it last received data) for the connections with nothing queued:
# it is one of them, read at most a sockets_interval (500ms) before
awaited=$(lab_metric 'fabmon_tcp_awaited_seconds{local="198.18.0.3"}')
lastrcv=$(lab_exec 3 ss -Htni state established src 198.18.0.3 | awk '
	$1 ~ /^[0-9]+$/ { q = $1; next }
	q == 0 && match($0, /lastrcv:[0-9]+/) { print substr($0, RSTART + 8, RLENGTH - 8) / 1000 }' | tr "\n" " ")
echo "awaited with the rank stopped: fabmon $awaited s; ss lastrcv of the empty connections: $lastrcv"
awk -v a="$awaited" -v l="$lastrcv" 'BEGIN { n = split(l, v, " "); for (i = 1; i <= n; i++)
	if (a - v[i] < 0.05 && v[i] - a < 1) exit 0; exit 1 }' ||
	fail "awaited $awaited s is no connection's lastrcv ($lastrcv)"
reading=$(lab_metric 'fabmon_tcp_reading_connections{local="198.18.0.3"}')
[ "$reading" = 0 ] || fail "a stopped rank's connections read: $reading"
kill -CONT "$rank3"
sleep 2
lab_fault host_stall $culprit 4 "kill -STOP $rank3" "kill -CONT $rank3"
lab_loadgen_wait
lab_expect "$WORK/r.db" host_stall $culprit
exit 0
