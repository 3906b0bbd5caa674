#!/bin/bash
# SPDX-License-Identifier: MIT
# `fabmon replay` on captures of known content. pcapgen (tests/lab/pcapgen.c)
# writes each capture and prints what it holds; tshark, which shares no code
# with fabmon, must read the same from it, so the truth is checked before
# fabmon is held to it. Then the replay's totals must equal it over IPv4, IPv6,
# VLAN, Linux cooked SLL and SLL2, pcapng, and a capture with every kind of
# event; and damaged input must end as the CLI contract says: exit 1 naming
# the file (unreadable) or the packet where it broke (damaged part-way, with
# what came before counted), exit 0 with cut packets counted as unparsed
# (snap length), exit 2 on usage errors, never a crash.
. tests/lib.sh
LAB_BIN=${LAB_BIN:-$PWD/build/lab}
GEN=$LAB_BIN/pcapgen

command -v tshark >/dev/null ||
	skip "tshark missing: no independent reader to check the captures with (make deps installs it)"
[ -x "$GEN" ] || skip "$GEN missing: the capture generator is not built (make build/lab/pcapgen)"
command -v editcap >/dev/null || fail "editcap missing (wireshark-common, which tshark depends on)"
command -v jq >/dev/null || fail "jq missing (make deps installs it)"

# The per-queue-pair fields whose sums over "qps" are pcapgen's fields.
QP_FIELDS="send write read_request read_response ack cnp acks naks_psn_sequence naks_rnr
naks_other ecn_ce psn_gaps psn_missing psn_duplicates psn_behind"

# gen NAME FLAGS...: writes $WORK/NAME.pcap, and what it holds to $WORK/NAME.json.
gen() {
	name=$1; shift
	"$GEN" --output "$WORK/$name.pcap" "$@" >"$WORK/$name.json" 2>"$WORK/gen.err" ||
		fail "pcapgen $*: $(cat "$WORK/gen.err")"
}

# same WHAT EXPECTED GOT: fails naming every field of the JSON object EXPECTED
# that the JSON object GOT does not hold with the same value.
same() {
	diff=$(jq -rn --argjson e "$2" --argjson g "$3" '$e | keys_unsorted[] as $k |
		select($e[$k] != $g[$k]) | "\($k) expected \($e[$k]), got \($g[$k])"') ||
		fail "$1: not JSON: $3"
	[ -z "$diff" ] || fail "$1: $(echo "$diff" | paste -sd ';' | sed 's/;/; /g')"
}

# tshark_counts FILE: what tshark reads in FILE, with pcapgen's field names,
# plus "ack_requests", the requests with the A bit set, and PFC frames and
# pause times per priority from its MAC Control fields. Its own arithmetic:
# opcodes by IBTA table 38, AETH syndromes as tshark splits them, and the PSN
# order per queue pair and direction in 24-bit serial arithmetic, where a
# READ request takes a PSN per response packet (IBTA 9.7.2): its DMA length
# over the PMTU that READ response first and middle packets carry (4096
# until one is seen), one for 0 bytes.
tshark_counts() {
	tshark -n -r "$1" -d udp.port==4791,infiniband -T fields -E occurrence=f \
		-e frame.len -e ip.src -e ipv6.src -e ip.dst -e ipv6.dst -e ip.dsfield.ecn \
		-e ipv6.tclass.ecn -e infiniband.bth.opcode -e infiniband.bth.destqp \
		-e infiniband.bth.psn -e infiniband.bth.a -e infiniband.aeth.syndrome.opcode \
		-e infiniband.aeth.syndrome.error_code -e infiniband.reth.dmalen -e udp.length \
		$(for c in 0 1 2 3 4 5 6 7; do echo "-e macc.cbfc.enbv.c$c -e macc.cbfc.pause_time.c$c"; done) \
		>"$WORK/tshark.out" 2>"$WORK/tshark.err" ||
		fail "tshark -r $1: $(grep -v '^Running as user' "$WORK/tshark.err")"
	awk -F'\t' '
	function order(k, psn, d, span, pmtu) {
		if (k in last) {
			pmtu = learnt ? learnt : 4096
			span = k in rlen && rlen[k] > 0 ? int((rlen[k] + pmtu - 1) / pmtu) : 1
			d = (psn - last[k] + 16777216) % 16777216
			if (d == 0)
				dup++
			else if (d > span && d < 8388608) {
				gap++
				missing += d - span
			} else if (d != span)
				behind++
		} else
			qps++
		last[k] = psn
	}
	{ packets++; bytes += $1 }
	# PFC: priority c is enabled in field 16 + 2c, its pause time in 17 + 2c
	$16 != "" { for (c = 0; c < 8; c++) if ($(16 + 2 * c) == 1) { pfc[c]++; quanta[c] += $(17 + 2 * c) } }
	$8 == "" { next }
	{ roce++; ce += ($6 == 3 || $7 == 3) }
	$8 == 4 || $8 == 10 || $8 == 12 {
		send += $8 == 4; write += $8 == 10; read_req += $8 == 12; areq += $11 == 1
		k = $2 $3 ">" $4 $5 ":" $9
		order(k, $10)
		if ($8 == 12)
			rlen[k] = $14
		else
			delete rlen[k]
	}
	$8 >= 13 && $8 <= 16 {
		read_resp++
		if ($8 != 14 && $12 == 0)
			acks++
		# first and middle: PMTU bytes between UDP 8 + BTH 12 (+ AETH 4) and ICRC 4
		if ($8 <= 14 && $15 - 24 - ($8 == 13) * 4 > learnt)
			learnt = $15 - 24 - ($8 == 13) * 4
	}
	$8 == 17 {
		ack++
		if ($12 == 0) acks++
		else if ($12 == 1) rnr++
		else if ($12 == 3 && $13 == 0) nak++
		else nak_other++
	}
	$8 == 129 { cnp++ }
	END {
		printf "{\"packets\":%d,\"bytes\":%.0f,\"roce_packets\":%d,\"qps\":%d,", packets, bytes,
			roce, qps
		printf "\"send\":%d,\"write\":%d,\"read_request\":%d,\"read_response\":%d,", send,
			write, read_req, read_resp
		printf "\"ack\":%d,\"cnp\":%d,\"acks\":%d,", ack, cnp, acks
		printf "\"naks_psn_sequence\":%d,\"naks_rnr\":%d,\"naks_other\":%d,\"ecn_ce\":%d,",
			nak, rnr, nak_other, ce
		printf "\"psn_gaps\":%d,\"psn_missing\":%d,\"psn_duplicates\":%d,", gap, missing,
			dup
		printf "\"psn_behind\":%d,\"ack_requests\":%d,", behind, areq
		printf "\"pfc_frames\":[%d,%d,%d,%d,%d,%d,%d,%d],", pfc[0], pfc[1], pfc[2], pfc[3],
			pfc[4], pfc[5], pfc[6], pfc[7]
		printf "\"pfc_quanta\":[%d,%d,%d,%d,%d,%d,%d,%d]}\n", quanta[0], quanta[1], quanta[2],
			quanta[3], quanta[4], quanta[5], quanta[6], quanta[7]
	}' "$WORK/tshark.out"
}

# replay FILE...: fabmon replay --json; stdout in $WORK/out, stderr in
# $WORK/err, the exit status in RC. A crash fails the test whatever was expected.
replay() {
	"$FABMON" replay --json "$@" >"$WORK/out" 2>"$WORK/err"
	RC=$?
	[ $RC -lt 128 ] || fail "fabmon replay $*: crashed, exit $RC: $(head -c 300 "$WORK/err")"
}

# replay_totals: the replay in $WORK/out with pcapgen's field names (per-QP
# fields summed; "qps" the queue pairs that carried requests), plus the sums of
# the per-QP packets and bytes.
replay_totals() {
	jq -c --arg fields "$QP_FIELDS" '.qps as $q | {packets, bytes, roce_packets, pfc_frames, pfc_quanta,
		qps: ([$q[] | select(.send + .write + .read_request > 0)] | length),
		qp_packets: ([$q[].packets] | add // 0), qp_bytes: ([$q[].bytes] | add // 0)} +
		(reduce ($fields | splits("\\s+")) as $k ({}; .[$k] = ([$q[][$k]] | add // 0)))' \
		"$WORK/out" || fail "replay output is not JSON: $(head -c 300 "$WORK/out")"
}

# check NAME [FILE]: tshark, then fabmon replay, must find in FILE (default
# $WORK/NAME.pcap) what $WORK/NAME.json says it holds.
check() {
	f=${2:-$WORK/$1.pcap}
	want=$(cat "$WORK/$1.json")
	got=$(tshark_counts "$f")
	same "$f: tshark" "$want" "$got"
	same "$f: tshark, requests with the A bit" \
		"$(jq -c '{ack_requests: (.ack - .naks_psn_sequence - .naks_rnr)}' <<<"$want")" "$got"
	replay "$f"
	[ $RC -eq 0 ] || fail "fabmon replay $f: exit $RC, want 0: $(head -c 300 "$WORK/err")"
	got=$(replay_totals)
	same "$f: fabmon replay" "$want" "$got"
	same "$f: fabmon replay, per-QP sums" \
		"$(jq -c '{qp_packets: .roce_packets, qp_bytes: (.bytes - (.pfc_frames | add) * 60)}' \
			<<<"$want")" "$got"
	# pcapgen's default step is a microsecond a packet: the last comes
	# packets - 1 microseconds after the first
	same "$f: fabmon replay" \
		"$(jq -c --arg f "$f" '{file: $f, roce_unparsed: 0, unparsed: 0, errors: [],
			duration_us: (.packets - 1)}' <<<"$want")" \
		"$(jq -c '{file, roce_unparsed, unparsed, errors,
			duration_us: (.duration_seconds * 1e6 + 0.5 | floor)}' "$WORK/out")"
	jq -e '.link_type != null' "$WORK/out" >/dev/null || fail "$f: fabmon replay: no link_type"
	echo "$f: $(jq -c '{packets, roce_packets, pfc: (.pfc_frames | add), qps, acks, naks_psn_sequence, naks_rnr, cnp,
		ecn_ce, psn_gaps, psn_duplicates}' <<<"$want") as generated, read by tshark and replay"
}

# put_u32 FILE OFFSET VALUE: overwrites 4 bytes, in the byte order of FILE's magic.
put_u32() {
	set -- "$1" "$2" $(($3 & 255)) $(($3 >> 8 & 255)) $(($3 >> 16 & 255)) $(($3 >> 24 & 255))
	if [ "$(od -An -tx1 -N1 "$1" | tr -d ' ')" = d4 ]; then
		bytes=$(printf '\\0%03o' "$3" "$4" "$5" "$6")
	else
		bytes=$(printf '\\0%03o' "$6" "$5" "$4" "$3")
	fi
	printf '%b' "$bytes" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# expect_usage ARGS...: fabmon replay --json ARGS must exit 2 and say how to use it.
expect_usage() {
	replay "$@"
	[ $RC -eq 2 ] || fail "fabmon replay --json $*: exit $RC, want 2"
	cat "$WORK/out" "$WORK/err" | grep -q "usage: fabmon replay" ||
		fail "fabmon replay --json $*: no usage: $(head -c 300 "$WORK/err")"
}

# ---- whole captures ----
gen v4 --packets 1000 --qps 4 --ack-every 16
gen v6 --ipv6 --packets 1000 --qps 3 --ack-every 10 --ce-every 9
gen vlan --vlan 100 --packets 800 --qps 2 --cnp-every 25
gen sll --link sll --packets 600 --qps 5 --nak-every 40 --payload 4096
gen sll2 --link sll2 --ipv6 --vlan 7 --packets 600 --qps 1 --rnr-every 30 --payload 0
# RFC 8200 4.1's extension headers before UDP: four (destination options once)
# and five (twice: before the routing header and before the upper layer)
gen v6ext4 --ipv6 --ipv6-ext 4 --packets 300 --qps 2 --ack-every 5 --gap-every 40
gen v6ext5 --ipv6 --ipv6-ext 5 --vlan 9 --packets 300 --qps 3 --cnp-every 20
# RDMA READs, each taking a PSN per response packet: 4 KiB at the default PMTU
# of 1024, 1500 bytes at 512 (the last packet short), zero-length ones
gen read --packets 600 --qps 3 --read-every 3 --payload 4096 --ack-every 8 --gap-every 50
gen read1500 --ipv6 --packets 300 --qps 2 --read-every 2 --payload 1500 --pmtu 512 \
	--nak-every 25 --psn-start 0xfffffe
gen read0 --packets 200 --qps 1 --read-every 1 --payload 0 --pmtu 256
# PFC frames from the switch among the RoCE traffic (60 bytes each on
# Ethernet, which the per-QP byte sums leave out): XOFFs and XONs on
# priority 3, counted per priority, none unparsed
gen pfc --packets 700 --qps 3 --pfc-every 9 --ack-every 11
# every kind of event; at 150, 300, ... a duplicate and a gap fall due at
# once (the duplicate wins); 256 PSNs before the wrap, some 700 packets per QP
gen events --packets 5000 --qps 7 --ack-every 7 --nak-every 97 --rnr-every 89 \
	--cnp-every 31 --ce-every 13 --gap-every 50 --dup-every 75 --payload 1023 \
	--psn-start 0xffff00
for n in v4 v6 vlan sll sll2 v6ext4 v6ext5 read read1500 read0 pfc events; do
	check $n
done
jq -e '.acks > 0 and .naks_psn_sequence > 0 and .naks_rnr > 0 and .cnp > 0 and .ecn_ce > 0 and
	.psn_gaps > 0 and .psn_duplicates > 0' "$WORK/events.json" >/dev/null ||
	fail "events.pcap lacks a kind of event: $(cat "$WORK/events.json")"
editcap -F pcapng "$WORK/events.pcap" "$WORK/events.pcapng" 2>"$WORK/editcap.err" ||
	fail "editcap -F pcapng: $(cat "$WORK/editcap.err")"
check events "$WORK/events.pcapng"
jq -e '.pfc_frames[3] > 0 and .pfc_quanta[3] > 0 and (.pfc_frames | add) == .pfc_frames[3]' \
	"$WORK/pfc.json" >/dev/null || fail "pfc.pcap lacks PFC frames on priority 3: $(cat "$WORK/pfc.json")"

# ---- the time PFC frames paused their link: a storm, given its speed ----
# tshark gives each frame's time and pause time; 802.1Qbb 36.1.3.3 says how
# they add up: a frame's pause (quanta x 512 bit times) runs until the next
# frame replaces it, so priority 3 is paused over the union, cut at the last
# packet. At 1 Gb/s (a quantum 512 ns) pcapgen's frames, 15-30 ms apart,
# ask up to 33 ms: paused most of the time, a pfc_storm; at 100 Gb/s under
# 2 %, none. Without the speed the time is unknown (null) and nothing is raised.
gen storm --packets 2000 --qps 3 --pfc-every 9 --ack-every 11 --time-step 500
paused_ref() { # MBPS: tshark's frames, summed by the rule above
	tshark -n -r "$WORK/storm.pcap" -T fields -E occurrence=f -e frame.time_relative \
		-e macc.cbfc.enbv.c3 -e macc.cbfc.pause_time.c3 2>/dev/null |
		awk -F'\t' -v mbps="$1" '
		{ t = $1 * 1e9; last = t }
		$2 == 1 { if (have) paused += (until < t ? until : t) - at
			  have = 1; at = t; until = t + $3 * 512 * 1000 / mbps }
		END { if (have) paused += (until < last ? until : last) - at
		      printf "%.6f\n", paused / 1e9 }'
}
for mbps in 1000 100000; do
	replay --interval 100ms --link-speed $mbps "$WORK/storm.pcap"
	[ $RC -eq 0 ] || fail "fabmon replay --link-speed $mbps: exit $RC: $(head -c 300 "$WORK/err")"
	want=$(paused_ref $mbps)
	got=$(jq -r '.pfc_paused_seconds[3]' "$WORK/out")
	awk -v w="$want" -v g="$got" 'BEGIN { exit !(g - w < 1e-6 && w - g < 1e-6) }' ||
		fail "replay --link-speed $mbps: priority 3 paused $got s, tshark's frames say $want s"
	storms=$(jq '[.events[] | select(.kind == "pfc_storm" and
		.subject == "interface=capture,priority=3")] | length' "$WORK/out")
	echo "at $mbps Mb/s: paused $got s (tshark's frames: $want s), pfc_storm events $storms"
	if [ $mbps = 1000 ]; then
		[ "$storms" = 1 ] || fail "at 1 Gb/s, paused $got s of the capture: no pfc_storm: $(jq -c .events "$WORK/out")"
	else
		[ "$storms" = 0 ] || fail "at 100 Gb/s, paused $got s: a pfc_storm: $(jq -c .events "$WORK/out")"
	fi
done
replay --interval 100ms "$WORK/storm.pcap"
jq -e '.pfc_paused_seconds[3] == null and .link_speed_mbps == null and
	([.events[] | select(.kind == "pfc_storm")] | length) == 0' "$WORK/out" >/dev/null ||
	fail "replay without --link-speed: $(jq -c '{pfc_paused_seconds, link_speed_mbps, events}' "$WORK/out")"
replay --link-speed 100G "$WORK/storm.pcap"
[ $RC -eq 2 ] || fail "replay --link-speed 100G: exit $RC, want 2 (usage)"
grep -q "pcap_link_speed\|Mb/s" "$WORK/err" || fail "replay --link-speed 100G: $(cat "$WORK/err")"

# ---- cut by the snap length: not damage ----
# At 40 bytes the UDP header is cut (IPv4 over Ethernet ends at 34, UDP at
# 42), at 50 the BTH (which ends at 54): "unparsed" or "roce_unparsed" for
# the first, "roce_unparsed" for the second.
for snap in 40 50; do
	gen snap$snap --packets 300 --qps 3 --ack-every 5 --snaplen $snap
	f=$WORK/snap$snap.pcap
	want=$(jq -c '{packets, bytes, roce_packets: 0}' "$WORK/snap$snap.json")
	same "$f: tshark" "$want" "$(tshark_counts "$f")"
	replay "$f"
	[ $RC -eq 0 ] || fail "fabmon replay $f: exit $RC, want 0: $(head -c 300 "$WORK/err")"
	same "$f: fabmon replay" "$want" "$(jq -c '{packets, bytes, roce_packets}' "$WORK/out")"
	cut=$(jq '.packets' <<<"$want")
	if [ $snap = 40 ]; then
		got=$(jq '.roce_unparsed + .unparsed' "$WORK/out")
	else
		got=$(jq '.roce_unparsed' "$WORK/out")
	fi
	[ "$got" = "$cut" ] ||
		fail "$f: fabmon replay: $cut packets cut before their BTH, counted unparsed: $got"
done
echo "snap length 40 and 50: every packet counted, none parsed as RoCE"

# ---- cut before the BTH or the AETH: counted apart, and named ----
# At 56 bytes a data packet keeps its BTH (which ends at 54) and an ACK loses
# its AETH (54 to 58): RoCEv2 packets, some cut. At 50 every BTH is cut: UDP
# frames, not RoCEv2 packets. One file holds both, in that order; tshark says
# which frames are which (a BTH opcode without an AETH syndrome).
gen aeth --packets 300 --qps 3 --ack-every 5 --snaplen 56
gen bth --packets 40 --qps 3 --ack-every 5 --snaplen 50 --time-start 1700000001
f=$WORK/cut.pcap
mergecap -F pcap -a -w "$f" "$WORK/aeth.pcap" "$WORK/bth.pcap" 2>"$WORK/mergecap.err" ||
	fail "mergecap -a: $(cat "$WORK/mergecap.err")"
tshark -n -r "$f" -d udp.port==4791,infiniband -T fields -E occurrence=f -e frame.number \
	-e udp.dstport -e infiniband.bth.opcode -e infiniband.aeth.syndrome \
	>"$WORK/tshark.out" 2>"$WORK/tshark.err" || fail "tshark -r $f: $(cat "$WORK/tshark.err")"
want=$(awk -F'\t' '$2 == 4791 && $3 == "" { bth++; cut[n++] = $1 }
	$3 != "" { roce++ } $3 == 17 && $4 == "" { aeth++; cut[n++] = $1 }
	END {
		printf "{\"roce_packets\":%d,\"roce_cut_before_bth\":%d,", roce, bth
		printf "\"roce_cut_after_bth\":%d,\"roce_unparsed\":%d,\"unparsed\":0,", aeth,
			bth + aeth
		printf "\"named\":["
		for (i = 0; i < n && i < 10; i++)
			printf "%s%d", i ? "," : "", cut[i]
		printf "]}\n"
	}' "$WORK/tshark.out")
jq -e '.roce_cut_before_bth > 0 and .roce_cut_after_bth > 0 and .roce_packets > 0' \
	<<<"$want" >/dev/null || fail "$f: tshark does not see both kinds of cut: $want"
replay "$f"
[ $RC -eq 0 ] || fail "fabmon replay $f: exit $RC, want 0: $(head -c 300 "$WORK/err")"
same "$f: fabmon replay" "$want" "$(jq -c '{roce_packets, roce_cut_before_bth,
	roce_cut_after_bth, roce_unparsed, unparsed, named: [.errors[].packet]}' "$WORK/out")"
for n in $(jq -r '.named[]' <<<"$want"); do
	grep -q "^fabmon replay: $f: packet $n: RoCEv2 \(BTH\|AETH\) cut short" "$WORK/err" ||
		fail "$f: stderr does not name packet $n: $(head -c 300 "$WORK/err")"
done
"$FABMON" replay "$f" >"$WORK/out" 2>/dev/null || fail "fabmon replay $f (tables) failed"
line=$(jq -r '"RoCEv2 packets \(.roce_packets) (\(.roce_cut_after_bth) of them cut before " +
	"their AETH or RETH), UDP 4791 frames cut before their BTH \(.roce_cut_before_bth),"' <<<"$want")
grep -qF "$line" "$WORK/out" || fail "$f: summary does not say '$line': $(sed -n 2p "$WORK/out")"
echo "cut before the BTH or AETH: $(jq -c 'del(.named)' <<<"$want"), the first ten named"

# ---- time that steps back: two captures concatenated ----
# 7 s from 1700000007 s, then 7 s from 1700000000 s (mergecap -a): capinfos
# gives the span, 14 s less one step; the detectors' clock must go on through
# both halves, a tick a second as over the same packets in time order.
gen later --packets 6000 --qps 4 --time-step 1000 --ack-every 6 --time-start 1700000007
gen earlier --packets 6000 --qps 4 --time-step 1000 --ack-every 6 --time-start 1700000000
f=$WORK/stepped.pcap
mergecap -F pcap -a -w "$f" "$WORK/later.pcap" "$WORK/earlier.pcap" 2>"$WORK/mergecap.err" &&
	mergecap -F pcap -w "$WORK/sorted.pcap" "$WORK/later.pcap" "$WORK/earlier.pcap" \
		2>"$WORK/mergecap.err" || fail "mergecap: $(cat "$WORK/mergecap.err")"
span=$(capinfos -M -u "$f" | sed -n 's/^Capture duration: *\([0-9.]*\) seconds$/\1/p')
[ -n "$span" ] || fail "capinfos -u $f: no duration"
span_us=$(awk -v s="$span" 'BEGIN { printf "%.0f", s * 1e6 }')
replay "$WORK/sorted.pcap"
ticks=$(jq .ticks "$WORK/out")
replay "$f"
[ $RC -eq 0 ] || fail "fabmon replay $f: exit $RC, want 0: $(head -c 300 "$WORK/err")"
# one step, from the later capture's last packet to the earlier's first:
# the whole span here
same "$f: fabmon replay" "{\"duration_us\":$span_us,\"ticks\":$ticks,\"time_steps_back\":1,
	\"time_step_back_max_us\":$span_us}" \
	"$(jq -c 'def us: if . == null then null else . * 1e6 + 0.5 | floor end;
		{duration_us: (.duration_seconds | us), ticks, time_steps_back,
		time_step_back_max_us: (.time_step_back_max_seconds | us)}' "$WORK/out")"
[ "$ticks" -ge 14 ] || fail "$WORK/sorted.pcap: $ticks ticks over 14 s"
"$FABMON" replay "$f" >"$WORK/out" 2>/dev/null || fail "fabmon replay $f (tables) failed"
grep -q "^time stepped back 1 time, by at most $span s" "$WORK/out" ||
	fail "$f: the summary does not say the time stepped back: $(head -n 3 "$WORK/out")"
echo "time stepping back once by $span s: duration $span s as capinfos says, $ticks ticks"

# ---- damaged part-way ----
# pcapgen writes the same records for the same flags: the capture of 60 data
# packets is a prefix of the one of 100, so damage just after it leaves
# exactly what it holds to be counted.
gen head --packets 60 --qps 2 --ack-every 8
gen whole --packets 100 --qps 2 --ack-every 8
head_size=$(stat -c %s "$WORK/head.pcap")
cmp -s -n "$head_size" "$WORK/head.pcap" "$WORK/whole.pcap" ||
	fail "pcapgen: 60 data packets are not a prefix of 100 with the same flags"
broken=$(($(jq .packets "$WORK/head.json") + 1))

head -c $((head_size + 8)) "$WORK/whole.pcap" >"$WORK/cut_header.pcap"
head -c $((head_size + 16 + 100)) "$WORK/whole.pcap" >"$WORK/cut_data.pcap"
cp "$WORK/whole.pcap" "$WORK/big_caplen.pcap"
put_u32 "$WORK/big_caplen.pcap" $((head_size + 8)) $((4 << 20)) # above 256 KiB and the snaplen
want=$(cat "$WORK/head.json")
for d in cut_header cut_data big_caplen; do
	f=$WORK/$d.pcap
	replay "$f"
	[ $RC -eq 1 ] || fail "fabmon replay $f: exit $RC, want 1: $(head -c 300 "$WORK/err")"
	grep -qw "$broken" "$WORK/err" ||
		fail "$f: fabmon replay: stderr does not name packet $broken: $(head -c 300 "$WORK/err")"
	same "$f: fabmon replay, before packet $broken" "$want" "$(replay_totals)"
done
echo "damaged at packet $broken (record header cut, data cut, caplen 4 MiB): exit 1, $((broken - 1)) packets counted"

# ---- a zero-length record: a frame with nothing captured, not damage ----
# 16 bytes of record header, caplen 0 and len 0, between the file header and
# the first record: counted and named as packet 1, the rest read as before
{
	head -c 24 "$WORK/head.pcap"
	printf '\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000'
	tail -c +25 "$WORK/head.pcap"
} >"$WORK/zero_len.pcap"
replay "$WORK/zero_len.pcap"
[ $RC -eq 0 ] || fail "zero-length record: exit $RC, want 0: $(head -c 300 "$WORK/err")"
[ "$(jq .packets "$WORK/out")" = $(($(jq .packets "$WORK/head.json") + 1)) ] ||
	fail "zero-length record: $(jq .packets "$WORK/out") packets counted"
[ "$(jq .unparsed "$WORK/out")" = 1 ] && [ "$(jq '.errors[0].packet' "$WORK/out")" = 1 ] ||
	fail "zero-length record: not counted as unparsed packet 1: $(jq -c '{unparsed, errors}' "$WORK/out")"
grep -q 'packet 1: Ethernet header cut short' "$WORK/err" ||
	fail "zero-length record: stderr does not name packet 1: $(head -c 300 "$WORK/err")"
echo "zero-length record: exit 0, counted as unparsed packet 1, the rest as before"

# ---- not a capture ----
printf 'this is not a capture file\n' >"$WORK/bad_magic.pcap"
: >"$WORK/empty.pcap"
for f in "$WORK/bad_magic.pcap" "$WORK/empty.pcap" "$WORK/missing.pcap"; do
	replay "$f"
	[ $RC -eq 1 ] || fail "fabmon replay $f: exit $RC, want 1: $(head -c 300 "$WORK/err")"
	[ ! -s "$WORK/out" ] || fail "fabmon replay $f: stdout not empty: $(head -c 300 "$WORK/out")"
	if [ "$(wc -l <"$WORK/err")" -ne 1 ] || ! grep -qF "$f" "$WORK/err"; then
		fail "fabmon replay $f: want one line on stderr naming the file, got: $(cat "$WORK/err")"
	fi
done
echo "bad magic, empty, missing: exit 1, one line naming the file"

# ---- detectors in capture time, and the database ----
# 4 queue pairs, a data packet every 1 ms in all (250/s to each receiver) for
# 6.4 s of capture time; every 10th data packet
# CE-marked: towards one receiver only (an incast), or towards all of them
# (a congested fabric: no incast). 1 s ticks, 2 to open.
gen incast --packets 6400 --qps 4 --time-step 1000 --ce-every 10 --ce-qp 3 --ack-every 8
gen uniform --packets 6400 --qps 4 --time-step 1000 --ce-every 10 --ack-every 8
replay --db "$WORK/replay.db" "$WORK/incast.pcap"
[ $RC -eq 0 ] || fail "replay --db of the incast capture: exit $RC: $(cat "$WORK/err")"
events=$(jq -c '[.events[] | {kind, subject}]' "$WORK/out")
[ "$events" = '[{"kind":"incast","subject":"peer=198.18.0.6"}]' ] ||
	fail "incast capture: events $events, want one incast naming 198.18.0.6 (queue pair 3's responder)"
ticks=$(jq .ticks "$WORK/out")
rows=$(sqlite3 "$WORK/replay.db" "SELECT count(*) FROM ticks") || fail "unable to read the database"
[ "$rows" = "$ticks" ] || fail "database holds $rows ticks, the replay ran $ticks"
row=$(sqlite3 "$WORK/replay.db" "SELECT kind, subject FROM events")
[ "$row" = "incast|peer=198.18.0.6" ] || fail "database events: '$row'"
first=$(sqlite3 "$WORK/replay.db" "SELECT min(ts_ms) FROM ticks")
[ "$first" -ge 1700000000000 ] && [ "$first" -le 1700000002000 ] ||
	fail "ticks stamped $first, not with the capture's time (1700000000 s)"
replay "$WORK/uniform.pcap"
[ "$(jq '.events | length' "$WORK/out")" = 0 ] ||
	fail "uniformly marked capture raised events: $(jq -c .events "$WORK/out")"
echo "detectors in capture time: incast on 198.18.0.6 found over $ticks ticks and stored" \
	"($rows tick rows, 1 event row); uniform marking: no event"

# ---- usage ----
expect_usage
expect_usage --no-such-flag "$WORK/v4.pcap"
echo "no FILE, unknown flag: exit 2 with usage"
exit 0
