#!/bin/bash
# SPDX-License-Identifier: MIT
# The pressure collector against a reader nobody here wrote: node_exporter's
# pressure collector (node_pressure_*_seconds_total) reads the same
# /proc/pressure files; both are scraped one after the other and must agree
# to within the time between the reads. Then a procfs_root tree this test
# writes (the kernel's own format, Documentation/accounting/psi.rst): exact
# values, a file that goes bad (counted as skipped, the rest kept), and a
# tree without pressure/ (collector down with the reason, agent runs on).
. tests/lib.sh
[ -r /proc/pressure/cpu ] || skip "no /proc/pressure/cpu on this kernel (CONFIG_PSI or psi=0)"
NE=${NODE_EXPORTER:-/usr/bin/prometheus-node-exporter}
[ -x "$NE" ] || skip "no $NE (make deps)"

ne_port=$(free_port)
"$NE" --web.listen-address="127.0.0.1:$ne_port" --collector.disable-defaults \
	--collector.pressure >"$WORK/ne.log" 2>&1 &
ne_pid=$!
on_exit "kill -9 $ne_pid"
port=$(free_port)
start_agent "$port" --db "$WORK/p.db" --interval 200ms --collectors pressure
await_metric "$port" 'fabmon_collector_up{collector="pressure"}' 1 ||
	fail "pressure collector not up: $(cat "$WORK/agent.log")"
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$ne_port/metrics" >/dev/null && break; sleep 0.1; done

# node_exporter reads at scrape; fabmon at its last tick (200 ms): at most a
# tick and the scrapes apart, and a total grows at most a second a second
# per line ("some": one task waiting is enough)
for pair in "cpu_waiting cpu_waiting" "io_waiting io_waiting" "io_stalled io_stalled" \
	"memory_waiting memory_waiting" "memory_stalled memory_stalled"; do
	set -- $pair
	ne=$(curl -sf "http://127.0.0.1:$ne_port/metrics" | awk -v s="node_pressure_$1_seconds_total" '$1 == s { print $2 }')
	fm=$(metric "$port" "fabmon_pressure_$2_seconds_total")
	[ -n "$ne" ] || { echo "node_exporter has no node_pressure_$1_seconds_total: passed over"; continue; }
	[ -n "$fm" ] || fail "no fabmon_pressure_$2_seconds_total beside node_exporter's $ne"
	awk -v a="$ne" -v b="$fm" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1.5) }' ||
		fail "$2: node_exporter $ne s, fabmon $fm s"
	echo "pressure $2: node_exporter $ne s, fabmon $fm s"
done
kill -9 "$AGENT_PID"

# a tree of our own: exact values (microseconds to seconds)
root=$WORK/proc
mkdir -p "$root/pressure"
printf 'some avg10=1.50 avg60=0.80 avg300=0.20 total=2500000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=500000\n' >"$root/pressure/cpu"
printf 'some avg10=0.00 avg60=0.00 avg300=0.00 total=7\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=3\n' >"$root/pressure/io"
printf 'some avg10=0.00 avg60=0.00 avg300=0.00 total=garbage\n' >"$root/pressure/memory"
port=$(free_port)
start_agent "$port" --db "$WORK/q.db" --interval 200ms --collectors pressure --procfs-root "$root"
await_metric "$port" fabmon_pressure_cpu_waiting_seconds_total 2.5 || fail "cpu some: $(metric "$port" fabmon_pressure_cpu_waiting_seconds_total)"
[ "$(metric "$port" fabmon_pressure_cpu_stalled_seconds_total)" = 0.5 ] || fail "cpu full"
[ "$(metric "$port" fabmon_pressure_io_stalled_seconds_total)" = 3e-06 ] ||
	fail "io full: $(metric "$port" fabmon_pressure_io_stalled_seconds_total)"
[ -z "$(metric "$port" fabmon_pressure_memory_waiting_seconds_total)" ] || fail "garbage memory total exported"
skipped=$(metric "$port" 'fabmon_collector_skipped_values_total{collector="pressure"}')
[ "${skipped:-0}" != 0 ] || fail "the garbage file not counted as skipped"
kill -9 "$AGENT_PID"

# no pressure/ under the root: down with the reason, the agent runs on
port=$(free_port)
mkdir -p "$WORK/empty"
start_agent "$port" --db "$WORK/r.db" --interval 200ms --collectors netdev,pressure --procfs-root "$WORK/empty"
await_metric "$port" 'fabmon_collector_up{collector="pressure"}' 0 || fail "pressure up without a tree"
"$FABMON" doctor --collectors pressure --procfs-root "$WORK/empty" 2>&1 | grep -q 'CONFIG_PSI' ||
	fail "doctor does not say why: $("$FABMON" doctor --collectors pressure --procfs-root "$WORK/empty" 2>&1)"
echo "pressure: node_exporter agrees; a tree's values exact; garbage skipped; absent said"
