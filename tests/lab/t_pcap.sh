#!/bin/bash
# SPDX-License-Identifier: MIT
# The pcap collector on real links. Rank 1's eth0 is captured as a mirror
# port: a RoCEv2 stream from rank 2 with PSN gaps shows in fabmon_roce_*
# with source="pcap", the same numbers roce_gen sent, and nothing dropped;
# so does loadgen's RoCEv2 all-to-all; PFC and PAUSE frames the switch port
# sends rank 1 are counted per priority.
# A second veth joins rank 1 (lldp0) to rank 2 (lldp1), where Debian's
# lldpd runs: fabmon_lldp_neighbor_info names its system and port, lldp0's
# link series carry neighbor="leaf-07/PORT", and the neighbour is gone once
# lldpd, frozen, lets the TTL it gave run out.
. tests/lib.sh
. tests/lab/lab.sh
need_root
command -v lldpd >/dev/null || skip "no lldpd (make deps)"
[ -x "${LAB_BIN:-$PWD/build/lab}/roce_gen" ] || fail "no roce_gen in ${LAB_BIN:-$PWD/build/lab}"
lab_up 2
ip link add lldp0 netns "$(lab_ns 1)" type veth peer name lldp1 netns "$(lab_ns 2)" ||
	fail "unable to create the LLDP link"
lab_exec 1 ip link set lldp0 up
lab_exec 2 ip link set lldp1 up
lab_agent 1 --db "$WORK/p.db" --interval 200ms --collectors pcap,netdev --pcap-interfaces eth0 \
	--lldp-interfaces lldp0
m() { lab_metric "$1"; }
# wait_metric SERIES WANT: until the value is WANT ("absent": until it is
# gone), 10 s at most; prints the last value
wait_metric() {
	for _ in $(seq 100); do
		v=$(m "$1")
		[ "${v:-absent}" = "$2" ] && break
		sleep 0.1
	done
	echo "${v:-absent}"
}
[ "$(m 'fabmon_pcap_capture_info{interface="eth0",mode="mirror"}')" = 1 ] ||
	{ cat "$WORK/agent.log"; fail "no mirror capture on eth0"; }

# 1. RoCEv2: 1000 packets to rank 1, a PSN skipped after every 100th
out=$(lab_exec 2 "$LAB_BIN/roce_gen" 198.18.0.1 1000 100) || fail "roce_gen failed"
gaps=$(echo "$out" | awk '{ print $4 }')
pk='{interface="eth0",peer="198.18.0.1",source="pcap"'
got=$(wait_metric "fabmon_roce_packets_total$pk,class=\"send\"}" 1000)
[ "$got" = 1000 ] || { cat "$WORK/agent.log"; fail "RoCE send packets to rank 1: $got, want 1000"; }
[ "$(m "fabmon_roce_psn_gaps_total$pk}")" = "$gaps" ] || fail "PSN gaps: want $gaps"
[ "$(m "fabmon_roce_psn_missing_total$pk}")" = "$gaps" ] || fail "missing PSNs: want $gaps"
[ "$(m "fabmon_roce_psn_duplicates_total$pk}")" = 0 ] || fail "duplicates where none were sent"
dropped=$(m 'fabmon_pcap_dropped_packets_total{interface="eth0",reason="buffer"}')
[ "$dropped" = 0 ] || fail "the capture dropped $dropped packets"
echo "mirror capture: roce_gen sent '$out'; fabmon counted $got sends, $gaps gaps, 0 dropped"

# 1b. loadgen's RoCEv2-over-UDP all-to-all between the two ranks for 2 s
# (about 350k packets a second both ways): rank 1's mirror sees every data
# packet its rank sends to rank 2, as loadgen counts them, and the ACKs
# coming back, and drops none
lab_loadgen all-to-all 2 --transport roce --size 256K
lab_loadgen_wait
sleep 0.5 # a tick to read the last of it
sent=$(awk '/^# roce:/ { print $4 }' "$WORK/all-to-all.0.out")
pk2='{interface="eth0",peer="198.18.0.2",source="pcap"'
got=$(m "fabmon_roce_packets_total$pk2,class=\"send\"}")
acks=$(m 'fabmon_roce_acks_total{interface="eth0",peer="198.18.0.1",source="pcap"}')
dropped=$(m 'fabmon_pcap_dropped_packets_total{interface="eth0",reason="buffer"}')
[ -n "$sent" ] && [ "${got:-0}" = "$sent" ] ||
	fail "loadgen rank 0 sent $sent RoCE packets (with retransmissions), the capture counted" \
		"${got:-none} (dropped $dropped)"
[ "${acks:-0}" -gt 0 ] || fail "no ACK from rank 2 counted"
[ "$dropped" = 0 ] || fail "the capture dropped $dropped packets of loadgen's stream"
echo "loadgen RoCEv2 all-to-all: rank 0 sent $sent packets, the mirror counted $got sends" \
	"and $acks ACKs back, 0 dropped"

# 1c. the switch pauses rank 1: PFC frames for priority 3 (five XOFFs of
# 0x1000 quanta, then an XON) and one 802.3x PAUSE, sent out of its port
# toward rank 1 (a raw socket in the switch's namespace): the mirror counts
# them per priority, as tshark names the fields, and none as unparsed
unparsed0=$(m 'fabmon_pcap_unparsed_packets_total')
ip netns exec "$LAB-sw" python3 -c '
import socket, struct, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[1], 0))
head = bytes.fromhex("0180c2000001" "020000000099") + struct.pack("!H", 0x8808)
def pfc(q): return head + struct.pack("!HH8H", 0x0101, 1 << 3, *[q if i == 3 else 0 for i in range(8)])
for q in [0x1000] * 5 + [0]:
	s.send(pfc(q).ljust(60, b"\0"))
s.send((head + struct.pack("!HH", 0x0001, 0xffff)).ljust(60, b"\0"))
' "$LAB-p1" || fail "unable to send PFC frames from the switch port"
got=$(wait_metric 'fabmon_pcap_pfc_frames_total{interface="eth0",priority="3"}' 6)
[ "$got" = 6 ] || fail "PFC frames on priority 3: $got, want 6"
[ "$(m 'fabmon_pcap_pfc_quanta_total{interface="eth0",priority="3"}')" = 20480 ] ||
	fail "PFC pause time on priority 3: want 5 x 4096 quanta"
[ "$(m 'fabmon_pcap_link_pause_frames_total{interface="eth0"}')" = 1 ] &&
	[ "$(m 'fabmon_pcap_link_pause_quanta_total{interface="eth0"}')" = 65535 ] ||
	fail "802.3x PAUSE: want 1 frame of 65535 quanta"
[ "$(m 'fabmon_pcap_unparsed_packets_total')" = "$unparsed0" ] || fail "PAUSE frames counted unparsed"
# timed at the veth's own 10000 Mb/s (a quantum 51.2 ns): the PAUSE's 65535
# quanta are 3.355392 ms, nothing after it; the XOFFs of 209.7 us each were
# cut short by the next, then by the XON
lp=$(wait_metric 'fabmon_pcap_link_pause_duration_seconds_total{interface="eth0"}' 0.003355392)
[ "$lp" = 0.003355392 ] || fail "802.3x PAUSE of 65535 quanta at 10 Gb/s: paused $lp s, want 0.003355392"
pp=$(m 'fabmon_pcap_pause_duration_seconds_total{interface="eth0",priority="3"}')
awk -v p="${pp:-0}" 'BEGIN { exit !(p > 0 && p <= 5 * 4096 * 51.2e-9) }' ||
	fail "5 XOFFs of 4096 quanta at 10 Gb/s, then an XON: paused ${pp:-none} s, want (0, 0.00105]"
echo "PFC from the switch port: 6 frames, 20480 quanta on priority 3 (paused $pp s)," \
	"1 link PAUSE (paused $lp s), none unparsed"

# 2. LLDP from lldpd on the far end of lldp0: every second, TTL 4 s
mkdir -p /run/lldpd # lldpd's privilege-separation chroot (made by its systemd unit)
# lldpd's own lldpcli runs as _lldpd: its socket's directory must be reachable
chmod 755 "$WORK"
sock=$WORK/lldpd.sock
start_lldpd() {
	# the settings as lldpd's start-up commands, then once more and an
	# update: a first frame may leave before the start-up commands ran
	printf 'configure system hostname leaf-07\nconfigure lldp tx-interval 1\n' \
		>"$WORK/lldpd.conf"
	lab_spawn 2 lldpd -d -u "$sock" -I lldp1 -O "$WORK/lldpd.conf" -S "fabmon lab leaf" \
		-m 198.18.9.9 >>"$WORK/lldpd.log" 2>&1
	LLDPD_PID=$LAB_PID
	for _ in $(seq 50); do
		lab_exec 2 lldpcli -u "$sock" -c "$WORK/lldpd.conf" >/dev/null 2>&1 && break
		sleep 0.1
	done
	lab_exec 2 lldpcli -u "$sock" update >/dev/null ||
		{ cat "$WORK/lldpd.log"; fail "lldpcli could not reach lldpd"; }
}
nb='fabmon_lldp_neighbor_info{interface="lldp0"'
# await_neighbor present|absent: until lldp0's neighbour is (10 s at most);
# fails with MESSAGE otherwise
await_neighbor() {
	for i in $(seq 100); do
		# lldpd may not have taken the interface yet when first told to
		# send: ask again every 2 s
		[ "$1" = present ] && [ $((i % 20)) = 0 ] &&
			lab_exec 2 lldpcli -u "$sock" update >/dev/null 2>&1
		if lab_scrape | grep -q "^$nb.*system_name=\"leaf-07\""; then
			[ "$1" = present ] && return 0
		else
			[ "$1" = absent ] && return 0
		fi
		sleep 0.1
	done
	lab_scrape | grep lldp
	cat "$WORK/lldpd.log"
	lab_exec 2 lldpcli -u "$sock" show interfaces 2>&1
	fail "$2"
}
start_lldpd
await_neighbor present "no LLDP neighbour on lldp0"
line=$(lab_scrape | grep "^$nb")
echo "$line" | grep -q 'port_description="lldp1"' || fail "port description: $line"
echo "$line" | grep -q 'management_address="198.18.9.9"' || fail "management address: $line"
mac=$(lab_exec 2 cat /sys/class/net/lldp1/address)
echo "$line" | grep -q "port_id=\"$mac\"" || fail "port id is not lldp1's MAC $mac: $line"
echo "LLDP: $line"
link=$(lab_scrape | grep '^fabmon_netdev_transmit_bytes_total{interface="lldp0"')
echo "$link" | grep -q ",neighbor=\"leaf-07/$mac\"}" ||
	fail "lldp0's link series carry no neighbor label: $link"
lab_scrape | grep '^fabmon_netdev_transmit_bytes_total{interface="eth0"' | grep -q neighbor &&
	fail "eth0, with no LLDP neighbour, has a neighbor label"
echo "link series: $link"

# 3. a neighbour that goes silent times out: lldpd frozen, not killed (a
# killed lldpd's unprivileged half still says goodbye, a TTL-0 LLDPDU that
# the same expiry handles at once). It stays frozen: lldpd thawed after
# SIGSTOP, or restarted, does not always send again on the veth.
t0=$(date +%s%N)
ip netns pids "$(lab_ns 2)" | xargs -r kill -STOP 2>/dev/null
await_neighbor absent "the neighbour stayed 10 s after lldpd froze (TTL 4 s)"
ms=$((($(date +%s%N) - t0) / 1000000))
[ $ms -ge 2000 ] || fail "a silent neighbour went after $ms ms, before its TTL could run out"
echo "lldpd frozen (SIGSTOP) -> neighbour expired after $ms ms (TTL 4 s)"
exit 0
