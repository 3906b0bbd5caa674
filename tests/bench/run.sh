#!/bin/sh
# SPDX-License-Identifier: MIT
# Benchmarks that print figures (`make bench`); nothing here asserts on speed.
# Each goal from the issue is printed next to its measurement as "met" or
# "not met". The exit status is non-zero only when a figure could not be
# taken at all (a binary failed to start, a scrape never succeeded).
#
#   1. /metrics latency with ~10k series, fabmon vs node_exporter, one netns
#   2. SQLite ingest through registry + store_write_tick(): back to back,
#      then in real time at a 1 s tick, where the WAL's size after each
#      tick shows whether the checkpoint thread keeps it short
#   3. agent RSS and CPU at a 1 s tick with 64 interfaces
#   4. the tc probe's cost per packet, from the kernel's BPF runtime stats,
#      on a saturating TCP stream over a veth pair
#   5. that stream's throughput with and without the probes attached
#   6. agent CPU at a 1 s tick with 10k live flows in the probe's map
#   7. detection: the detect step's CPU a tick at up to 1000 peers
#      (detectcost); each tests/lab/scenarios/t_*.sh run a few times, the
#      event, culprit and onset -> event latency it reports; then a clean
#      run, loadgen on a lab with no fault (tests/bench/clean_run.sh)
#   8. fabmon replay on generated captures of BENCH_REPLAY_PACKETS (default
#      5 million data packets, with their ACKs and CNPs) and a quarter of it,
#      one core, beside tshark -q -z io,stat,0 and tcpdump -r reading the same
#      file; its maximum RSS at both sizes
#   9. incident review: bytes a sample on disk after a simulated day of 1000
#      series at a 1 s tick (the ingest tool), history queries of one series
#      (1 h at 1 s; 30 days at 1 min), fabmon events over 90 days of events
#  10. /metrics under load: wrk paced to ~BENCH_HTTP_RATE (default 1000)
#      requests/s for BENCH_HTTP_SECS (default 60), 64 interfaces: requests,
#      errors, non-2xx answers, latency, RSS every 10 s
#  11. robustness, the long runs of tests/robustness/: interface churn at 10
#      a second for BENCH_CHURN_SECS (default 60), kill -9 while writing
#      BENCH_KILL9_RUNS times (default 100), /metrics beside API queries
#      (8 clients on 1 h query_ranges) for BENCH_API_LOAD_SECS (default 60):
#      the scrape p99 idle and under the load, a flow explosion of
#      BENCH_FLOOD_FLOWS distinct flows (default 4 million)
#  13. the mesh collector (tests/bench/mesh.sh): fabmon ping's RTT beside
#      ping's on one path; CPU (user, system) and RSS of an agent probing
#      BENCH_MESH_PEERS (default 1000) peers x 8 flows at 1 s for
#      BENCH_MESH_SECS (default 60), and the kernel's floor for the same
#      datagrams (tests/bench/udpfloor.c)
#  12. the seeded scenario matrix (tests/bench/matrix.sh): precision,
#      recall, false events per clean hour and onset -> event latency per
#      fault, on tuning seeds MATRIX_TUNE (default 0-14) and report seeds
#      MATRIX_REPORT (default 1000-1014): about 25 min on 2 cores
#  13. locate and the cluster rules over a synthetic fabric of
#      BENCH_LOCATE_NODES nodes (default 2000) loaded into Prometheus with
#      promtool (tests/bench/locate_scale.sh): rule evaluation, locate's
#      time and top-1
#  14. locate's fault matrix on the leaf-spine lab (tests/bench/locate_matrix.sh):
#      LOCATE_MATRIX_CELLS faults (default 18, about 25 min) picked by
#      LOCATE_MATRIX_SEED (default 1001; seeds below 1000 were for tuning):
#      top-1 and top-3 accuracy, onset -> right top-1, suspects in clean runs
#
# Environment: FABMON (the binary), BENCH_DIR (the built tests/bench/*.c);
# run from the repository root. Knobs, for a quicker or longer look:
# BENCH_IFACES (interfaces for 1, default 526: ~10k fabmon series),
# BENCH_SCRAPES (fabmon, default 500), BENCH_NE_SCRAPES (node_exporter,
# which takes far longer per scrape, default 100), BENCH_TICKS (ingest
# ticks, default 200), BENCH_WAL_TICKS (ingest in real time, default 120),
# BENCH_RSS_SECONDS (default 30), BENCH_STREAM_SECONDS (one stream of 4
# and 5, default 5), BENCH_STREAM_RUNS (of 5, each way, default 5),
# BENCH_FLOWS (default 10000), BENCH_FLOW_SECONDS (of 6, default 30),
# BENCH_DETECT_REPEAT (runs of each scenario, default 3), BENCH_SCENARIOS
# (of 7, only the scenarios whose file name holds it), BENCH_CLEAN_SECS
# (the clean run, default 600), BENCH_REPLAY_PACKETS (of 8), BENCH_REVIEW_TICKS
# (of 9, the simulated day, default 86400). 7 also takes LAB_BIN (loadgen's directory)
# and SHARED_FIXTURES, as `make test` passes them.
#
# Traffic stays inside namespaces of our own: on loopback in
# fabmon-bench-<pid> for 1 and 3; for 4-6 over one veth pair from
# fabmon-bench-<pid>-tx to fabmon-bench-<pid> (198.18.0.0/15, RFC 2544's
# benchmarking block). The exit trap deletes them with every process this
# script started and puts kernel.bpf_stats_enabled back, also on failure
# and on Ctrl-C.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

FABMON=${FABMON:-$PWD/build/fabmon}
BENCH_DIR=${BENCH_DIR:-$PWD/build/bench}
IFACES=${BENCH_IFACES:-526}
SCRAPES=${BENCH_SCRAPES:-500}
NE_SCRAPES=${BENCH_NE_SCRAPES:-100}
TICKS=${BENCH_TICKS:-200}
WAL_TICKS=${BENCH_WAL_TICKS:-120}
RSS_SECONDS=${BENCH_RSS_SECONDS:-30}
STREAM_SECONDS=${BENCH_STREAM_SECONDS:-5}
STREAM_RUNS=${BENCH_STREAM_RUNS:-5}
FLOWS=${BENCH_FLOWS:-10000}
FLOW_SECONDS=${BENCH_FLOW_SECONDS:-30}
DETECT_REPEAT=${BENCH_DETECT_REPEAT:-3}
CLEAN_SECS=${BENCH_CLEAN_SECS:-600}
REPLAY_PACKETS=${BENCH_REPLAY_PACKETS:-5000000}
HTTP_RATE=${BENCH_HTTP_RATE:-1000}
HTTP_SECS=${BENCH_HTTP_SECS:-60}
LAB_BIN=${LAB_BIN:-$PWD/build/lab}
SHARED_FIXTURES=${SHARED_FIXTURES:-$PWD/../shared/fixtures}
NODE_EXPORTER=${NODE_EXPORTER:-/usr/bin/prometheus-node-exporter}
NS=fabmon-bench-$$
# The sending end for 4-6; the agent is always in $NS, the receiving end.
NS_TX=fabmon-bench-$$-tx
RX_ADDR=198.18.0.1
TX_ADDR=198.18.0.2
# Inside a namespace of our own every port is free: fixed ones will do.
FABMON_PORT=9478
NE_PORT=9100
STREAM_PORT=5201
FLOW_PORT=9000
# Spreads the scrapes over several agent ticks (see scrape.c).
SCRAPE_GAP_MS=10
# Upper bound on any one server's life, should the trap itself be killed
# (past the longest run a server serves).
SERVER_BOUND_S=$((RSS_SECONDS > 90 ? RSS_SECONDS + 60 : 150))
BROKEN=0

# Everything the servers leave in the namespace dies with it; killing our
# own pids first lets them exit cleanly and the namespace go at once.
SERVER_PIDS=""
ns_down() {
	for p in $SERVER_PIDS; do kill "$p" 2>/dev/null; done
	for ns in "$NS" "$NS_TX"; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
		ip netns del "$ns" 2>/dev/null
	done
	SERVER_PIDS=""
}

broken() {
	echo "ERROR: $*"
	BROKEN=1
}

header() {
	echo
	echo "== $*"
}

# ns_up N: a fresh namespace holding N interfaces besides lo, all up, named
# x0 y0 x1 y1 ... so that "x*" is half of them. Dummies when the kernel has
# them; else veth pairs x<i>/y<i> with both ends in the namespace (each end
# is an interface with its own counters). Sets NS_KIND.
ns_up() {
	n=$1
	ns_down
	ip netns add "$NS" || return 1
	ip -n "$NS" link set lo up || return 1
	if ip -n "$NS" link add x0 type dummy 2>/dev/null; then
		NS_KIND="dummy interfaces"
		ip -n "$NS" link del x0
		i=0
		while [ $i -lt "$n" ]; do
			if [ $((i % 2)) = 0 ]; then
				echo "link add x$((i / 2)) type dummy"
			else
				echo "link add y$((i / 2)) type dummy"
			fi
			i=$((i + 1))
		done | ip -n "$NS" -batch - || return 1
	else
		NS_KIND="veth pairs, both ends inside: no dummy driver in this kernel"
		i=0
		while [ $i -lt $((n / 2)) ]; do
			echo "link add x$i type veth peer name y$i"
			i=$((i + 1))
		done | ip -n "$NS" -batch - || return 1
	fi
	ip -n "$NS" -o link show |
		awk -F': ' '$2 != "lo" { sub(/@.*/, "", $2); print "link set " $2 " up" }' |
		ip -n "$NS" -batch - || return 1
	NS_IFACES=$(ip -n "$NS" -o link show | grep -vc ': lo:')
}

# serve NAME CMD...: starts CMD inside the namespace, bounded in time; the
# pid of the server itself (ip netns exec execs it; timeout stays as its
# parent and forwards our TERM) goes to SERVER_PID, the pid of timeout to
# SERVER_WRAPPER. serve_in NETNS NAME CMD...: the same in another one.
serve() {
	serve_in "$NS" "$@"
}

serve_in() {
	name=$2
	timeout -k 5 "$SERVER_BOUND_S" ip netns exec "$1" "${@:3}" >"$WORK/$name.log" 2>&1 &
	SERVER_PIDS="$SERVER_PIDS $!"
	SERVER_PID=$!
	SERVER_WRAPPER=$!
	i=0
	while [ $i -lt 20 ]; do
		child=$(cat "/proc/$SERVER_PID/task/$SERVER_PID/children" 2>/dev/null)
		[ -n "$child" ] && [ "$(cat "/proc/${child%% *}/comm" 2>/dev/null)" != ip ] && break
		sleep 0.05
		i=$((i + 1))
	done
	SERVER_PID=${child%% *}
}

stop_servers() {
	for p in $SERVER_PIDS; do kill "$p" 2>/dev/null; done
	for p in $SERVER_PIDS; do wait "$p" 2>/dev/null; done
	SERVER_PIDS=""
}

# stop_server WRAPPER: stops one server (by its SERVER_WRAPPER) and waits.
stop_server() {
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	SERVER_PIDS=$(echo " $SERVER_PIDS " | sed "s/ $1 / /; s/^ *//; s/ *$//")
}

# wait_http PORT PATH NAME: up to 15 s for a 200 on PATH inside the namespace.
wait_http() {
	i=0
	while [ $i -lt 150 ]; do
		ip netns exec "$NS" curl -sf -m 2 -o /dev/null "http://127.0.0.1:$1$2" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	broken "$3 did not answer on 127.0.0.1:$1$2 within 15 s; its log:"
	sed 's/^/    /' "$WORK/$3.log" | tail -n 20
	return 1
}

# tick_breakdown PORT: where the agent's last tick went, from its own metrics.
tick_breakdown() {
	ip netns exec "$NS" curl -s -m 5 "http://127.0.0.1:$1/metrics" | awk '
		$1 == "fabmon_tick_duration_seconds" { t = $2 }
		$1 == "fabmon_store_write_duration_seconds" { st = $2 }
		$1 ~ /^fabmon_collector_duration_seconds\{/ {
			c = $1; sub(/.*collector="/, "", c); sub(/".*/, "", c)
			parts = parts sprintf(", %s %.2f", c, $2 * 1000)
		}
		END { printf "%.2f ms (store %.2f%s)", t * 1000, st * 1000, parts }'
}

count_series() {
	ip netns exec "$NS" curl -s -m 10 "http://127.0.0.1:$1/metrics" | grep -vc '^#'
}

# scrape LABEL PORT COUNT WARMUP: runs the client inside the namespace; its
# key=value line lands in $WORK/LABEL.scrape.
scrape() {
	ip netns exec "$NS" "$BENCH_DIR/scrape" -p "$2" -n "$3" -w "$4" -g "$SCRAPE_GAP_MS" \
		-t 45 -l "$1" >"$WORK/$1.scrape" 2>"$WORK/$1.scrape.err" ||
		{ broken "$(cat "$WORK/$1.scrape.err")"; return 1; }
}

# field FILE KEY: a value from a scrape line.
field() {
	tr ' ' '\n' <"$1" | sed -n "s/^$2=//p"
}

# show NAME SERIES FILE: one aligned line of a scrape's figures.
show() {
	awk -v name="$1" -v series="$2" '{
		for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		printf "  %-26s %6d series %5.2f MB  p50 %7.3f  p90 %7.3f  p99 %7.3f  max %7.3f ms", \
			name, series, v["bytes"] / 1e6, v["p50_ms"], v["p90_ms"], v["p99_ms"], v["max_ms"]
		printf "  (%d scrapes, %d errors)\n", v["n"], v["errors"]
	}' "$3"
}

# goal TEXT VALUE OP LIMIT SHOWN: "goal TEXT: met|NOT MET (SHOWN)"; OP is
# one of < <= >=.
goal() {
	if awk -v v="$2" -v l="$4" -v op="$3" \
		'BEGIN { exit !(op == "<" ? v < l : op == "<=" ? v <= l : v >= l) }'; then
		printf '  goal %-44s met      (%s)\n' "$1:" "$5"
	else
		printf '  goal %-44s NOT MET  (%s)\n' "$1:" "$5"
	fi
}

# compare TEXT LABEL SERIES: fabmon's p50/p99 over LABEL's, and the cost of
# a thousand series at p50 on each side (the series counts differ).
compare() {
	awk -v what="$1" -v fs="$fm_series" -v f50="$fm_p50" -v f99="$fm_p99" -v ns="$3" \
		-v n50="$(field "$WORK/$2.scrape" p50_ms)" -v n99="$(field "$WORK/$2.scrape" p99_ms)" \
		'BEGIN {
			printf "  ratio fabmon/node_exporter, %s: p99 %.3f (1/%.0f), p50 %.3f (1/%.0f);", \
				what, f99 / n99, n99 / f99, f50 / n50, n50 / f50
			printf " per 1k series at p50 %.3f vs %.3f ms\n", f50 * 1000 / fs, n50 * 1000 / ns
		}'
}

need_ns() {
	if [ "$(id -u)" != 0 ]; then
		echo "  ************************************************************"
		echo "  SKIP: needs root (network namespaces): $1 not measured"
		echo "  ************************************************************"
		return 1
	fi
	for tool in ip curl timeout; do
		command -v $tool >/dev/null 2>&1 || {
			echo "  SKIP: '$tool' not found: $1 not measured (make deps)"
			return 1
		}
	done
}

bench_scrape() {
	header "1. /metrics latency with ~10k series: fabmon vs node_exporter (same netns, same run)"
	need_ns "/metrics latency" || return 0
	ns_up "$IFACES" || { broken "unable to make namespace $NS"; return 0; }
	echo "  namespace $NS: $NS_IFACES interfaces + lo ($NS_KIND)"
	echo "  client: tests/bench/scrape.c, sequential GETs after a warm-up, one connection each"
	echo "  (Connection: close), no gzip, ${SCRAPE_GAP_MS} ms apart; servers measured one at a time"

	serve fabmon "$FABMON" agent --listen "127.0.0.1:$FABMON_PORT" --db "$WORK/bench.db" \
		--interval 1s
	wait_http $FABMON_PORT /readyz fabmon || return 0
	# two more ticks, so that counters have rates and the snapshot is full
	sleep 2.2
	fm_series=$(count_series $FABMON_PORT)
	scrape fabmon $FABMON_PORT "$SCRAPES" 20 || return 0
	fm_tick=$(tick_breakdown $FABMON_PORT)
	stop_servers

	ne_series=0 nm_series=0
	if [ ! -x "$NODE_EXPORTER" ]; then
		echo "  SKIP: $NODE_EXPORTER not found (make deps): no comparison"
	else
		# Only the two collectors that read what fabmon's netdev does; the
		# rest (cpu, disk, filesystem, ...) would be measuring another job.
		ne_flags="--collector.disable-defaults --collector.netdev --collector.netclass"
		serve node_exporter "$NODE_EXPORTER" --web.listen-address="127.0.0.1:$NE_PORT" \
			$ne_flags
		if wait_http $NE_PORT /metrics node_exporter; then
			ne_series=$(count_series $NE_PORT)
			scrape node_exporter $NE_PORT $((NE_SCRAPES / 2)) 3 || ne_series=0
		fi
		stop_servers
		# node_exporter emits about twice fabmon's series per interface, so
		# a second run sees only the x* half: its series count then matches
		# fabmon's, the comparison the goal is about.
		serve node_exporter_half "$NODE_EXPORTER" --web.listen-address="127.0.0.1:$NE_PORT" \
			$ne_flags --collector.netdev.device-exclude='^(lo|y[0-9]+)$' \
			--collector.netclass.ignored-devices='^(lo|y[0-9]+)$'
		if wait_http $NE_PORT /metrics node_exporter_half; then
			nm_series=$(count_series $NE_PORT)
			scrape node_exporter_half $NE_PORT "$NE_SCRAPES" 5 || nm_series=0
		fi
		stop_servers
	fi
	ns_down

	echo "  node_exporter $("$NODE_EXPORTER" --version 2>&1 | awk 'NR == 1 { print $3 }'):" \
		"collectors netdev, netclass only ($ne_flags);"
	echo "  its defaults otherwise (GOMAXPROCS 1, go_/process_/promhttp_ self-metrics kept)"
	show fabmon "$fm_series" "$WORK/fabmon.scrape"
	echo "  fabmon's own tick meanwhile, off the scrape path: $fm_tick"
	[ "$ne_series" -gt 0 ] &&
		show "node_exporter (all ifaces)" "$ne_series" "$WORK/node_exporter.scrape"
	[ "$nm_series" -gt 0 ] &&
		show "node_exporter (x* half)" "$nm_series" "$WORK/node_exporter_half.scrape"
	fm_p50=$(field "$WORK/fabmon.scrape" p50_ms)
	fm_p99=$(field "$WORK/fabmon.scrape" p99_ms)
	[ "$ne_series" -gt 0 ] && compare "same interfaces" node_exporter "$ne_series"
	[ "$nm_series" -gt 0 ] && compare "matched series " node_exporter_half "$nm_series"
	goal "fabmon p99 <= 5 ms" "$fm_p99" "<=" 5 "p99 $fm_p99 ms"
	if [ "$nm_series" -gt 0 ]; then
		ratio=$(awk -v a="$fm_p99" -v b="$(field "$WORK/node_exporter_half.scrape" p99_ms)" \
			'BEGIN { printf "%.3f", a / b }')
		goal "fabmon p99 <= 1/5 node_exporter p99" "$ratio" "<=" 0.2 \
			"ratio $ratio at matched series, $fm_series vs $nm_series"
	else
		echo "  goal fabmon p99 <= 1/5 node_exporter p99:     not measured (no node_exporter)"
	fi
}

bench_ingest() {
	header "2. SQLite ingest: registry + store_write_tick(), 10k series, $TICKS ticks"
	fs=$(df -PT "$WORK" | awk 'NR == 2 { print $2 }')
	echo "  database in $WORK ($fs, journal WAL, synchronous NORMAL)"
	if ! "$BENCH_DIR/ingest" -d "$WORK/ingest.db" -s 10000 -t "$TICKS" \
		>"$WORK/ingest.out" 2>&1; then
		broken "ingest failed: $(cat "$WORK/ingest.out")"
		return 0
	fi
	grep -v '^samples_per_s=' "$WORK/ingest.out" | sed 's/^/  /'
	sps=$(sed -n 's/^samples_per_s=\([0-9.]*\).*/\1/p' "$WORK/ingest.out")
	goal "ingest >= 500k samples/s" "$sps" ">=" 500000 "$sps samples/s"
	echo "  in real time, a tick a second for $WAL_TICKS s:"
	if "$BENCH_DIR/ingest" -d "$WORK/ingest.db" -s 10000 -t "$WAL_TICKS" -m typical -r \
		>"$WORK/ingest.out" 2>&1; then
		grep -E '^(store_write_tick|wal after)' "$WORK/ingest.out" | sed 's/^/    /'
	else
		broken "ingest -r failed: $(cat "$WORK/ingest.out")"
	fi
	rm -f "$WORK"/ingest*.db*
}

# cpu_ticks PID: utime + stime, in clock ticks (fields 14 and 15; the fields
# are counted after the ")" that ends the command name).
cpu_ticks() {
	sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

status_kb() {
	awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"
}

# agent_64 DB: an agent at a 1 s tick in a fresh namespace of 64
# interfaces, past its first ticks (which intern every series and create
# the file); sets pid and series.
agent_64() {
	ns_up 64 || { broken "unable to make namespace $NS"; return 1; }
	serve agent "$FABMON" agent --listen "127.0.0.1:$FABMON_PORT" --db "$WORK/$1" \
		--interval 1s
	wait_http $FABMON_PORT /readyz agent || return 1
	pid=$SERVER_PID
	sleep 3
	series=$(count_series $FABMON_PORT)
}

bench_rss() {
	header "3. agent RSS and CPU: 1 s tick, 64 interfaces, ${RSS_SECONDS} s"
	need_ns "RSS and CPU" || return 0
	agent_64 rss.db || return 0
	echo "  namespace $NS: $NS_IFACES interfaces + lo ($NS_KIND); nothing scrapes during the run"
	hz=$(getconf CLK_TCK)
	c0=$(cpu_ticks "$pid") t0=$(date +%s.%N)
	rss0=$(status_kb "$pid" VmRSS)
	sleep "$RSS_SECONDS"
	c1=$(cpu_ticks "$pid") t1=$(date +%s.%N)
	rss1=$(status_kb "$pid" VmRSS) hwm=$(status_kb "$pid" VmHWM)
	tick=$(tick_breakdown $FABMON_PORT)
	stop_servers
	ns_down
	if [ -z "$c0" ] || [ -z "$c1" ] || [ -z "$rss1" ]; then
		broken "agent (pid $pid) went away during the run"
		return 0
	fi
	cpu=$(awk -v c="$((c1 - c0))" -v hz="$hz" -v a="$t0" -v b="$t1" \
		'BEGIN { printf "%.2f", c / hz / (b - a) * 100 }')
	awk -v a="$rss0" -v b="$rss1" -v h="$hwm" -v s="$series" -v t="$tick" 'BEGIN {
		printf "  %d series; last tick %s\n", s, t
		printf "  VmRSS %.1f MiB at start, %.1f MiB at end; VmHWM %.1f MiB\n",
			a / 1024, b / 1024, h / 1024 }'
	echo "  CPU $cpu % of one core ($((c1 - c0)) ticks of 1/$hz s in" \
		"$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s)"
	goal "RSS < 30 MB (VmHWM, MiB)" "$hwm" "<" 30720 \
		"VmHWM $(awk -v h="$hwm" 'BEGIN { printf "%.1f", h / 1024 }') MiB"
	goal "CPU < 1 % of one core" "$cpu" "<" 1 "$cpu %"
}

# pair_up: $NS_TX and $NS, fresh, joined by one veth pair named eth0 at
# both ends: $TX_ADDR -> $RX_ADDR. The agent runs in $NS, the receiver.
pair_up() {
	ns_down
	ip netns add "$NS" && ip netns add "$NS_TX" || return 1
	ip link add eth0 netns "$NS" type veth peer name eth0 netns "$NS_TX" || return 1
	for ns in "$NS" "$NS_TX"; do
		ip -n "$ns" link set lo up && ip -n "$ns" link set eth0 up || return 1
	done
	ip -n "$NS" addr add "$RX_ADDR/24" dev eth0 && ip -n "$NS_TX" addr add "$TX_ADDR/24" dev eth0
}

pair_info() {
	echo "  namespaces $NS_TX (sender, $TX_ADDR) -> $NS (receiver, $RX_ADDR),"
	echo "  one veth pair, eth0 at both ends; the agent: --collectors bpf --interfaces eth0 in $NS"
}

# wait_listen NAME t|u PORT: up to 5 s for server NAME (in $NS) to have a
# TCP (t) or UDP (u) socket on PORT.
wait_listen() {
	i=0
	while [ $i -lt 50 ]; do
		[ -n "$(ip netns exec "$NS" ss -Hln$2 "sport = :$3" 2>/dev/null)" ] && return 0
		sleep 0.1
		i=$((i + 1))
	done
	broken "$1 did not bind port $3 within 5 s; its log:"
	sed 's/^/    /' "$WORK/$1.log" | tail -n 20
	return 1
}

# ns_metric SERIES: its value on the agent's /metrics in $NS, or empty.
ns_metric() {
	ip netns exec "$NS" curl -s -m 5 "http://127.0.0.1:$FABMON_PORT/metrics" |
		awk -v s="$1" '$1 == s { print $2; exit }'
}

# tc_prog_id ingress|egress: the id of the fabmon program on eth0 of $NS.
tc_prog_id() {
	ip netns exec "$NS" tc filter show dev eth0 "$1" 2>/dev/null |
		sed -n 's/.* id \([0-9]*\) name fabmon_.*/\1/p' | head -n 1
}

# bpf_agent NAME DB [ARGS...]: the agent with only the bpf collector, on
# eth0 of $NS, started (AGENT_PID, AGENT_WRAPPER) and waited for until both
# tc programs are attached (TC_IN_ID, TC_OUT_ID).
bpf_agent() {
	serve agent_"$1" "$FABMON" agent --collectors bpf --interfaces eth0 \
		--listen "127.0.0.1:$FABMON_PORT" --db "$2" --interval 1s "${@:3}"
	AGENT_PID=$SERVER_PID
	AGENT_WRAPPER=$SERVER_WRAPPER
	wait_http $FABMON_PORT /readyz agent_"$1" || return 1
	i=0
	while [ $i -lt 50 ]; do
		TC_IN_ID=$(tc_prog_id ingress)
		TC_OUT_ID=$(tc_prog_id egress)
		[ -n "$TC_IN_ID" ] && [ -n "$TC_OUT_ID" ] && return 0
		sleep 0.1
		i=$((i + 1))
	done
	broken "agent_$1: no fabmon tc program on eth0 of $NS after 5 s; its log:"
	sed 's/^/    /' "$WORK/agent_$1.log" | tail -n 20
	return 1
}

# stream_run LABEL SECONDS: one TCP stream $NS_TX -> $NS (the receiver is
# already up); its key=value line lands in $WORK/LABEL.stream, its Gbit/s
# in STREAM_GBIT.
stream_run() {
	if ! timeout -k 5 $(($2 + 30)) ip netns exec "$NS_TX" "$BENCH_DIR/stream" send \
		"$RX_ADDR" "$STREAM_PORT" "$2" >"$WORK/$1.stream" 2>&1; then
		broken "stream $1: $(cat "$WORK/$1.stream")"
		return 1
	fi
	STREAM_GBIT=$(field "$WORK/$1.stream" gbit_s)
}

# stream_rx: pair_up and a stream receiver in $NS.
stream_rx() {
	pair_up || { broken "unable to make namespaces $NS_TX and $NS"; return 1; }
	serve stream_rx "$BENCH_DIR/stream" recv "$STREAM_PORT"
	wait_listen stream_rx t "$STREAM_PORT"
}

# prog_stats ID: "NAME RUN_TIME_NS RUN_CNT" of BPF program ID (bpftool
# leaves the two out while they are 0).
prog_stats() {
	bpftool prog show id "$1" -j 2>/dev/null | awk '{
		n = "?"; t = 0; c = 0
		if (match($0, /"name":"[^"]*"/)) n = substr($0, RSTART + 8, RLENGTH - 9)
		if (match($0, /"run_time_ns":[0-9]+/)) t = substr($0, RSTART + 14, RLENGTH - 14)
		if (match($0, /"run_cnt":[0-9]+/)) c = substr($0, RSTART + 10, RLENGTH - 10)
		print n, t, c }'
}

# snapshot FILE ID...: "ID NAME RUN_TIME_NS RUN_CNT" per program.
snapshot() {
	f=$1
	shift
	for id in "$@"; do echo "$id $(prog_stats "$id")"; done >"$f"
}

# run_delta ID: "NAME NS RUNS": what program ID added from snap0 to snap1.
run_delta() {
	awk -v id="$1" '$1 == id {
		n = $2
		if (FILENAME ~ /snap0$/) { t -= $3; c -= $4 } else { t += $3; c += $4 }
	} END { print n, t + 0, c + 0 }' "$WORK/snap0" "$WORK/snap1"
}

# per_run NS RUNS: nanoseconds a run, one decimal.
per_run() {
	awk -v t="$1" -v c="$2" 'BEGIN { if (c > 0) printf "%.1f", t / c; else print "nan" }'
}

median() {
	printf '%s\n' "$@" | sort -g |
		awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

bench_probe_cost() {
	header "4. tc probe cost per packet: BPF runtime stats, ${STREAM_SECONDS} s TCP stream over veth"
	need_ns "probe cost" || return 0
	for tool in bpftool sysctl ss tc; do
		command -v $tool >/dev/null 2>&1 || {
			echo "  SKIP: '$tool' not found: probe cost not measured (make deps)"
			return 0
		}
	done
	[ -w /proc/sys/kernel/bpf_stats_enabled ] || {
		echo "  SKIP: no kernel.bpf_stats_enabled here: probe cost not measured"
		return 0
	}
	stream_rx || return 0
	bpf_agent cost "$WORK/cost.db" || { ns_down; return 0; }
	# The floor: an empty program on the sender's eth0, whose egress sees the
	# same data packets and whose ingress sees the same ACKs.
	serve_in "$NS_TX" tcnull "$BENCH_DIR/tcnull" eth0 $((STREAM_SECONDS + 60))
	i=0
	while [ $i -lt 50 ] && ! grep -q '^ingress_id=' "$WORK/tcnull.log"; do
		sleep 0.1
		i=$((i + 1))
	done
	null_in=$(field "$WORK/tcnull.log" ingress_id)
	null_out=$(field "$WORK/tcnull.log" egress_id)
	[ -n "$null_in" ] || { broken "tcnull: $(cat "$WORK/tcnull.log")"; ns_down; return 0; }
	# the agent's other programs (the raw tracepoints), from its open fds
	others=$(cat /proc/"$AGENT_PID"/fdinfo/* 2>/dev/null | awk '$1 == "prog_id:" { print $2 }' |
		sort -un | grep -vx -e "$TC_IN_ID" -e "$TC_OUT_ID")
	# ARP, the flow's first map entries, warm caches: not measured
	stream_run cost_warmup 1 || { ns_down; return 0; }
	old_stats=$(sysctl -n kernel.bpf_stats_enabled)
	on_exit "sysctl -qw kernel.bpf_stats_enabled=$old_stats"
	sysctl -qw kernel.bpf_stats_enabled=1
	ids="$TC_IN_ID $TC_OUT_ID $null_in $null_out $others"
	snapshot "$WORK/snap0" $ids
	stream_run cost "$STREAM_SECONDS"
	ok=$?
	snapshot "$WORK/snap1" $ids
	sysctl -qw kernel.bpf_stats_enabled="$old_stats"
	stop_servers
	ns_down
	[ "$ok" = 0 ] || return 0

	bytes=$(field "$WORK/cost.stream" bytes)
	secs=$(field "$WORK/cost.stream" seconds)
	pair_info
	echo "  The agent's ingress program sees the data, its egress program the ACKs. Stats are on"
	echo "  only during the stream. floor: an empty tc program (tests/bench/tcnull.c) on the"
	echo "  sender's eth0, same packets: what the kernel's own timing of one run costs on this host."
	awk -v b="$bytes" -v s="$secs" -v g="$(field "$WORK/cost.stream" gbit_s)" 'BEGIN {
		printf "  stream: %.2f GB in %.2f s, %.2f Gbit/s (tests/bench/stream.c)\n", b / 1e9, s, g }'
	set -- $(run_delta "$TC_IN_ID")
	in_n=$3 in_ns=$(per_run "$2" "$3")
	set -- $(run_delta "$null_out")
	in_floor=$(per_run "$2" "$3")
	set -- $(run_delta "$TC_OUT_ID")
	out_n=$3 out_ns=$(per_run "$2" "$3")
	set -- $(run_delta "$null_in")
	out_floor=$(per_run "$2" "$3")
	awk -v n="$in_n" -v s="$secs" -v ns="$in_ns" -v f="$in_floor" 'BEGIN {
		printf "  ingress, data: %7d packets, %6.0f packets/s; %6.1f ns per packet, floor %.1f ns\n",
			n, n / s, ns, f }'
	awk -v n="$out_n" -v s="$secs" -v ns="$out_ns" -v f="$out_floor" 'BEGIN {
		printf "  egress, ACKs:  %7d packets, %6.0f packets/s; %6.1f ns per packet, floor %.1f ns\n",
			n, n / s, ns, f }'
	awk -v b="$bytes" -v n="$in_n" 'BEGIN {
		printf "  (a packet is one program run, one skb: veth passes TCP on as GSO aggregates,"
		printf " here\n  %.1f KB or ~%.0f MSS-size segments each;", b / n / 1024, b / n / 1448
		printf " the probe'"'"'s own work is the excess over the floor)\n" }'
	# what the probe adds per packet on the wire: its excess over the floor
	# spread over the segments of the aggregate it ran once for
	awk -v b="$bytes" -v n="$in_n" -v ns="$in_ns" -v f="$in_floor" 'BEGIN {
		seg = b / n / 1448
		printf "  ingress excess over the floor per MSS-size segment carried: %.1f ns\n",
			(ns - f) / seg }'
	echo "  the agent's raw tracepoints meanwhile (they see the whole host), per run:"
	for id in $others; do
		set -- $(run_delta "$id")
		[ "$3" -gt 0 ] && printf '    %-22s %7s ns x %d runs\n' "$1" "$(per_run "$2" "$3")" "$3"
	done
	goal "tc ingress <= 30 ns per packet" "$in_ns" "<=" 30 "$in_ns ns, floor $in_floor"
	goal "tc egress <= 30 ns per packet" "$out_ns" "<=" 30 "$out_ns ns, floor $out_floor"
	probe_hot
}

# probe_hot: the probe's own work with the clock read once a batch, not
# twice a run (tests/bench/probe_run.c): one packet a million times over,
# map entry and caches hot; the empty program beside it is test_run's own
# loop.
probe_hot() {
	echo "  the same probe through bpf_prog_test_run, median of 7 rounds of 10^6 runs"
	echo "  (tests/bench/probe_run.c; hot caches, the kernel's clock read once a batch):"
	"$BENCH_DIR/probe_run" 7 1000000 >"$WORK/probe_run.out" 2>&1 || {
		broken "probe_run: $(cat "$WORK/probe_run.out")"
		return 0
	}
	awk '$1 ~ /^kind=/ {
		for (i = 2; i <= 3; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		name = $0; sub(/.*name=/, "", name)
		printf "    %-38s %4d ns, empty program %3d ns: own work %3d ns\n",
			name, v["probe_ns"], v["empty_ns"], v["probe_ns"] - v["empty_ns"]
	}' "$WORK/probe_run.out"
	own=$(awk '$1 == "kind=0" || $1 == "kind=1" {
		split($2, p, "="); split($3, e, "="); d = p[2] - e[2]; if (d > m) m = d
	} END { print m + 0 }' "$WORK/probe_run.out")
	goal "tc probe's own work, TCP, hot <= 30 ns" "$own" "<=" 30 "$own ns, the larger of data and ACK"
}

bench_throughput() {
	header "5. stream throughput with and without the probes:" \
		"${STREAM_RUNS} x ${STREAM_SECONDS} s each, alternating"
	need_ns "throughput" || return 0
	command -v ss >/dev/null 2>&1 || {
		echo "  SKIP: 'ss' not found: throughput not measured (make deps)"
		return 0
	}
	stream_rx || return 0
	stream_run tp_warmup 1 || { ns_down; return 0; }
	with="" without="" on=0 round=0
	# off on, on off, off on, ...: a drift in the host's speed hits both
	# sides (round, not i: the helpers use i)
	while [ $round -lt "$STREAM_RUNS" ]; do
		if [ $((round % 2)) = 0 ]; then order="off on"; else order="on off"; fi
		for want in $order; do
			if [ "$want" = on ] && [ $on = 0 ]; then
				bpf_agent tp "$WORK/tp.db" || break 2
				on=1
			elif [ "$want" = off ] && [ $on = 1 ]; then
				stop_server "$AGENT_WRAPPER"
				on=0
				[ -z "$(tc_prog_id ingress)$(tc_prog_id egress)" ] || {
					broken "the agent left its tc programs on eth0 after SIGTERM"
					break 2
				}
			fi
			stream_run "tp_${want}_$round" "$STREAM_SECONDS" || break 2
			if [ "$want" = on ]; then with="$with $STREAM_GBIT"; else without="$without $STREAM_GBIT"; fi
		done
		round=$((round + 1))
	done
	stop_servers
	ns_down
	[ $round = "$STREAM_RUNS" ] || return 0
	m_with=$(median $with)
	m_without=$(median $without)
	pair_info
	echo "  One TCP connection (tests/bench/stream.c). With probes: the agent runs, so its tc"
	echo "  programs on eth0 and its raw tracepoints (tcp_probe runs on every TCP segment"
	echo "  received, at both ends) are attached, and it ticks; without: no agent."
	echo "  without probes:  $(printf '%s ' $without)Gbit/s, median $m_without"
	echo "  with probes:     $(printf '%s ' $with)Gbit/s, median $m_with"
	ratio=$(awk -v a="$m_with" -v b="$m_without" 'BEGIN { printf "%.3f", a / b }')
	# each round's two runs are back to back: their ratio cancels a drift
	# of the host's speed that the medians of all runs do not
	pairs=$(paste <(printf '%s\n' $with) <(printf '%s\n' $without) |
		awk '{ printf "%.3f ", $1 / $2 }')
	paired=$(median $pairs)
	spread=$(printf '%s\n' $without | sort -g | awk -v m="$m_without" \
		'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.1f", (hi - lo) / m * 100 }')
	echo "  ratio of the medians: $ratio; each round's with/without: ${pairs}median $paired"
	echo "  note: veth throughput is CPU-bound: sender, receiver and their softirqs share this"
	echo "  host's $(nproc) cores, so whatever the probes and the agent take comes out of the stream,"
	echo "  and the figure moves with any other load here (runs without probes: ${spread} % spread)"
	goal "throughput ratio with/without >= 0.97" "$paired" ">=" 0.97 \
		"median of $round rounds' ratios, $paired"
}

bench_flows() {
	header "6. agent CPU with $FLOWS live flows: 1 s tick, --collectors bpf, ${FLOW_SECONDS} s"
	need_ns "agent CPU with flows" || return 0
	command -v ss >/dev/null 2>&1 || {
		echo "  SKIP: 'ss' not found: agent CPU with flows not measured (make deps)"
		return 0
	}
	pair_up || { broken "unable to make namespaces $NS_TX and $NS"; return 0; }
	serve flowgen_rx "$BENCH_DIR/flowgen" recv "$FLOW_PORT" $((FLOW_SECONDS + 60))
	wait_listen flowgen_rx u "$FLOW_PORT" || { ns_down; return 0; }
	bpf_agent flows "$WORK/flows.db" --bpf-max-flows 16384 || { ns_down; return 0; }
	pid=$AGENT_PID
	serve_in "$NS_TX" flowgen_tx "$BENCH_DIR/flowgen" send "$TX_ADDR" "$RX_ADDR" "$FLOW_PORT" \
		"$FLOWS" $((FLOW_SECONDS + 45))
	gen_pid=$SERVER_PID
	# until the map holds (nearly) every flow, 15 s at most
	i=0
	while [ $i -lt 150 ]; do
		entries=$(ns_metric 'fabmon_bpf_map_entries{map="fm_flows"}')
		[ "${entries:-0}" -ge $((FLOWS * 99 / 100)) ] && break
		sleep 0.1
		i=$((i + 1))
	done
	# two ticks more: the collector makes its own state for a flow on the
	# first tick that sees it, a one-off cost
	sleep 2.2
	hz=$(getconf CLK_TCK)
	c0=$(cpu_ticks "$pid") g0=$(cpu_ticks "$gen_pid") t0=$(date +%s.%N)
	sleep "$FLOW_SECONDS"
	c1=$(cpu_ticks "$pid") g1=$(cpu_ticks "$gen_pid") t1=$(date +%s.%N)
	entries=$(ns_metric 'fabmon_bpf_map_entries{map="fm_flows"}')
	max=$(ns_metric 'fabmon_bpf_map_max_entries{map="fm_flows"}')
	evicted=$(ns_metric 'fabmon_bpf_map_evicted_entries_total{map="fm_flows"}')
	dur=$(ns_metric 'fabmon_collector_duration_seconds{collector="bpf"}')
	tick=$(tick_breakdown $FABMON_PORT)
	hwm=$(status_kb "$pid" VmHWM)
	stop_servers
	ns_down
	if [ -z "$c0" ] || [ -z "$c1" ] || [ -z "$hwm" ]; then
		broken "agent (pid $pid) went away during the run"
		return 0
	fi
	cpu=$(awk -v c="$((c1 - c0))" -v hz="$hz" -v a="$t0" -v b="$t1" \
		'BEGIN { printf "%.2f", c / hz / (b - a) * 100 }')
	gen_cpu=$(awk -v c="$((${g1:-0} - ${g0:-0}))" -v hz="$hz" -v a="$t0" -v b="$t1" \
		'BEGIN { printf "%.1f", c / hz / (b - a) * 100 }')
	pair_info
	echo "  tests/bench/flowgen.c: UDP, a 60-byte frame every 0.5 s from each of $FLOWS source"
	echo "  ports; only this script scrapes the agent, before and after the window"
	sed -n 's/^send /  generator: /p' "$WORK/flowgen_tx.log"
	sed -n 's/^recv /  receiver:  /p' "$WORK/flowgen_rx.log"
	echo "  fabmon_bpf_map_entries{map=\"fm_flows\"} ${entries:-absent}" \
		"(max ${max:-?}, evicted ${evicted:-?})"
	echo "  fabmon_collector_duration_seconds{collector=\"bpf\"} ${dur:-absent}" \
		"($(awk -v d="${dur:-0}" 'BEGIN { printf "%.2f", d * 1000 }') ms)"
	echo "  last tick $tick"
	awk -v h="$hwm" 'BEGIN { printf "  VmHWM %.1f MiB\n", h / 1024 }'
	echo "  CPU $cpu % of one core ($((c1 - c0)) ticks of 1/$hz s in" \
		"$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s, agent pid only);"
	echo "  the generator, not counted: $gen_cpu % (the tc probe runs in the softirq its sends raise)"
	goal "CPU < 1 % of one core, $FLOWS flows" "$cpu" "<" 1 "$cpu %"
}

# What the scenarios that do not say it through lab_expect must raise,
# "SCRIPT KIND SUBJECT" a line: the event their fault is for, naming the
# culprit. LAB- stands for the lab's per-run prefix of its names (lab.sh's
# LAB, fm<pid>-).
DETECT_EXPECT="t_pfc_storm pfc_storm device=mlx5_0,port=1
t_ring stall peer=198.18.0.3
t_spine hotspot interface=LAB-u1
t_stall stall peer=198.18.0.1"
# The scenarios' tick, for the latencies in ticks.
DETECT_TICK_MS=100
# Upper bound on one scenario run (tests/run.sh gives 600 s; they take < 60).
DETECT_BOUND_S=300

# detect_expected SCRIPT: "KIND SUBJECT" it must raise: from DETECT_EXPECT,
# else from its last `lab_expect DB KIND SUBJECT` line (with $culprit and
# $LAB put in), else "? ?".
detect_expected() {
	awk -v t="$(basename "$1" .sh)" -v table="$DETECT_EXPECT" '
	BEGIN {
		n = split(table, rows, "\n")
		for (i = 1; i <= n; i++)
			if (split(rows[i], f, " ") == 3 && f[1] == t) { k = f[2]; s = f[3]; listed = 1 }
	}
	/^culprit=/ { c = substr($0, 9) }
	/^lab_expect "[^"]*" [a-z_]+ / && !listed { k = $3; s = $4 }
	END {
		gsub(/"/, "", s)
		gsub(/\$(culprit|\{culprit\})/, c, s)
		gsub(/\$(LAB|\{LAB\})/, "LAB", s)
		print k == "" ? "? ?" : k " " s
	}' "$1"
}

# detect_parse OUT KIND SUBJECT: "FOUND METRICS_MS BOUND_MS FALSE OPEN_MS" from a
# scenario's output OUT, "-" where it printed nothing to take it from.
# FOUND: yes if it reported KIND on SUBJECT active, on /metrics or in its
# events table ("-" when KIND is "?"). METRICS_MS: onset -> the event on
# /metrics, from "... -> KIND on SUBJECT seen after N ms" (lab_fault,
# t_ring, t_spine) or "KIND on SUBJECT seen N ms after" (t_pfc_storm).
# BOUND_MS: onset -> the event's first tick over its bound (its start_ms),
# from lab_expect's "onset -> first tick over the bound: N ms" or t_stall's
# "onset (...) -> event start: N ms". OPEN_MS: onset -> the tick the agent
# opened it, from lab_open's "onset -> event open: N ms". FALSE: how many events other than
# the wanted one, from lab_expect's "want events '...', got '...'", else
# t_ring's note of secondary events, else the "event K opened: S" lines of
# the agent's log that a failing script shows; "?" when it failed without
# saying.
detect_parse() {
	awk -v kind="$2" -v subj="$3" '
	# " N kind subject; ...": how many of them are not the wanted event
	function others(list,    n, i, w, e, ev) {
		n = split(list, e, ";")
		for (i = 1; i <= n; i++)
			if (split(e[i], ev, " ") == 3)
				w += ev[1] - (ev[2] == kind && ev[3] == subj)
		return w + 0
	}
	{ gsub(/fm[0-9]+-/, "LAB-") }
	/ seen after -?[0-9]+ ms/ {
		for (i = 1; i + 6 <= NF; i++)
			if ($i == "->" && $(i + 2) == "on" && $(i + 4) == "seen" && $(i + 5) == "after") {
				k = $(i + 1); s = $(i + 3); ms = $(i + 6)
			}
	}
	$2 == "on" && $4 == "seen" && $6 == "ms" && $7 == "after" { k = $1; s = $3; ms = $5 }
	/^events table: / && k == "" { split($3, row, "|"); k = row[1]; s = row[2] }
	/^onset.* -> (first tick over the bound|event start): -?[0-9]+ ms/ {
		b = $0
		sub(/.* -> (first tick over the bound|event start): /, "", b)
		sub(/ .*/, "", b)
	}
	/^onset -> event open: -?[0-9]+ ms/ { o = $5 }
	/want events .*, got / {
		g = $0
		sub(/.*, got ./, "", g)
		got = others(g)
	}
	/^note: secondary events after the culprit: / {
		g = $0
		sub(/^[^:]*: [^:]*: /, "", g)
		note = others(g)
	}
	/ event [a-z_]+ opened: / {
		for (i = 1; i + 3 <= NF; i++)
			if ($i == "event" && $(i + 2) == "opened:") {
				e = $(i + 3)
				sub(/,$/, "", e)
				logged += !($(i + 1) == kind && e == subj)
			}
	}
	/^FAIL: / { failed = 1 }
	# t_stall: "FAIL: a hotspot event was raised" (at least one)
	/^FAIL: an? [a-z_]+ event was raised/ { said = 1 }
	END {
		found = kind == "?" ? "-" : k == kind && s == subj ? "yes" : "no"
		n = got != "" ? got : note != "" ? note : logged ? logged : said ? 1 : failed ? "?" : 0
		print found, ms == "" ? "-" : ms, b == "" ? "-" : b, n, o == "" ? "-" : o
	}' "$1"
}

# detect_run SCRIPT REP: runs one scenario as tests/run.sh does and adds
# "NAME KIND SUBJECT RC FOUND METRICS_MS BOUND_MS FALSE OPEN_MS" to $WORK/detect.runs;
# prints the last lines of a run that failed.
detect_run() {
	name=$(basename "$1" .sh) n=$2
	out=$WORK/detect.$name.$n
	timeout -k 10 "$DETECT_BOUND_S" env FABMON="$WORK/fabmon.detect" LAB_BIN="$LAB_BIN" \
		SHARED_FIXTURES="$SHARED_FIXTURES" bash "$1" >"$out" 2>&1
	rc=$?
	set -- $(detect_expected "$1")
	echo "$name $1 $2 $rc $(detect_parse "$out" "$1" "$2")" >>"$WORK/detect.runs"
	case $rc in
	0 | 77) ;;
	*)
		echo "  $name run $n: exit $rc; its last lines:"
		tail -n 6 "$out" | sed 's/^/    /'
		;;
	esac
}

# detect_column NAME FIELD: FIELD (1-based) of NAME's rows in detect.runs
# that found their event, "-" left out.
detect_column() {
	awk -v n="$1" -v c="$2" '$1 == n && $5 == "yes" && $c != "-" { print $c }' "$WORK/detect.runs"
}

# detect_row NAME: one line of the table, from NAME's rows in detect.runs:
# found and passed k/runs (skips left out), median latencies, the false
# events, the latency goal and each run's latency on /metrics.
detect_row() {
	m=$(median $(detect_column "$1" 6))
	b=$(median $(detect_column "$1" 7))
	o=$(median $(detect_column "$1" 9))
	awk -v n="$1" -v m="$m" -v b="$b" -v o="$o" -v tick="$DETECT_TICK_MS" '
	$1 == n {
		kind = $2; subj = $3
		if ($4 == 77) { skipped++; next }
		runs++
		found += $5 == "yes"
		passed += $4 == 0 && $5 != "no"
		falses = $8 == "?" || falses == "?" ? "?" : falses + $8
		each = each " " $6
	}
	END {
		if (!runs) { printf "  %-12s %-12s %-22s skipped (%d runs)\n", n, kind, subj, skipped; exit }
		# the issue: at most 2 ticks, a stall at most 500 ms at a 100 ms tick
		bound = kind == "stall" ? 500 : 2 * tick
		# on the open tick where the scenario prints its start, else on /metrics
		g = o != "" ? o : m
		goal = g == "" ? "-" : g <= bound ? "met" : "NOT MET"
		printf "  %-12s %-12s %-22s %2s/%-2d %6s %5s %6s %6s %5s %3s/%-2d %5s  %-7s (<= %d ms)  %s\n",
			n, kind, subj, kind == "?" ? "-" : found, runs, m == "" ? "-" : m,
			m == "" ? "-" : sprintf("%.1f", m / tick), b == "" ? "-" : b,
			o == "" ? "-" : o, o == "" ? "-" : sprintf("%.1f", o / tick), passed, runs,
			falses + 0 == falses ? falses + 0 : falses, goal, bound, substr(each, 2)
	}' "$WORK/detect.runs"
}

# detect_totals [pr]: the totals of detect.runs (runs of scenarios with an
# expectation, skips left out); with "pr", only "RECALL PRECISION".
detect_totals() {
	awk -v pr="${1:-}" '
	$1 != last { names++; last = $1; if ($5 == "-") unexpected = unexpected " " $1 }
	$5 == "-" { next }
	$4 != 77 {
		runs++
		found += $5 == "yes"
		hits += $4 == 0 && $5 == "yes"
		if ($8 == "?") unknown++; else falses += $8
	}
	END {
		if (pr) {
			printf "%.3f %.3f\n", runs ? found / runs : 0, found + falses ? found / (found + falses) : 0
			exit
		}
		printf "  %d scenarios, %d runs: %d found, %d hits, %d misses (a failed script is a miss)\n",
			names, runs, found, hits, runs - hits
		printf "  %d false events%s\n", falses,
			unknown ? sprintf(", and %d failed runs that did not say which", unknown) : ""
		if (unexpected) print "  no expectation (DETECT_EXPECT, lab_expect), not counted:" unexpected
	}' "$WORK/detect.runs"
}

# detect_cost: the detect step's CPU a tick (gathering the registry's
# series, then every detector) at 16 to 1000 peers (tests/bench/detectcost.c),
# TCP only and with RoCEv2 series too (-r: 20 more a peer), against a 100 ms
# tick. The goal is judged on the larger at 1000 peers.
detect_cost() {
	worst=0
	for roce in "" -r; do
		for p in 16 128 1000; do
			"$BENCH_DIR/detectcost" -p $p -t 200 $roce >"$WORK/detectcost.out" 2>&1 ||
				{ broken "detectcost -p $p $roce failed: $(cat "$WORK/detectcost.out")"; return 0; }
			us=$(sed -n 's/.*us_per_tick=\([0-9.]*\).*/\1/p' "$WORK/detectcost.out")
			echo "  detect step (detect_run), $p peers${roce:+ with RoCEv2}: $us us a tick"
		done
		worst=$(awk -v a="$us" -v b="$worst" 'BEGIN { print (a > b ? a : b) }')
	done
	goal "detect step at 1000 peers <= 10 % of a 100 ms tick" "$worst" "<=" 10000 "$worst us"
}

bench_detect() {
	header "7. detection: tests/lab/scenarios, ${DETECT_REPEAT} runs each; a ${CLEAN_SECS} s clean run"
	detect_cost
	need_ns "detection" || return 0
	[ -x "$LAB_BIN/loadgen" ] || {
		echo "  SKIP: no $LAB_BIN/loadgen (make test builds it): detection not measured"
		return 0
	}
	# one build for the whole block, even if build/ changes meanwhile (the
	# BPF objects are in the binary)
	cp "$FABMON" "$WORK/fabmon.detect" || { broken "unable to copy $FABMON"; return 0; }
	echo "  $FABMON as it was at $(date +%T): sha256" \
		"$(sha256sum "$WORK/fabmon.detect" | cut -c1-12), built $(date -r "$FABMON" '+%F %T')"
	: >"$WORK/detect.runs"
	for t in tests/lab/scenarios/t_*.sh; do
		case "$t" in *${BENCH_SCENARIOS:-}*) ;; *) continue ;; esac
		rep=1
		while [ $rep -le "$DETECT_REPEAT" ]; do
			detect_run "$t" $rep
			rep=$((rep + 1))
		done
	done
	echo "  each scenario as \`make test\` runs it (bash, 100 ms ticks); figures are what it prints;"
	echo "  latencies are medians over the runs that found the event, from the fault in place"
	echo "  (lab_onset: its command returned; a PFC storm's first counter step):"
	echo "  on /metrics (polled every 0.1 s: ms, ticks), to the event's first tick over its"
	echo "  bound, its start_ms (bound), and to the tick the agent opened it (open, lab_open:"
	echo "  event_open_ticks in a row, or on its first where it opens at once; in ticks:"
	echo "  o.ticks), which the latency goal is judged on; false: other events raised, summed;"
	echo "  the last column: each run's latency on /metrics. LAB- is the lab's per-run prefix"
	printf '  %-12s %-12s %-22s %5s %6s %5s %6s %6s %7s %6s %5s  %-19s %s\n' scenario kind \
		"subject (culprit)" found ms ticks bound open o.ticks passed false "latency goal" runs
	for name in $(awk '{ print $1 }' "$WORK/detect.runs" | uniq); do
		detect_row "$name"
	done
	detect_totals
	set -- $(detect_totals pr)
	goal "recall 1.0, right kind and culprit" "$1" ">=" 1 "recall $1: runs that found it"
	goal "precision 1.0" "$2" ">=" 1 "precision $2: of the events raised"
	detect_clean
}

# detect_clean: tests/bench/clean_run.sh for CLEAN_SECS, without host load
# and with both cores busy, its reports and issue 32's goals: no event
# without load; with it, no network event and a host_stall per 10 min at most.
detect_clean() {
	echo
	if [ "$CLEAN_SECS" = 0 ]; then
		echo "  clean run: not run (BENCH_CLEAN_SECS=0)"
		return 0
	fi
	for load in none stress; do
		echo "  clean run (tests/bench/clean_run.sh), ${CLEAN_SECS} s, host load $load:"
		timeout -k 10 $((CLEAN_SECS + 300)) env FABMON="$WORK/fabmon.detect" \
			LAB_BIN="$LAB_BIN" CLEAN_SECS="$CLEAN_SECS" CLEAN_LOAD=$load \
			bash tests/bench/clean_run.sh >"$WORK/clean.out" 2>&1
		rc=$?
		sed 's/^/  /' "$WORK/clean.out"
		line=$(grep '^clean: ' "$WORK/clean.out")
		[ "$rc" = 0 ] && [ -n "$line" ] ||
			{ broken "clean run ($load) failed (exit $rc)"; continue; }
		set -- $line
		if [ "$load" = none ]; then
			goal "zero events on clean traffic" "$7" "<=" 0 "$7 events in $3 s, $5 ticks"
		else
			goal "no network event, both cores busy" "$(($7 - ${13}))" "<=" 0 \
				"$(($7 - ${13})) in $3 s"
			goal "host_stall per 10 min, both cores busy" \
				"$(awk -v h="${13}" -v s="$3" 'BEGIN { printf "%.2f", h * 600 / s }')" \
				"<=" 1 "${13} in $3 s"
		fi
	done
}

# timed_run NAME CMD...: runs CMD pinned to one core under GNU time,
# output to $WORK/NAME.out; prints its wall seconds, CPU seconds (user and
# system) and maximum RSS in KiB.
timed_run() {
	name=$1
	shift
	t0=$(date +%s%N)
	/usr/bin/time -f '%U %S %M' -o "$WORK/$name.time" taskset -c 1 "$@" \
		>"$WORK/$name.out" 2>"$WORK/$name.err" || {
		broken "$name failed: $(tail -n 2 "$WORK/$name.err")"
		return 1
	}
	# GNU time's wall clock has centiseconds only
	awk -v a="$t0" -v b="$(date +%s%N)" \
		'{ printf "%.3f %.2f %s\n", (b - a) / 1e9, $1 + $2, $3 }' "$WORK/$name.time"
}

# median_ms CMD...: runs CMD 5 times (output discarded); prints the median
# wall time in ms, or nothing if it failed.
median_ms() {
	for _ in 1 2 3 4 5; do
		t0=$(date +%s%N)
		"$@" >/dev/null 2>"$WORK/median.err" || return 1
		echo $((($(date +%s%N) - t0) / 1000))
	done | sort -n | awk '{ v[NR] = $1 } END { printf "%.1f", v[3] / 1000 }'
}

# review_query LABEL DB METRIC SINCE_MS UNTIL_MS STEP_MS: the query alone
# (tests/bench/query.c, history_run as the CLI and API run it), 20 runs;
# prints its line and leaves the median in QUERY_MS.
review_query() {
	out=$("$BENCH_DIR/query" -d "$2" -m "$3" -l interface=eth0 -s "$4" -u "$5" -e "$6") ||
		{ broken "query $1 failed"; QUERY_MS=; return 1; }
	set -- "$1" $(echo "$out" | tr ' ' '\n' | sed 's/^[a-z0-9_]*=//')
	printf "  %-46s %6s points, median %s ms, p90 %s ms\n" "$1" "$3" "$5" "$6"
	QUERY_MS=$5
}

bench_review() {
	header "9. incident review: storage per sample, fabmon history and fabmon events"
	db=$WORK/review.db
	ticks=${BENCH_REVIEW_TICKS:-86400}
	echo "  a simulated day ($ticks ticks) of 1000 series at 1 s through the agent's store"
	echo "  (tests/bench/ingest.c; -m typical: busy and idle NICs' counters, error counters,"
	echo "  a queue, a fraction, constants; -m noise: random increments and gauges)"
	for mix in noise typical; do
		"$BENCH_DIR/ingest" -d "$db" -s 1000 -t "$ticks" -m $mix >"$WORK/review.$mix" 2>&1 ||
			{ broken "ingest failed: $(tail -n 2 "$WORK/review.$mix")"; return 0; }
		bps=$(sed -n 's/.*bytes_per_sample=\([0-9.]*\).*/\1/p' "$WORK/review.$mix")
		line=$(grep '^on disk' "$WORK/review.$mix" | sed 's/^on disk, open, after checkpoint: //')
		wr=$(grep '^written' "$WORK/review.$mix" | sed 's/ by write().*//; s/^written: //')
		echo "  $mix: $line (the live file: blocks, rollups, stage); $wr written"
		[ $mix = noise ] && rm -f "$db" "$db"-*
	done
	goal "<= 4 bytes a sample on disk (typical)" "$bps" "<=" 4 "$bps bytes"
	set -- $(sqlite3 -separator ' ' "$db" "SELECT min(ts_ms), max(ts_ms) FROM ticks")
	first=$1 last=$2
	m=fabmon_bench_c00_bytes_total
	review_query "1 h at 1 s, the newest (blocks and stage)" "$db" $m \
		$((last - 3600000)) "$last" 1000 || return 0
	goal "1 h of one series at 1 s < 5 ms" "$QUERY_MS" "<" 5 "$QUERY_MS ms"
	review_query "1 h at 1 s, 12 h ago (blocks)" "$db" $m \
		$((last - 13 * 3600000)) $((last - 12 * 3600000)) 1000
	review_query "the day at 1 min (rollups)" "$db" $m "$first" "$last" 60000
	ms=$(median_ms "$FABMON" history --db "$db" --since 1h --step 1s \
		--label interface=eth0 $m) ||
		{ broken "fabmon history failed: $(cat "$WORK/median.err")"; return 0; }
	startup=$(median_ms "$FABMON" version)
	echo "  whole command, fabmon history 1 h at 1 s: median $ms ms of 5 (the process alone,"
	echo "  fabmon version: $startup ms)"
	mdb=$WORK/month.db
	"$BENCH_DIR/ingest" -d "$mdb" -s 1000 -t 43200 -i 60000 -m typical >"$WORK/review.month" 2>&1 ||
		{ broken "ingest of 30 days failed: $(tail -n 2 "$WORK/review.month")"; return 0; }
	set -- $(sqlite3 -separator ' ' "$mdb" "SELECT min(ts_ms), max(ts_ms) FROM ticks")
	echo "  30 days of 1000 series at one sample a minute (ingest -i 60000):"
	review_query "30 days at 1 min (rollups)" "$mdb" $m "$1" "$2" 60000 || return 0
	goal "30 days of one series at 1 min < 20 ms" "$QUERY_MS" "<" 20 "$QUERY_MS ms"
	rm -f "$mdb" "$mdb"-*
	now=$(date +%s)000
	sqlite3 "$db" "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n LIMIT 9000)
		INSERT INTO events (kind, subject, start_ms, end_ms, peak_score, evidence)
		SELECT CASE i % 3 WHEN 0 THEN 'stall' WHEN 1 THEN 'incast' ELSE 'hotspot' END,
			'peer=10.0.' || (i % 250) || '.' || (i % 7), $now - i * 864000,
			$now - i * 864000 + 5000, 1.5, '{\"x\":1}' FROM n" ||
		{ broken "unable to add events"; return 0; }
	ms=$(median_ms "$FABMON" events --db "$db" --since 90d) ||
		{ broken "fabmon events failed: $(cat "$WORK/median.err")"; return 0; }
	json=$(median_ms "$FABMON" events --db "$db" --since 90d --json) ||
		{ broken "fabmon events --json failed: $(cat "$WORK/median.err")"; return 0; }
	echo "  fabmon events --since 90d over 9000 events (100 a day), whole command, median of 5:"
	echo "  table $ms ms, --json $json ms"
	goal "events over 90 days < 50 ms" "$ms" "<" 50 "$ms ms, the table"
	rm -f "$db" "$db"-*
}

# replay_size PACKETS: a pcapgen capture of PACKETS data packets (64 QPs,
# 512-byte payloads, ~530 bytes a record like the issue's real capture, with
# ACKs, CNPs, CE marks and PSN gaps) read from the page cache by fabmon replay
# (the median of 3 runs), tshark's cheapest full read (-q -z io,stat,0) and
# tcpdump -r; prints a line each and appends "packets mpps ratio rss_kib"
# to $WORK/replay.figs.
replay_size() {
	file=$WORK/replay.pcap
	"$LAB_BIN/pcapgen" --output "$file" --packets "$1" --qps 64 --payload 512 \
		--ack-every 8 --cnp-every 50 --ce-every 20 --gap-every 1000 >"$WORK/replay.json" ||
		{ broken "pcapgen failed"; return 1; }
	packets=$(jq .packets "$WORK/replay.json")
	cat "$file" >/dev/null
	echo "  $packets packets, $(($(stat -c %s "$file") >> 20)) MiB:"
	: >"$WORK/fabmon.runs"
	for _ in 1 2 3; do
		timed_run fabmon "$FABMON" replay -q --json "$file" >>"$WORK/fabmon.runs" || return 1
		got=$(jq .packets "$WORK/fabmon.out")
		[ "$got" = "$packets" ] || broken "fabmon replay counted $got packets of $packets"
	done
	# the median run by wall time: a run of a few tenths of a second is
	# easily slowed by whatever else has the core
	set -- $(sort -n "$WORK/fabmon.runs" | sed -n 2p)
	fm=$1 fm_cpu=$2 fm_rss=$3
	t=$(timed_run tshark tshark -n -q -z io,stat,0 -r "$file") || return 1
	set -- $t
	ts=$1 ts_cpu=$2
	got=$(awk -F'|' '/<>/ { gsub(/ /, "", $3); print $3 }' "$WORK/tshark.out")
	[ "$got" = "$packets" ] || broken "tshark -z io,stat,0 counted '$got' frames of $packets"
	t=$(timed_run tcpdump tcpdump -nn -q -r "$file" 'udp dst port 4791') || return 1
	set -- $t
	awk -v n="$packets" -v fm="$fm" -v fc="$fm_cpu" -v rss="$fm_rss" -v ts="$ts" \
		-v tc="$ts_cpu" -v td="$1" -v dc="$2" 'BEGIN {
		printf "    %-36s %7.3f s (CPU %6.2f s) %6.2f Mpps (CPU %.2f), max RSS %.1f MiB\n",
			"fabmon replay --json, median of 3", fm, fc, n / fm / 1e6, n / fc / 1e6,
			rss / 1024
		printf "    %-36s %7.3f s (CPU %6.2f s) %6.2f Mpps\n", "tshark -q -z io,stat,0", ts,
			tc, n / ts / 1e6
		printf "    %-36s %7.3f s (CPU %6.2f s) %6.2f Mpps\n", "tcpdump -r, one line a packet",
			td, dc, n / td / 1e6
		printf "    fabmon is %.1fx tshark (CPU %.1fx), %.1fx tcpdump\n", ts / fm, tc / fc,
			td / fm
		printf "%d %.3f %.2f %d\n", n, n / fm / 1e6, ts / fm, rss >> "/dev/stderr"
	}' 2>>"$WORK/replay.figs"
	rm -f "$file" "$WORK/tcpdump.out"
}

bench_replay() {
	header "8. fabmon replay: packets/s on one core beside tshark and tcpdump (same file), at two sizes"
	for tool in tshark tcpdump taskset /usr/bin/time; do
		command -v $tool >/dev/null 2>&1 || { broken "no $tool (make deps)"; return 0; }
	done
	echo "  pcapgen captures read from the page cache; wall seconds, pinned to one core;"
	echo "  load average before: $(cut -d' ' -f1-3 /proc/loadavg) (wall time is shared with it)"
	: >"$WORK/replay.figs"
	replay_size $((REPLAY_PACKETS / 4)) && replay_size "$REPLAY_PACKETS" || return 0
	set -- $(sed -n 1p "$WORK/replay.figs") $(sed -n 2p "$WORK/replay.figs")
	goal ">= 5 Mpps on one core (the larger)" "$6" ">=" 5 "$6 Mpps"
	goal ">= 30x tshark (the larger)" "$7" ">=" 30 "$7x"
	# memory flat: the larger capture, 4 times the packets, within 10 %
	# of the smaller's RSS
	goal "max RSS flat in capture size" "$(awk -v a="$4" -v b="$8" 'BEGIN { print b / a }')" \
		"<=" 1.1 "$(awk -v a="$4" -v b="$8" -v p="$1" -v q="$5" \
		'BEGIN { printf "%.1f MiB at %d packets, %.1f MiB at %d", a / 1024, p, b / 1024, q }')"
}

bench_http() {
	header "10. /metrics under load: wrk at ~$HTTP_RATE requests/s for $HTTP_SECS s, 64 interfaces"
	need_ns "HTTP load" || return 0
	command -v wrk >/dev/null 2>&1 ||
		{ echo "  SKIP: 'wrk' not found: HTTP load not measured (make deps)"; return 0; }
	agent_64 http.db || return 0
	# Debian's wrk (4.x) has no rate option: each connection waits after
	# each answer (wrk's Lua delay()), 12 connections 11 ms each, a little
	# over the rate, which the answers' own time and wrk's timer bring down
	conns=12
	printf 'function delay()\n\treturn %d\nend\n' $(((conns - 1) * 1000 / HTTP_RATE)) \
		>"$WORK/pace.lua"
	hz=$(getconf CLK_TCK)
	# the first concurrent scrapes grow malloc's per-thread arenas once:
	# RSS is taken from after that
	ip netns exec "$NS" timeout 30 wrk -t 2 -c $conns -d 5s -s "$WORK/pace.lua" \
		"http://127.0.0.1:$FABMON_PORT/metrics" >/dev/null 2>&1
	# the tick path grows by itself (samples staged until their blocks
	# fill, block 3): half as long without load first, to tell the two
	# apart (servers live SERVER_BOUND_S at most)
	idle=$((HTTP_SECS / 2))
	rss_idle=$(status_kb "$pid" VmRSS)
	sleep "$idle"
	c0=$(cpu_ticks "$pid")
	rss0=$(status_kb "$pid" VmRSS)
	(
		for _ in $(seq $((HTTP_SECS / 10))); do
			sleep 10
			status_kb "$pid" VmRSS
		done
	) >"$WORK/http.rss" &
	sampler=$!
	ip netns exec "$NS" timeout $((HTTP_SECS + 30)) wrk -t 2 -c $conns -d "${HTTP_SECS}s" \
		--latency -s "$WORK/pace.lua" "http://127.0.0.1:$FABMON_PORT/metrics" \
		>"$WORK/wrk.out" 2>&1 || broken "wrk failed: $(tail -n 3 "$WORK/wrk.out")"
	wait $sampler
	c1=$(cpu_ticks "$pid")
	rss1=$(status_kb "$pid" VmRSS) hwm=$(status_kb "$pid" VmHWM)
	stop_servers
	ns_down
	[ -n "$rss1" ] || { broken "agent (pid $pid) went away during the run"; return 0; }
	awk -v s="$series" -v secs="$HTTP_SECS" -v c="$conns" '
		/requests in/ { n = $1 }
		/^Requests\/sec:/ { rate = $2 }
		/Non-2xx or 3xx responses:/ { non2xx = $NF }
		/Socket errors:/ { gsub(",", ""); errs = $4 + $6 + $8 + $10 }
		$1 == "50%" { p50 = $2 } $1 == "99%" { p99 = $2 }
		$1 == "Latency" && !max { max = $4 }
		END {
			printf "  %d series, %d connections for %d s: %d requests, %.0f/s\n", s, c, secs, n, rate
			printf "  latency p50 %s, p99 %s, max %s; socket errors %d, non-2xx %d\n", \
				p50, p99, max, errs, non2xx
			print n, rate, errs + non2xx > "/dev/stderr"
		}' "$WORK/wrk.out" 2>"$WORK/http.fig"
	read -r reqs rate bad <"$WORK/http.fig"
	echo "  VmRSS (MiB) after a 5 s warm-up: $((rss_idle / 1024)), $idle s later without load" \
		"$((rss0 / 1024)) ($((rss0 - rss_idle)) KiB more); then under load, every 10 s:" \
		"$(cat <(echo "$rss0") "$WORK/http.rss" <(echo "$rss1") |
			awk '{ printf "%s%.1f", (NR > 1 ? " " : ""), $1 / 1024 }'); VmHWM" \
		"$(awk -v h="$hwm" 'BEGIN { printf "%.1f", h / 1024 }') MiB"
	echo "  agent CPU $(awk -v c="$((c1 - c0))" -v hz="$hz" -v t="$HTTP_SECS" \
		'BEGIN { printf "%.1f", c / hz / t * 100 }') % of one core"
	goal "~$HTTP_RATE requests/s offered" "$rate" ">=" "$((HTTP_RATE * 9 / 10))" "$rate/s"
	goal "zero errors and non-2xx answers" "${bad:-1}" "<=" 0 "${bad:-?} of $reqs"
	# KiB a minute, under load and idle
	load_rate=$(((rss1 - rss0) * 60 / HTTP_SECS)) idle_rate=$(((rss0 - rss_idle) * 60 / idle))
	goal "RSS growth under load <= idle + 1 MiB/min" \
		"$((load_rate - idle_rate))" "<" 1024 \
		"$load_rate KiB/min under load, $idle_rate idle"
}

# 11: the robustness tests run longer; their last lines are the figures
# 12: the matrix prints its own tables and goals; a run that could not run
# at all is an error here, what it found is not
bench_locate() {
	header "13. locate over ${BENCH_LOCATE_NODES:-2000} simulated nodes"
	if env FABMON="$FABMON" bash tests/bench/locate_scale.sh >"$WORK/locate.out" 2>&1; then
		cat "$WORK/locate.out"
	else
		broken "locate_scale.sh: $(tail -n 1 "$WORK/locate.out")"
	fi
}

# lab_script WHAT SCRIPT ENV...: runs the lab script SCRIPT under ENV (with
# FABMON and LAB_BIN), its output indented; an exit other than 0 or 77 (a
# skip) is WHAT broken: what the script found is printed, not judged here.
lab_script() {
	what=$1 script=$2
	shift 2
	env FABMON="$FABMON" LAB_BIN="$LAB_BIN" "$@" bash "$script" >"$WORK/lab_script.out" 2>&1
	rc=$?
	sed 's/^/  /' "$WORK/lab_script.out"
	case $rc in
	0 | 77) ;;
	*) broken "$what (exit $rc)" ;;
	esac
}

bench_locate_matrix() {
	header "14. locate's fault matrix on the leaf-spine lab: seed ${LOCATE_MATRIX_SEED:-1001}, ${LOCATE_MATRIX_CELLS:-18} cells"
	need_ns "locate's fault matrix" || return 0
	lab_script "locate's fault matrix could not run" tests/bench/locate_matrix.sh \
		LOCATE_MATRIX_SEED="${LOCATE_MATRIX_SEED:-1001}"
}

bench_matrix() {
	header "12. scenario matrix: tuning seeds ${MATRIX_TUNE:-0-14}, report seeds ${MATRIX_REPORT:-1000-1014}"
	need_ns "the scenario matrix" || return 0
	lab_script "the scenario matrix: some runs failed" tests/bench/matrix.sh \
		SHARED_FIXTURES="$SHARED_FIXTURES"
}

bench_robustness() {
	header "11. robustness: interface churn ${BENCH_CHURN_SECS:-60} s, kill -9 x${BENCH_KILL9_RUNS:-100}, API load ${BENCH_API_LOAD_SECS:-60} s, ${BENCH_FLOOD_FLOWS:-4000000} flows"
	for run in "iface_churn CHURN_SECS=${BENCH_CHURN_SECS:-60}" \
		"kill9 KILL9_RUNS=${BENCH_KILL9_RUNS:-100}" \
		"api_load API_LOAD_SECS=${BENCH_API_LOAD_SECS:-60} API_LOAD_TICKS=3600" \
		"flow_explosion FLOOD_FLOWS=${BENCH_FLOOD_FLOWS:-4000000}"; do
		set -- $run
		name=$1
		shift
		t0=$(date +%s)
		if env "$@" LAB_BIN="${LAB_BIN:-$PWD/build/lab}" BENCH_DIR="$BENCH_DIR" \
			bash "tests/robustness/t_$name.sh" \
			>"$WORK/rb_$name.log" 2>&1; then
			echo "  t_$name.sh ($*, $(($(date +%s) - t0)) s):"
			grep -v '^fabmon: \|^tests/' "$WORK/rb_$name.log" | tail -n 3 | sed 's/^/    /'
		else
			broken "t_$name.sh ($*): $(tail -n 1 "$WORK/rb_$name.log")"
		fi
	done
}

on_exit ns_down
echo "fabmon benchmarks ($("$FABMON" version 2>/dev/null | head -n 1)); $(nproc) cores, $(uname -r)"
start=$(date +%s)
# BENCH_ONLY="probe_cost flows" runs only those blocks
bench_mesh() {
	echo
	bash tests/bench/mesh.sh || broken "tests/bench/mesh.sh failed"
}

for b in scrape ingest rss probe_cost throughput flows detect replay review http robustness mesh \
	locate matrix locate_matrix; do
	case " ${BENCH_ONLY:-$b} " in *" $b "*) "bench_$b" ;; esac
done
echo
echo "benchmarks done in $(($(date +%s) - start)) s"
[ "$BROKEN" = 0 ] || echo "some figures could not be taken: see ERROR lines above"
exit "$BROKEN"
