# SPDX-License-Identifier: MIT
# Shared by the tests/*/t_*.sh scripts: sourced, not run.
# Every script gets a private work dir and a cleanup trap that runs whatever
# the script registered with `on_exit`, even when it fails or is interrupted.
set -u
WORK=$(mktemp -d /tmp/fabmon-t-XXXXXX)
CLEANUP=""
# one command a line: a command that ends in "&" must not meet a ";"
on_exit() {
	CLEANUP="$*
$CLEANUP"
}
_cleanup() {
	rc=$?
	eval "$CLEANUP" >/dev/null 2>&1
	[ -n "${KEEP_WORK:-}" ] && cp -r "$WORK" "$KEEP_WORK/"
	rm -rf "$WORK"
	exit $rc
}
trap _cleanup EXIT
trap 'exit 130' INT TERM HUP

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 77; }
need_root() { [ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"; }

# A free TCP port on loopback (bounded tries): under the ephemeral range,
# where the local ends of outgoing connections take theirs (a CI run's agent
# could not bind a port one of them held), and no socket on it.
free_port() {
	read -r eph _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || eph=32768
	[ "$eph" -gt 12000 ] || eph=32768
	for _ in $(seq 20); do
		p=$(((RANDOM * 32768 + RANDOM) % (eph - 10000) + 10000))
		if command -v ss >/dev/null; then
			[ -z "$(ss -Htan "( sport = :$p )" 2>/dev/null)" ] && { echo $p; return; }
		elif ! (echo >/dev/tcp/127.0.0.1/$p) 2>/dev/null; then
			echo $p
			return
		fi
	done
	echo 19478
}

# start_agent PORT [ARGS...]: runs fabmon agent in the background (pid in
# AGENT_PID, log in $WORK/agent.log) and waits (at most 10 s) for /readyz.
start_agent() {
	port=$1; shift
	"$FABMON" agent --listen "127.0.0.1:$port" "$@" >>"$WORK/agent.log" 2>&1 &
	AGENT_PID=$!
	on_exit "kill -9 $AGENT_PID"
	i=0
	while [ $i -lt 100 ]; do
		curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && return 0
		kill -0 $AGENT_PID 2>/dev/null || { cat "$WORK/agent.log" >&2; fail "agent exited"; }
		sleep 0.1; i=$((i + 1))
	done
	cat "$WORK/agent.log" >&2
	fail "agent not ready after 10 s"
}

# stored_count DB METRIC [--label K=V]...: the samples the database holds of
# the metric's matching series, all time, read as an operator reads them.
stored_count() {
	db=$1 name=$2
	shift 2
	"$FABMON" history "$name" --db "$db" "$@" --since 0 --until now --step 99999999s \
		--agg count --json | jq -s 'map(.points | map(.[1]) | add // 0) | add // 0'
}

# metric PORT SERIES: the value of one series on /metrics, or empty.
metric() {
	curl -sf "http://127.0.0.1:$1/metrics" | awk -v s="$2" '$1 == s { print $2; exit }'
}

# await_metric PORT SERIES VALUE [SECONDS]: polls /metrics every 50 ms until
# SERIES is VALUE ("": absent); SEEN is then when (ms since the epoch).
# Returns 1 if it is not after SECONDS (default 5).
await_metric() {
	for _ in $(seq $((${4:-5} * 20))); do
		[ "$(metric "$1" "$2")" = "$3" ] && { SEEN=$(date +%s%3N); return 0; }
		sleep 0.05
	done
	return 1
}

# netdev_tree ROOT IFNAME VALUE: a minimal sysfs class/net entry under ROOT
# (every statistics counter VALUE, up, MTU 1500) for tests that point the
# agent's --sysfs-root at a tree of their own.
netdev_tree() {
	mkdir -p "$1/class/net/$2/statistics"
	for f in rx_bytes tx_bytes rx_packets tx_packets rx_errors tx_errors rx_dropped tx_dropped; do
		echo "$3" >"$1/class/net/$2/statistics/$f"
	done
	echo up >"$1/class/net/$2/operstate"
	echo 1500 >"$1/class/net/$2/mtu"
}
