#!/bin/bash
# SPDX-License-Identifier: MIT
# A request and a large response on a connection that then stays open idle,
# as a Prometheus scrape is: once the response is acknowledged, the sender's
# agent must show nothing in flight and no wait for ACKs. The response goes
# out in one send() that holds the socket while the receiver's ACKs arrive;
# the kernel merges those in the socket's backlog, and only the merged
# segment's control block, not its header, carries the last ACK.
. tests/lib.sh
. tests/lab/lab.sh
need_root
lab_up 2
lab_agent 2 --db "$WORK/t.db" --interval 200ms --collectors bpf --interfaces eth0
[ "$(lab_metric 'fabmon_probe_up{probe="tcp_probe"}')" = 1 ] ||
	{ cat "$WORK/agent.log"; fail "probe tcp_probe not up"; }

# rank 2 answers 5 requests with 75 kB each (a scrape's size: within one
# congestion window, so the whole response leaves in the send() call) and
# keeps the connection; rank 1 reads each and keeps it too, 4 s in all
lab_exec 2 timeout 20 python3 -c '
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("198.18.0.2", 5301)); s.listen(1)
c, _ = s.accept()
for _ in range(5):
    c.recv(100); c.sendall(b"x" * 75000)
time.sleep(6)
' &
server=$!
sleep 0.5
lab_exec 1 timeout 20 python3 -c '
import socket, time
c = socket.create_connection(("198.18.0.2", 5301))
for _ in range(5):
    c.sendall(b"GET")
    n = 0
    while n < 75000:
        n += len(c.recv(1 << 20))
    time.sleep(0.1)
time.sleep(4)
' &
client=$!
peer='{peer="198.18.0.1",source="bpf"}'
lab_await_metric "fabmon_tcp_connections$peer" 1 5
# the responses are acknowledged within a second; then 2 s of idle connection
sleep 1.5
worst=0
for _ in $(seq 10); do
	f=$(lab_metric "fabmon_tcp_in_flight_bytes$peer")
	w=$(lab_metric "fabmon_tcp_ack_stall_seconds$peer")
	[ "$f" = 0 ] || fail "the idle connection shows $f bytes in flight (ack stall ${w}s)"
	awk -v a="$w" -v b="$worst" 'BEGIN { exit !(a > b) }' && worst=$w
	sleep 0.2
done
wait $client || fail "the client did not read the response"
wait $server
echo "5 responses of 75 kB acknowledged, connection idle 2 s: 0 bytes in flight, ack stall ${worst}s at most"
[ "$worst" = 0 ] || fail "an idle connection waits ${worst}s for ACKs"
exit 0
