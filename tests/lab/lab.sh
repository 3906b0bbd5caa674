# SPDX-License-Identifier: MIT
# The test lab's fabric, sourced by tests/lab/t_*.sh after tests/lib.sh:
# ranks are network namespaces, each with one veth into a Linux bridge that
# lives in a "switch" namespace. Addresses come from 198.18.0.0/15 only.
# Every name carries LAB (unique per run), so teardown removes exactly what
# this run made and nothing else.
LAB=fm$$
LAB_RANKS=0
LAB_SW=0

# lab_up N [LEAVES]: makes ranks 1..N (namespaces $LAB-r1.. with eth0 =
# 198.18.0.i/24) and the switch namespace $LAB-sw with bridge br0 and ports
# $LAB-p1..pN. With LEAVES 2, ranks 1..N/2 are on leaf br0 and the rest on
# leaf br1, and the two bridges are joined by one veth pair, the spine
# uplink: $LAB-u1 in br0, $LAB-u2 in br1 (LAB_UPLINKS names both).
lab_up() {
	on_exit lab_down
	ip netns add "$LAB-sw" || fail "unable to create namespace $LAB-sw"
	LAB_SW=1
	ip -n "$LAB-sw" link set lo up
	for br in br0 $([ "${2:-1}" = 2 ] && echo br1); do
		ip -n "$LAB-sw" link add $br type bridge || fail "unable to create bridge $br"
		ip -n "$LAB-sw" link set $br up
	done
	LAB_UPLINKS=""
	if [ "${2:-1}" = 2 ]; then
		ip -n "$LAB-sw" link add "$LAB-u1" type veth peer name "$LAB-u2" ||
			fail "unable to create the spine uplink"
		ip -n "$LAB-sw" link set "$LAB-u1" master br0 up
		ip -n "$LAB-sw" link set "$LAB-u2" master br1 up
		LAB_UPLINKS="$LAB-u1 $LAB-u2"
	fi
	i=1
	while [ $i -le "$1" ]; do
		ip netns add "$LAB-r$i" || fail "unable to create namespace $LAB-r$i"
		LAB_RANKS=$i # so that a failure from here on removes this one too
		ip -n "$LAB-r$i" link set lo up
		ip link add "$LAB-p$i" netns "$LAB-sw" type veth peer name eth0 netns "$LAB-r$i" ||
			fail "unable to create veth for rank $i"
		br=br0
		[ "${2:-1}" = 2 ] && [ $i -gt $(($1 / 2)) ] && br=br1
		ip -n "$LAB-sw" link set "$LAB-p$i" master $br up
		ip -n "$LAB-r$i" addr add "198.18.0.$i/24" dev eth0
		ip -n "$LAB-r$i" link set eth0 up
		i=$((i + 1))
	done
}

# lab_up_spine N: lab_up with two leaves joined by the spine uplink.
lab_up_spine() {
	lab_up "$1" 2
}

# lab_ns RANK: the namespace of rank RANK, or of the switch for "sw".
lab_ns() {
	if [ "$1" = sw ]; then echo "$LAB-sw"; else echo "$LAB-r$1"; fi
}

# lab_exec RANK CMD...: runs CMD in rank RANK's namespace (with its own /sys);
# RANK "sw" is the switch.
lab_exec() {
	r=$1; shift
	ip netns exec "$(lab_ns "$r")" "$@"
}

# lab_spawn RANK CMD...: starts CMD in the background in rank RANK's
# namespace; LAB_PID is its pid (ip netns exec execs CMD, so signals reach it;
# "lab_exec ... &" would fork a subshell and $! would be the subshell's).
lab_spawn() {
	r=$1; shift
	ip netns exec "$(lab_ns "$r")" "$@" &
	LAB_PID=$!
	on_exit "kill -9 $LAB_PID"
}

# lab_loadgen PATTERN SECONDS [ARGS...]: runs loadgen's PATTERN over TCP on
# every rank, in the background, starting no iteration after SECONDS (4 MiB
# per rank per iteration; ARGS are passed on and override); each rank R's
# table goes to $WORK/PATTERN.R.out (R from 0), LAB_LOADGEN holds the pids.
# Every call takes fresh ports.
lab_loadgen() {
	pattern=$1 secs=$2; shift 2
	LAB_LOADGEN_PORT=$((${LAB_LOADGEN_PORT:-22000} + 10))
	peers=$(seq -s, -f '198.18.0.%g' 1 "$LAB_RANKS")
	LAB_LOADGEN=""
	for rank in $(seq 0 $((LAB_RANKS - 1))); do
		lab_spawn $((rank + 1)) timeout -k 1 $((secs + 30)) "${LAB_BIN:-$PWD/build/lab}/loadgen" \
			--rank "$rank" --ranks "$LAB_RANKS" --peers "$peers" --port "$LAB_LOADGEN_PORT" \
			--pattern "$pattern" --transport tcp --size 4M --iters 100000 \
			--duration "$secs" --timeout 20 "$@" >"$WORK/$pattern.$rank.out" 2>&1
		LAB_LOADGEN="$LAB_LOADGEN $LAB_PID"
	done
}

# lab_loadgen_wait: waits for the ranks of the last lab_loadgen; fails,
# showing their output, if one of them failed.
lab_loadgen_wait() {
	for p in $LAB_LOADGEN; do
		wait "$p" || { cat "$WORK"/*.[0-9]*.out; fail "loadgen failed"; }
	done
}

# lab_clean_ring DB SECS: a ring all-reduce of SECS seconds; fails unless
# the agent's DB holds no event after it.
lab_clean_ring() {
	lab_loadgen ring-allreduce "$2"
	lab_loadgen_wait
	lab_expect "$1"
	echo "clean ring: $(grep -c '^ *[0-9]' "$WORK/ring-allreduce.0.out") iterations, no event"
}

# lab_loadgen_pid RANK: the loadgen process of lab rank RANK in the last
# lab_loadgen (it runs under timeout: that one's child); fails if none.
lab_loadgen_pid() {
	LAB_LOADGEN_PID=$(pgrep -P "$(echo $LAB_LOADGEN | cut -d' ' -f"$1")")
	[ -n "$LAB_LOADGEN_PID" ] || fail "no loadgen process for rank $1"
}

# lab_shape DEV RATE: shapes switch port DEV (one this lab made) to RATE
# (tc units: 150mbit) with a root tbf; RATE "off" removes the shaping.
lab_shape() {
	case "$1" in
	"$LAB"-*) ;;
	*) fail "lab_shape: '$1' is not a port of this lab" ;;
	esac
	if [ "$2" = off ]; then
		ip netns exec "$LAB-sw" tc qdisc del dev "$1" root || fail "unable to unshape $1"
	else
		# 50 ms of queue: enough to hold a TCP window's burst, so the
		# bottleneck queues (and drops) as a switch's buffer would
		ip netns exec "$LAB-sw" tc qdisc replace dev "$1" root tbf rate "$2" burst 64kb \
			latency 50ms || fail "unable to shape $1 to $2"
	fi
}

# lab_agent RANK ARGS...: starts `fabmon agent ARGS` in rank RANK (or "sw",
# the switch) on a free loopback port (LAB_PORT), logging to $WORK/agent.log, and waits (10 s at
# most) for /readyz. AGENT_PID is its pid.
lab_agent() {
	LAB_AGENT_RANK=$1; shift
	[ -n "${LAB_PORT:-}" ] || LAB_PORT=$(free_port)
	# the TCP probes see every namespace of the host: this lab's only, so
	# that another lab running at the same time (same addresses) is not seen
	netns=$(for i in $(seq "$LAB_RANKS") sw; do printf '/run/netns/%s,' "$(lab_ns $i)"; done)
	lab_spawn "$LAB_AGENT_RANK" "$FABMON" agent --listen "127.0.0.1:$LAB_PORT" \
		--bpf-netns "${netns%,}" "$@" >>"$WORK/agent.log" 2>&1
	AGENT_PID=$LAB_PID
	for _ in $(seq 100); do
		lab_scrape readyz >/dev/null 2>&1 && return 0
		kill -0 "$AGENT_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$WORK/agent.log" >&2
	fail "agent in $(lab_ns "$LAB_AGENT_RANK") not ready"
}

# lab_prometheus RULES...: Debian's prometheus in the switch namespace on
# its loopback (127.0.0.1:9090; reach the agents through a switch address
# on br0), scraping every rank's agent at 198.18.0.R:$LAB_PORT as job
# "fabmon" and evaluating the RULES files, both every second. LAB_PROM is
# its pid; fails unless its config passes promtool and it is ready within
# 10 s.
lab_prometheus() {
	targets=$(for r in $(seq "$LAB_RANKS"); do printf "'198.18.0.%d:%d'," "$r" "$LAB_PORT"; done)
	{
		printf 'global:\n  scrape_interval: 1s\n  scrape_timeout: 500ms\n'
		printf '  evaluation_interval: 1s\nrule_files:\n'
		printf '  - %s\n' "$@"
		printf 'scrape_configs:\n  - job_name: fabmon\n    static_configs:\n'
		printf '      - targets: [%s]\n' "${targets%,}"
	} >"$WORK/prometheus.yml"
	promtool check config "$WORK/prometheus.yml" >"$WORK/check.out" 2>&1 ||
		{ cat "$WORK/check.out"; fail "generated prometheus.yml"; }
	lab_spawn sw prometheus --config.file="$WORK/prometheus.yml" \
		--storage.tsdb.path="$WORK/tsdb" --web.listen-address=127.0.0.1:9090 --log.level=warn \
		>"$WORK/prometheus.log" 2>&1
	LAB_PROM=$LAB_PID
	for _ in $(seq 40); do
		lab_exec sw curl -sf --max-time 3 http://127.0.0.1:9090/-/ready >/dev/null 2>&1 && return 0
		kill -0 "$LAB_PROM" 2>/dev/null || break
		sleep 0.25
	done
	cat "$WORK/prometheus.log"
	fail "prometheus not ready"
}

# lab_sysfs ROOT: a --sysfs-root for an agent in a rank: writable copies of
# the real RDMA counter files of $SHARED_FIXTURES (a test may advance them)
# and the rank's own interfaces (inside a namespace /sys is the namespace's).
lab_sysfs() {
	mkdir -p "$1/class"
	cp -R "$SHARED_FIXTURES/sysfs/class/infiniband" "$1/class/" ||
		fail "unable to copy the RDMA fixture into $1"
	chmod -R u+w "$1"
	ln -s /sys/class/net "$1/class/net"
}

# lab_scrape [PATH]: the lab agent's /metrics (or /PATH).
lab_scrape() {
	lab_exec "$LAB_AGENT_RANK" curl -sf "http://127.0.0.1:$LAB_PORT/${1:-metrics}"
}

# lab_metric SERIES: the value of one series on the lab agent, or empty.
lab_metric() {
	lab_scrape | awk -v s="$1" '$1 == s { print $2; exit }'
}

# lab_await_metric SERIES VALUE SECONDS: polls the lab agent's /metrics every
# 0.1 s until SERIES is VALUE; fails, naming what it was, after SECONDS.
lab_await_metric() {
	for _ in $(seq $(($3 * 10))); do
		v=$(lab_metric "$1")
		[ "$v" = "$2" ] && return 0
		sleep 0.1
	done
	fail "$1 is ${v:-absent} after $3 s, want $2"
}

# lab_rising SERIES: waits (5 s at most) until the lab agent's counter
# SERIES is above what it is now (0 while it is absent: nothing counted
# yet); prints both values, fails if it stays.
lab_rising() {
	from=$(lab_metric "$1")
	from=${from:-0}
	for _ in $(seq 50); do
		sleep 0.1
		to=$(lab_metric "$1")
		[ -n "$to" ] && awk -v a="$from" -v b="$to" 'BEGIN { exit !(b > a) }' &&
			{ echo "$1: $from -> $to"; return 0; }
	done
	fail "$1 stopped rising: $from, 5 s later ${to:-absent}"
}

# lab_filters RANK DEV HOOK: how many fabmon filters rank RANK's DEV has on
# HOOK (ingress or egress).
lab_filters() {
	lab_exec "$1" tc filter show dev "$2" "$3" 2>/dev/null | grep -c 'fabmon_' || true
}

# lab_events DB: the events table of DB summed up, " N kind cause subject;"
# a row (empty when there is none), for a scenario's "this and nothing else".
lab_events() {
	sqlite3 "$1" "SELECT kind || ' ' || cause || ' ' || subject FROM events" | sort | uniq -c |
		tr -s ' \n' ' ;'
}

# lab_cause KIND: the cause an event of KIND must carry (DESIGN.md, Events).
lab_cause() {
	case "$1" in
	host_stall) echo host ;;
	*) echo network ;;
	esac
}

# lab_active KIND SUBJECT: the fabmon_event_active series of that event, with
# the cause its kind must carry.
lab_active() {
	echo "fabmon_event_active{kind=\"$1\",cause=\"$(lab_cause "$1")\",subject=\"$2\"}"
}

# lab_await_open KIND SUBJECT SECONDS: polls the lab agent's /metrics every
# 0.1 s until the event is active; LAB_SEEN is then when (ms since the epoch).
# Fails, showing the agent's event lines, after SECONDS.
lab_await_open() {
	for _ in $(seq $(($3 * 10))); do
		if [ "$(lab_metric "$(lab_active "$1" "$2")")" = 1 ]; then
			LAB_SEEN=$(date +%s%3N)
			return 0
		fi
		sleep 0.1
	done
	grep event "$WORK/agent.log"
	fail "no $1 event on $2 within $3 s"
}

# lab_await_close KIND SUBJECT SECONDS: waits until the agent has logged that
# the event closed; LAB_SEEN is then when. Fails after SECONDS.
lab_await_close() {
	for _ in $(seq $(($3 * 10))); do
		if grep -q "event $1 closed: $2 after" "$WORK/agent.log"; then
			LAB_SEEN=$(date +%s%3N)
			return 0
		fi
		sleep 0.1
	done
	grep event "$WORK/agent.log"
	fail "$1 on $2 did not close within $3 s"
}

# lab_onset FAULT: runs FAULT (a command line) and sets LAB_T0 to when it
# returned: the onset. A tc or ip command changes the fabric in its last
# moment, after its start-up (fork, exec, `ip netns exec`), which took 20-60
# ms on the lab's loaded 2-core VM; counting that was counting the test's own
# tools. Prints how long FAULT took.
lab_onset() {
	t=$(date +%s%3N)
	eval "$1"
	LAB_T0=$(date +%s%3N)
	echo "fault in place $((LAB_T0 - t)) ms after its command started: the onset"
}

# lab_fault KIND SUBJECT SECONDS FAULT RESTORE: injects FAULT (lab_onset),
# waits SECONDS at most for the KIND event on SUBJECT, holds the fault
# 2 s, runs RESTORE and waits 10 s at most for the event to close; prints
# both latencies.
lab_fault() {
	lab_onset "$4"
	lab_await_open "$1" "$2" "$3"
	echo "$4 -> $1 on $2 seen after $((LAB_SEEN - LAB_T0)) ms"
	sleep 2
	t=$(date +%s%3N)
	eval "$5"
	lab_await_close "$1" "$2" 10
	echo "$5 -> $1 closed after $((LAB_SEEN - t)) ms"
}

# lab_expect DB [KIND SUBJECT [MAX]]: fails unless DB's events are exactly
# one KIND event on SUBJECT, with the cause its kind must carry (up to MAX of them, if given; none at all
# without KIND); prints the onset -> first tick over latency from the first
# row's start_ms and LAB_T0, and lab_open's.
lab_expect() {
	ev=$(lab_events "$1")
	want=""
	[ $# -lt 3 ] || want=" 1 $2 $(lab_cause "$2") $3;"
	for n in $(seq 2 "${4:-1}"); do
		[ "$ev" = " $n $2 $(lab_cause "$2") $3;" ] && want=$ev
	done
	[ "$ev" = "$want" ] || { grep event "$WORK/agent.log"; fail "want events '$want', got '$ev'"; }
	[ $# -lt 3 ] && return 0
	start=$(sqlite3 "$1" "SELECT start_ms FROM events WHERE kind = '$2' ORDER BY id LIMIT 1")
	echo "onset -> first tick over the bound: $((start - LAB_T0)) ms; events:$ev"
	lab_open "$1" "$2" "$LAB_T0"
}

# lab_open DB KIND T0: prints "onset -> event open: N ms", N from T0 to the
# tick the agent opened DB's first KIND event (its open_ms: event_open_ticks
# after its first tick over, or that tick where the detector opens at once).
lab_open() {
	open=$(sqlite3 "$1" "SELECT open_ms FROM events WHERE kind = '$2' ORDER BY id LIMIT 1")
	[ -n "$open" ] || fail "no $2 event with an open_ms in $1"
	echo "onset -> event open: $((open - $3)) ms"
}

# lab_ns_del NAME: removes namespace NAME after killing what still runs in
# it, and the tc lock file a killed agent left for it (named by the
# namespace's inode: collector/bpf/tc_lock.h).
lab_ns_del() {
	ip netns pids "$1" 2>/dev/null | xargs -r kill -9 2>/dev/null
	ino=$(stat -c %i "/run/netns/$1" 2>/dev/null) && rm -f "/run/fabmon/tc-$ino.lock"
	ip netns del "$1" 2>/dev/null
}

# lab_down: removes the namespaces this run made, after killing what still
# runs in them: a process started under `timeout` or forked by one it
# started outlives the kill of the pid the script knows.
lab_down() {
	i=1
	while [ $i -le "$LAB_RANKS" ]; do
		lab_ns_del "$LAB-r$i"
		i=$((i + 1))
	done
	[ "$LAB_SW" = 1 ] && lab_ns_del "$LAB-sw"
	LAB_RANKS=0
	LAB_SW=0
}
