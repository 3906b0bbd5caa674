#!/bin/bash
# SPDX-License-Identifier: MIT
# One run of the scenario matrix (tests/bench/matrix.sh runs it, one process
# a seed): tests/bench/matrix_run.sh SEED RESULTS. The seed picks every
# parameter (tests/bench/matrix.py params SEED); this builds that lab, runs
# it and appends one JSON line to RESULTS (matrix.py collect).
#
# The run: a lab of RANKS ranks on one bridge, every switch port shaped to
# RATE (tbf) or not at all; one agent per rank at TICK that counts only its
# own namespace (--bpf-netns), on eth0 (bpf, netdev, qdisc, sockets); the culprit
# rank's agent also reads a copy of the RDMA fixture tree (--sysfs-root).
# Host load (stress-ng on both cores) when the seed says so, then traffic
# from one generator for SECS: loadgen (ring all-reduce, all-gather,
# all-to-all or a hand-off between ranks 1 and 2), iperf3 (rank r to rank
# r + 1, several streams) or peerflood (a writer thread per peer). After
# ONSET ms of clean traffic the fault goes in for HOLD_S s, then is undone
# and the traffic runs TAIL_S s more. A poller reads every agent's /metrics
# all along (onset -> event latency, and the cause label); at the end the
# agents stop and their databases give the events.
#
# Faults (on the culprit rank C): throttle (its switch port shaped to a
# fifth to a third of the others), loss (nftables numgen random on its port,
# both ways), pause (SIGSTOP to every process of its namespace but the
# agent), down (its switch port down), pfc and rdma_retx (its counter tree:
# waiting while nothing is sent; retransmission and sequence-error counters
# rising). Everything it starts dies with the lab on exit, also on failure.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh
. tests/lab/lab.sh
need_root
SEED=$1 RESULTS=$2
FABMON=${FABMON:-$PWD/build/fabmon}
LAB_BIN=${LAB_BIN:-$PWD/build/lab}
SHARED_FIXTURES=${SHARED_FIXTURES:-$PWD/../shared/fixtures}
HELPER="python3 tests/bench/matrix.py"
PORT=9478 # each agent in its own namespace: the same port for all
eval "$($HELPER params "$SEED")" || fail "no parameters for seed $SEED"
ms() { date +%s%3N; }
# until MS: sleeps until the wall clock reads MS
until_ms() {
	d=$(($1 - $(ms)))
	[ $d -le 0 ] || sleep "$(printf '%d.%03d' $((d / 1000)) $((d % 1000)))"
}

lab_up "$M_RANKS"
echo "$LAB" >"$WORK/lab"
rate=off
[ "$M_RATE_MBIT" = 0 ] || rate=${M_RATE_MBIT}mbit
for r in $(seq "$M_RANKS"); do
	[ $rate = off ] || lab_shape "$LAB-p$r" $rate
done
C=$M_CULPRIT
lab_sysfs "$WORK/sys"
port_dir=$WORK/sys/class/infiniband/mlx5_0/ports/1

# the helpers first: a python start-up took seconds once the agents load
# their probes. The poller polls from now on (an agent not up yet is
# skipped); the counter advancer waits for its schedule.
POLL_ARGS=$(for r in $(seq "$M_RANKS"); do printf '%s ' "$LAB-r$r:$PORT"; done)
$HELPER poll "$WORK/poll.log" $((M_SECS + 120)) $POLL_ARGS &
poller=$!
on_exit "kill $poller"
case $M_FAULT in
pfc | rdma_retx)
	$HELPER counters "$port_dir" "$M_FAULT" "$WORK/schedule" "$M_HOLD_S" "$WORK/onset" &
	on_exit "kill $!"
	;;
esac

AGENTS=""
# MATRIX_MESH=1: every agent also probes every rank (the mesh collector at
# its defaults), as a cluster that gives its agents their targets does
mesh=""
[ "${MATRIX_MESH:-0}" = 1 ] && mesh="--mesh-peers $(seq -s, -f '198.18.0.%g' 1 "$M_RANKS")"
for r in $(seq "$M_RANKS"); do
	extra=""
	[ "$r" = "$C" ] && extra="--sysfs-root $WORK/sys"
	# shellcheck disable=SC2086 # extra and mesh are lists
	lab_spawn $r "$FABMON" agent --listen "127.0.0.1:$PORT" --db "$WORK/r$r.db" \
		--interval "$M_TICK" --collectors "bpf,netdev,qdisc,sockets${extra:+,rdma}${mesh:+,mesh}" \
		--interfaces eth0 --bpf-netns "/run/netns/$LAB-r$r" $extra $mesh \
		>>"$WORK/agent.$r.log" 2>&1
	AGENTS="$AGENTS $LAB_PID"
done
for r in $(seq "$M_RANKS"); do
	for _ in $(seq 200); do
		lab_exec $r curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && continue 2
		sleep 0.1
	done
	tail -n 5 "$WORK/agent.$r.log" >&2
	fail "the agent of rank $r not ready after 20 s"
done

# in the switch's namespace, so that lab_down's kill takes its workers too
[ "$M_LOAD" = stress ] && lab_spawn sw stress-ng --cpu 2 --timeout $((M_SECS + 5)) --quiet

peers=$(seq -s, -f '198.18.0.%g' 1 "$M_RANKS")
t_traffic=$(ms)
case $M_GEN in
loadgen:*)
	lab_loadgen "${M_GEN#loadgen:}" "$M_SECS" >/dev/null
	;;
iperf3)
	for r in $(seq "$M_RANKS"); do
		lab_spawn $r iperf3 -s -p 5201 >"$WORK/iperf3-s.$r.out" 2>&1
	done
	sleep 0.5
	for r in $(seq "$M_RANKS"); do
		lab_spawn $r timeout -k 1 $((M_SECS + 5)) iperf3 -c "198.18.0.$((r % M_RANKS + 1))" \
			-p 5201 -P "$M_STREAMS" -t "$M_SECS" >"$WORK/iperf3.$r.out" 2>&1
	done
	;;
peerflood)
	for r in $(seq "$M_RANKS"); do
		lab_spawn $r "$LAB_BIN/peerflood" "198.18.0.$r" "$peers" 5301 "$M_SECS" \
			"$M_WRITE_BYTES" >"$WORK/peerflood.$r.out" 2>&1
	done
	;;
esac

onset_at=$((t_traffic + M_ONSET_MS))
case $M_FAULT in
none) fault="" undo="" ;;
throttle)
	fault="lab_shape $LAB-p$C ${M_THROTTLE_KBIT}kbit"
	undo="lab_shape $LAB-p$C $rate"
	[ $rate = off ] && undo="lab_shape $LAB-p$C off"
	;;
loss)
	n=$(awk -v p="$M_LOSS_PCT" 'BEGIN { printf "%d", p * 10 }')
	fault="ip netns exec $LAB-sw nft -f $WORK/loss.nft"
	undo="ip netns exec $LAB-sw nft delete table bridge matrix"
	cat >"$WORK/loss.nft" <<-EOF
		table bridge matrix {
			chain forward {
				type filter hook forward priority 0;
				iifname "$LAB-p$C" numgen random mod 1000 < $n drop
				oifname "$LAB-p$C" numgen random mod 1000 < $n drop
			}
		}
	EOF
	;;
pause)
	# not the poller either: it enters each rank's namespace in turn to
	# scrape, and stopped there it saw nothing until the undo
	fault='stopped=$(ip netns pids $LAB-r$C | grep -vxF -e "$(echo $AGENTS | cut -d" " -f$C)" -e $poller); kill -STOP $stopped'
	undo='kill -CONT $stopped'
	;;
down)
	fault="ip -n $LAB-sw link set $LAB-p$C down"
	undo="ip -n $LAB-sw link set $LAB-p$C up"
	;;
pfc | rdma_retx)
	# the advancer, started with the poller, goes from the schedule on
	echo "$onset_at $((t_traffic + M_SECS * 1000))" >"$WORK/schedule.new"
	mv "$WORK/schedule.new" "$WORK/schedule"
	fault="" undo=""
	;;
*) fail "unknown fault '$M_FAULT'" ;;
esac

echo "traffic $t_traffic" >"$WORK/times"
if [ -n "$fault" ]; then
	until_ms "$onset_at"
	cmd_at=$(ms)
	lab_onset "$fault || fail 'unable to put the $M_FAULT fault in place'" >/dev/null
	# the fault may bite before its command returns (under stress-ng, a
	# link set down took long enough for its stall to open first)
	echo "fault_cmd $cmd_at" >>"$WORK/times"
	echo "onset $LAB_T0" >>"$WORK/times"
	until_ms $((LAB_T0 + M_HOLD_S * 1000))
	eval "$undo" || fail "unable to undo the $M_FAULT fault"
	echo "restore $(ms)" >>"$WORK/times"
elif [ "$M_FAULT" != none ]; then
	until_ms "$onset_at"
	for _ in $(seq 50); do
		[ -s "$WORK/onset" ] && break
		sleep 0.1
	done
	[ -s "$WORK/onset" ] || fail "the counter advancer did not start the fault within 5 s"
	t0=$(cat "$WORK/onset")
	echo "onset $t0" >>"$WORK/times"
	until_ms $((t0 + M_HOLD_S * 1000 + 100))
	echo "restore $((t0 + M_HOLD_S * 1000))" >>"$WORK/times"
fi
until_ms $((t_traffic + M_SECS * 1000))
echo "end $(ms)" >>"$WORK/times"

touch "$WORK/poll.log.stop"
wait $poller
# a clean stop: every agent ends its events and closes its database
for p in $AGENTS; do kill -TERM "$p" 2>/dev/null; done
for p in $AGENTS; do
	for _ in $(seq 50); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.1
	done
done
$HELPER collect "$WORK" "$SEED" >>"$RESULTS" || fail "unable to collect seed $SEED"
# kept for a look at a run: MATRIX_KEEP=DIR copies its work directory there
[ -z "${MATRIX_KEEP:-}" ] || cp -r "$WORK" "$MATRIX_KEEP/seed-$SEED"
exit 0
