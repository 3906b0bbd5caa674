#!/bin/bash
# SPDX-License-Identifier: MIT
# Scrapes beside API queries, on loopback. A database of 1000 series (50 a
# metric) over API_LOAD_TICKS seconds (default 3600: an hour of raw samples,
# the most a query reads before rollups, so that its scan outlasts a 100 ms
# budget several times on a quiet host too) written by the ingest bench
# tool; an agent reading it with the default api_concurrency and api_timeout:
#  - with api_timeout 100ms, a query_range of one metric's 50 series at 1 s
#    is a 503 whose JSON names api_timeout;
#  - a query_range over api_max_points is a 400 naming label (refused before
#    it reads a sample: its time is printed);
#  - API_LOAD_CLIENTS (default 8) clients each run that query_range back to
#    back for API_LOAD_SECS (default 10) while /metrics is scraped every
#    20 ms: every scrape is 200, every query a 200 or a 503 (with
#    Retry-After when the queue is full, or naming api_timeout).
# Prints the scrape p50/p99 idle and under the load, and the answers: the
# figure make bench's robustness block shows, not asserted.
. tests/lib.sh

for t in curl jq; do
	command -v $t >/dev/null || skip "$t not installed (make deps)"
done
BENCH_DIR=${BENCH_DIR:-$PWD/build/bench}
[ -x "$BENCH_DIR/ingest" ] || fail "no ingest in $BENCH_DIR (make $BENCH_DIR/ingest)"
TICKS=${API_LOAD_TICKS:-3600}
CLIENTS=${API_LOAD_CLIENTS:-8}
SECS=${API_LOAD_SECS:-10}
db=$WORK/load.db
"$BENCH_DIR/ingest" -d "$db" -s 1000 -t "$TICKS" -i 1000 -m typical >"$WORK/ingest.out" 2>&1 ||
	fail "ingest: $(tail -n 2 "$WORK/ingest.out")"
root=$WORK/sys
netdev_tree "$root" eth0 1
port=$(free_port)
# room for the load's query, 50 series x TICKS steps
max_points=$((50 * (TICKS + 2)))
start_agent "$port" --db "$db" --collectors netdev --sysfs-root "$root" \
	--api-max-points "$max_points"
url=http://127.0.0.1:$port
range="$url/api/v1/query_range?metric=fabmon_bench_c00_bytes_total&start=now-${TICKS}s&step=1s"

# scrapes N: N scrapes of /metrics 20 ms apart, "code seconds" a line
scrapes() {
	for _ in $(seq "$1"); do
		curl -s -o /dev/null -w '%{http_code} %{time_total}\n' --max-time 10 "$url/metrics"
		sleep 0.02
	done
}
# pcts FILE: "p50 p99 max" of the second column, in ms
pcts() {
	sort -k2 -g "$1" | awk '{ t[NR] = $2 * 1000 } END {
		printf "%.1f %.1f %.1f", t[int((NR + 1) / 2)], t[int(NR * 0.99 + 0.5)], t[NR] }'
}

# --- the budget: the same query with api_timeout 100ms on a second agent
# (on a copy: one agent writes a database)
cp "$db" "$WORK/budget.db"
port2=$(free_port)
"$FABMON" agent --listen "127.0.0.1:$port2" --db "$WORK/budget.db" --collectors netdev \
	--sysfs-root "$root" --api-max-points "$max_points" --api-timeout 100ms \
	>>"$WORK/agent2.log" 2>&1 &
pid2=$!
on_exit "kill -9 $pid2"
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$port2/readyz" >/dev/null 2>&1 && break
	sleep 0.1
done
read -r code secs <<<"$(curl -s -o "$WORK/t.json" -w '%{http_code} %{time_total}' --max-time 30 \
	"${range/$port/$port2}")"
[ "$code" = 503 ] && jq -e '.status == "error" and (.error | test("api_timeout"))' \
	"$WORK/t.json" >/dev/null || fail "with api_timeout 100ms: $code $(head -c 300 "$WORK/t.json")"
kill "$pid2"
read -r code full <<<"$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 30 "$range")"
[ "$code" = 200 ] || fail "the query with the default api_timeout: $code"
echo "query_range of 50 series x $TICKS steps: ${full} s; with api_timeout 100ms a 503 after ${secs} s"

# --- refused before it reads a sample
read -r code secs <<<"$(curl -s -o "$WORK/r.json" -w '%{http_code} %{time_total}' --max-time 30 \
	"${range/start=now-${TICKS}s/start=now-$((TICKS * 3))s}")"
[ "$code" = 400 ] && [ "$(jq -r .parameter "$WORK/r.json")" = label ] ||
	fail "a query over api_max_points: $code $(head -c 300 "$WORK/r.json")"
echo "a query_range over api_max_points: 400 after ${secs} s"

# --- scrapes idle, then beside the load
scrapes 100 >"$WORK/idle"
end=$(($(date +%s) + SECS))
clients=""
for i in $(seq "$CLIENTS"); do
	(
		while [ "$(date +%s)" -lt "$end" ]; do
			code=$(curl -s -D "$WORK/h$i" -o "$WORK/q$i.json" -w '%{http_code}' \
				--max-time 30 "$range")
			if [ "$code" != 503 ]; then
				echo "$code"
			elif grep -qi '^retry-after:' "$WORK/h$i"; then
				echo 503-busy
			elif grep -q api_timeout "$WORK/q$i.json"; then
				echo 503-timeout
			else
				echo 503-other
			fi
		done >"$WORK/load$i"
	) &
	clients="$clients $!"
	on_exit "kill $!"
done
sleep 1
scrapes $(((SECS - 2) * 1000 / 40)) >"$WORK/loaded"
# shellcheck disable=SC2086 # a list of pids
wait $clients
read -r i50 i99 imax <<<"$(pcts "$WORK/idle")"
read -r l50 l99 lmax <<<"$(pcts "$WORK/loaded")"
answers=$(cat "$WORK"/load[0-9]* | sort | uniq -c | awk '{ printf "%s%s %s", s, $2, $1; s = ", " }')
echo "API load: $CLIENTS clients, that query_range back to back for $SECS s: $answers"
echo "scrape latency (ms): idle p50 $i50 p99 $i99 max $imax;" \
	"under API load p50 $l50 p99 $l99 max $lmax ($(wc -l <"$WORK/loaded") scrapes)"
bad=$(awk '$1 != 200' "$WORK/idle" "$WORK/loaded" | sort | uniq -c)
[ -z "$bad" ] || fail "scrapes not 200: $bad"
other=$(cat "$WORK"/load[0-9]* | grep -v '^200$\|^503-busy$\|^503-timeout$' | sort | uniq -c)
[ -z "$other" ] || fail "API answers other than 200 or 503: $other"
kill -0 "$AGENT_PID" || fail "agent died"
exit 0
