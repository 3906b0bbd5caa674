#!/bin/bash
# SPDX-License-Identifier: MIT
# loadgen on a 4-rank lab: every pattern over each transport completes on
# every rank with a summary and a nonzero bus bandwidth (and, over RoCE, with
# no PSN sent twice); a CE-marking switch port makes the receiver answer with
# CNPs that reach the sender; a rank paused for a second only slows the run;
# a killed rank makes every other rank fail within --timeout, each naming it.
. tests/lib.sh
. tests/lab/lab.sh
need_root
LOADGEN=${LAB_BIN:-$PWD/build/lab}/loadgen
[ -x "$LOADGEN" ] || fail "no $LOADGEN (make build/lab/loadgen)"
N=4
PEERS=198.18.0.1,198.18.0.2,198.18.0.3,198.18.0.4
port=20000

"$LOADGEN" --help >/dev/null || fail "--help did not exit 0"
"$LOADGEN" --rank 0 --ranks 2 >/dev/null 2>&1
[ $? = 2 ] || fail "an incomplete command line did not exit 2"
"$LOADGEN" --rank 0 --ranks 2 --peers 192.0.2.1,192.0.2.2 --pattern handoff --transport tcp \
	--size 1M --iters 1 >/dev/null 2>&1
[ $? = 2 ] || fail "peers outside the lab range were not refused with exit 2"

lab_up $N

# start NAME SECONDS ARGS...: loadgen rank r in lab rank r+1, each bounded by
# timeout(1); output in $WORK/NAME.r.{out,err}, pids (of timeout) in PIDS.
start() {
	name=$1 secs=$2
	shift 2
	port=$((port + 10)) # a fresh base per run: nothing from the last one answers
	PIDS=""
	for r in $(seq 0 $((N - 1))); do
		lab_spawn $((r + 1)) timeout -k 1 "$secs" "$LOADGEN" --rank "$r" --ranks $N \
			--peers $PEERS --port $port "$@" >"$WORK/$name.$r.out" 2>"$WORK/$name.$r.err"
		# if the test dies first: lab_spawn kills timeout(1), this its loadgen
		on_exit "pkill -KILL -P $LAB_PID"
		PIDS="$PIDS $LAB_PID"
	done
}

# finish NAME: waits for every rank; exit codes in $WORK/NAME.r.rc.
finish() {
	r=0
	for p in $PIDS; do
		wait "$p" 2>/dev/null # the shell would report the killed rank
		echo $? >"$WORK/$1.$r.rc"
		r=$((r + 1))
	done
}

# field NAME RANK KEY [N]: the N-th (default 1st) word after KEY on the summary line.
field() {
	awk -v k="$3" -v n="${4:-1}" '/^# summary:/ {
		for (i = 1; i <= NF; i++) if ($i == k) { print $(i + n); exit } }' "$WORK/$1.$2.out"
}

show() {
	for sr in $(seq 0 $((N - 1))); do
		echo "-- rank $sr (exit $(cat "$WORK/$1.$sr.rc" 2>/dev/null))"
		tail -n 4 "$WORK/$1.$sr.out" "$WORK/$1.$sr.err"
	done >&2
}

# ok NAME RANK: the rank exited 0 with a summary showing a nonzero busbw.
ok() {
	rc=$(cat "$WORK/$1.$2.rc")
	[ "$rc" = 0 ] || { show "$1"; fail "$1: rank $2 exited $rc"; }
	bw=$(field "$1" "$2" busbw_GBps 2)
	awk -v b="${bw:-0}" 'BEGIN { exit !(b > 0) }' || { show "$1"; fail "$1: rank $2: busbw '$bw'"; }
}

# roce_stat NAME RANK KEY: a counter from the "# roce:" line.
roce_stat() {
	awk -v k="$3" '/^# roce:/ { for (i = 1; i <= NF; i++) if ($i == k) { print $(i + 1); exit } }' \
		"$WORK/$1.$2.out"
}

# 1. each pattern over each transport
printf '%-15s %-5s %s\n' pattern trans 'busbw_GBps avg per rank'
for tr in tcp roce; do
	for pat in ring-allreduce all-gather all-to-all handoff; do
		name=$pat-$tr
		start "$name" 15 --pattern $pat --transport $tr --size 256K --iters 5 --timeout 5
		finish "$name"
		ranks=$(seq 0 $((N - 1)))
		if [ $pat = handoff ]; then
			ranks="0 1"
			for r in 2 3; do
				[ "$(cat "$WORK/$name.$r.rc")" = 0 ] && grep -q 'takes no part' "$WORK/$name.$r.out" ||
					{ show "$name"; fail "$name: idle rank $r"; }
			done
		fi
		line=""
		for r in $ranks; do
			ok "$name" "$r"
			[ "$(grep -c '^ ' "$WORK/$name.$r.out")" = 5 ] || fail "$name: rank $r: not 5 iterations"
			if [ $tr = roce ]; then
				[ "$(roce_stat "$name" "$r" retransmitted)" = 0 ] &&
					[ "$(roce_stat "$name" "$r" dropped)" = 0 ] ||
					{ show "$name"; fail "$name: rank $r retransmitted or dropped on a clean lab"; }
			fi
			line="$line $(field "$name" "$r" busbw_GBps 2)"
		done
		printf '%-15s %-5s%s\n' $pat $tr "$line"
	done
done

# 2. CE marks on the switch port towards rank 1 (lab rank 2): rank 1 answers
# each with a CNP, and rank 0, its ring predecessor, gets every one. Linux's
# ECN-marking qdiscs are not in every kernel; an nftables rule on the bridge
# marks like a switch would.
if command -v nft >/dev/null; then
	ip netns exec "$LAB-sw" nft -f - <<-EOF || fail "unable to add the CE-marking rule"
		table bridge fabmon_lab {
			chain ce {
				type filter hook forward priority 0;
				oifname "$LAB-p2" udp dport 4791 ip ecn ect0 numgen random mod 100 < 5 ip ecn set ce
			}
		}
	EOF
	start ce 15 --pattern ring-allreduce --transport roce --size 256K --iters 5 --timeout 5
	finish ce
	ip netns exec "$LAB-sw" nft delete table bridge fabmon_lab
	ok ce 0
	ok ce 1
	ce=$(roce_stat ce 1 ce_received)
	[ "${ce:-0}" -gt 0 ] || { show ce; fail "rank 1 saw no CE mark"; }
	[ "$(roce_stat ce 1 cnps_sent)" = "$ce" ] ||
		{ show ce; fail "rank 1 did not answer each CE with a CNP"; }
	[ "$(roce_stat ce 0 cnps_received)" = "$ce" ] ||
		{ show ce; fail "rank 0 did not get rank 1's CNPs"; }
	echo "CE: rank 1 got $ce CE-marked packets and sent as many CNPs, rank 0 received them"
else
	echo "note: nft not installed: CE -> CNP not exercised"
fi

# loadgen_pid: the loadgen that timeout(1) started as pid $1.
loadgen_pid() {
	for _ in $(seq 20); do
		c=$(pgrep -P "$1" loadgen) && { echo "$c"; return; }
		sleep 0.05
	done
	fail "no loadgen under pid $1"
}

# 3. rank 2 stopped for a second mid-run: every rank still exits 0, and the
# pause shows as one slow iteration on every other rank (so the stop did land
# in the run; the stopped rank itself may be stopped between two timed
# iterations and see none); the --duration stop ends every rank after the
# same iteration.
for tr in tcp roce; do
	name=stop-$tr
	start "$name" 20 --pattern ring-allreduce --transport $tr --size 256K --iters 1000000 \
		--duration 3 --timeout 10
	set -- $PIDS
	victim=$(loadgen_pid "$3")
	sleep 1
	kill -STOP "$victim"
	sleep 1
	kill -CONT "$victim"
	finish "$name"
	slowest=""
	waited=0
	iters=$(field "$name" 0 iters)
	for r in $(seq 0 $((N - 1))); do
		ok "$name" "$r"
		max=$(field "$name" "$r" time_us 6)
		awk -v m="$max" 'BEGIN { exit !(m >= 700000) }' && waited=$((waited + 1))
		[ "$(field "$name" "$r" iters)" = "$iters" ] && grep -q '^# stopped at --duration' \
			"$WORK/$name.$r.out" || { show "$name"; fail "$name: ranks stopped at different iterations"; }
		slowest="$slowest $max"
	done
	[ "$waited" -ge $((N - 1)) ] ||
		{ show "$name"; fail "$name: $waited ranks waited for the stopped rank (slowest:$slowest us)"; }
	echo "SIGSTOP 1 s, $tr: all ranks exit 0 after $iters iterations; slowest per rank (us):$slowest"
done

# 4. rank 2 killed mid-run: every other rank exits non-zero within --timeout
# (3 s; plus the moment lg_settle listens), naming rank 2 and its address.
for tr in tcp roce; do
	name=kill-$tr
	start "$name" 20 --pattern ring-allreduce --transport $tr --size 256K --iters 1000000 \
		--duration 15 --timeout 3
	set -- $PIDS
	victim=$(loadgen_pid "$3")
	sleep 1
	kill -KILL "$victim"
	t0=$(date +%s%N)
	finish "$name"
	secs=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
	for r in 0 1 3; do
		rc=$(cat "$WORK/$name.$r.rc")
		[ "$rc" = 1 ] || { show "$name"; fail "$name: rank $r exited $rc, want 1"; }
		grep -q 'rank 2 (198\.18\.0\.3)' "$WORK/$name.$r.err" ||
			{ show "$name"; fail "$name: rank $r does not name rank 2"; }
	done
	awk -v s="$secs" 'BEGIN { exit !(s <= 4.5) }' || fail "$name: the others took $secs s to stop"
	echo "kill, $tr: ranks 0, 1, 3 exit 1 within $secs s:"
	sed 's/^/    /' "$WORK/$name.0.err" "$WORK/$name.1.err" "$WORK/$name.3.err"
done
exit 0
