#!/bin/sh
# SPDX-License-Identifier: MIT
# Benchmarks that print figures (`make bench`); nothing here asserts on speed.
# Each goal from the issue is printed next to its measurement as "met" or
# "not met". The exit status is non-zero only when a figure could not be
# taken at all (a binary failed to start, a scrape never succeeded).
#
#   1. /metrics latency with ~10k series, fabmon vs node_exporter, one netns
#   2. SQLite ingest through registry + store_write_tick()
#   3. agent RSS and CPU at a 1 s tick with 64 interfaces
#
# Environment: FABMON (the binary), BENCH_DIR (the built tests/bench/*.c);
# run from the repository root. Knobs, for a quicker or longer look:
# BENCH_IFACES (interfaces for 1, default 526: ~10k fabmon series),
# BENCH_SCRAPES (fabmon, default 500), BENCH_NE_SCRAPES (node_exporter,
# which takes far longer per scrape, default 100), BENCH_TICKS (ingest
# ticks, default 200),
# BENCH_RSS_SECONDS (default 30).
#
# Traffic stays on loopback inside one namespace, fabmon-bench-<pid>, which
# the exit trap deletes with every process this script started, also on
# failure and on Ctrl-C.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

FABMON=${FABMON:-$PWD/build/fabmon}
BENCH_DIR=${BENCH_DIR:-$PWD/build/bench}
IFACES=${BENCH_IFACES:-526}
SCRAPES=${BENCH_SCRAPES:-500}
NE_SCRAPES=${BENCH_NE_SCRAPES:-100}
TICKS=${BENCH_TICKS:-200}
RSS_SECONDS=${BENCH_RSS_SECONDS:-30}
NODE_EXPORTER=${NODE_EXPORTER:-/usr/bin/prometheus-node-exporter}
NS=fabmon-bench-$$
# Inside a namespace of our own every port is free: fixed ones will do.
FABMON_PORT=9478
NE_PORT=9100
# Spreads the scrapes over several agent ticks (see scrape.c).
SCRAPE_GAP_MS=10
# Upper bound on any one server's life, should the trap itself be killed.
SERVER_BOUND_S=150
BROKEN=0

# Everything the servers leave in the namespace dies with it; killing our
# own pids first lets them exit cleanly and the namespace go at once.
SERVER_PIDS=""
ns_down() {
	for p in $SERVER_PIDS; do kill "$p" 2>/dev/null; done
	for p in $(ip netns pids "$NS" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
	ip netns del "$NS" 2>/dev/null
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
# parent and forwards our TERM) goes to SERVER_PID.
serve() {
	name=$1
	shift
	timeout -k 5 "$SERVER_BOUND_S" ip netns exec "$NS" "$@" >"$WORK/$name.log" 2>&1 &
	SERVER_PIDS="$SERVER_PIDS $!"
	SERVER_PID=$!
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

bench_rss() {
	header "3. agent RSS and CPU: 1 s tick, 64 interfaces, ${RSS_SECONDS} s"
	need_ns "RSS and CPU" || return 0
	ns_up 64 || { broken "unable to make namespace $NS"; return 0; }
	echo "  namespace $NS: $NS_IFACES interfaces + lo ($NS_KIND); nothing scrapes during the run"
	serve agent "$FABMON" agent --listen "127.0.0.1:$FABMON_PORT" --db "$WORK/rss.db" \
		--interval 1s
	wait_http $FABMON_PORT /readyz agent || return 0
	pid=$SERVER_PID
	# past the first ticks, which intern every series and create the file
	sleep 3
	series=$(count_series $FABMON_PORT)
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

on_exit ns_down
echo "fabmon benchmarks ($("$FABMON" version 2>/dev/null | head -n 1)); $(nproc) cores, $(uname -r)"
start=$(date +%s)
bench_scrape
bench_ingest
bench_rss
echo
echo "benchmarks done in $(($(date +%s) - start)) s"
[ "$BROKEN" = 0 ] || echo "some figures could not be taken: see ERROR lines above"
exit "$BROKEN"
