#!/bin/bash
# SPDX-License-Identifier: MIT
# fabmon history, top and snapshot. A pcapgen capture replayed into a
# database holds known series: 1000 packets a second, 4 queue pairs, every
# 10th of queue pair 3's marked CE, so the CE rate towards 198.18.0.6 is 25/s
# and towards the others 0, and one incast on it. history must show those
# rates per step with each aggregation, top must rank that peer first, and a
# snapshot taken while an agent writes must pass integrity_check and hold
# every tick up to its own last one.
. tests/lib.sh
command -v sqlite3 >/dev/null || skip "no sqlite3 (make deps)"
command -v jq >/dev/null || skip "no jq (make deps)"
LAB_BIN=${LAB_BIN:-$PWD/build/lab}
[ -x "$LAB_BIN/pcapgen" ] || fail "no pcapgen in $LAB_BIN"
db=$WORK/r.db
"$LAB_BIN/pcapgen" --output "$WORK/c.pcap" --packets 8000 --qps 4 --time-step 1000 \
	--ce-every 10 --ce-qp 3 >/dev/null || fail "pcapgen failed"
"$FABMON" replay --db "$db" "$WORK/c.pcap" >"$WORK/replay.out" 2>&1 ||
	{ cat "$WORK/replay.out"; fail "fabmon replay --db failed"; }
W="--db $db --since 1700000000 --until 1700000010"
ce=fabmon_roce_ecn_ce_packets_total

# 1. history: per-second CE rates towards the marked peer, per step
# shellcheck disable=SC2086 # W is a list of arguments
hist() { "$FABMON" history $W "$@"; }
pts=$(hist --json --step 1s --label peer=198.18.0.6 $ce | jq -c '[.points[] | .[1]]')
# ticks at 1 s boundaries: the first has no rate yet, the last takes the tail
inner=$(echo "$pts" | jq -c '.[1:-1] | unique')
[ "$inner" = "[25]" ] || fail "CE rate towards 198.18.0.6 per 1 s step: $pts, want 25 inside"
[ "$(hist --json --step 1s --label peer=198.18.0.2 $ce | jq -c '[.points[] | .[1]] | unique')" = "[0]" ] ||
	fail "CE towards an unmarked peer is not 0"
for agg in avg max min last; do
	v=$(hist --json --step 2s --agg $agg --label peer=198.18.0.6 $ce | jq '.points[1][1]')
	[ "$v" = 25 ] || fail "--agg $agg over a full 2 s step: $v, want 25"
done
[ "$(hist --json $ce | grep -c '^{')" = 4 ] || fail "the 4 receivers' series: $(hist --json $ce | grep -c '^{')"
[ "$(hist --json --label peer=198.18.0.6 --label source=pcap $ce | grep -c '^{')" = 1 ] ||
	fail "two --label filters"
[ "$(hist --json --label peer=198.18.0.6 --label source=bpf $ce | grep -c '^{')" = 0 ] ||
	fail "a --label no series has"
csv=$(hist --csv --step 1s --label peer=198.18.0.6 $ce)
[ "$(echo "$csv" | head -n 1)" = "time,labels,value" ] || fail "CSV header: $csv"
echo "$csv" | grep -q '^2023-11-14T22:13:23.000Z,"interface=""capture"",peer=""198.18.0.6"",source=""pcap""",25$' ||
	fail "CSV rows: $csv"
TZ=Asia/Tokyo hist --label peer=198.18.0.6 --step 1s $ce | grep -q '2023-11-15 07:13:23.000 JST  25' ||
	fail "table in local time: $(TZ=Asia/Tokyo hist --label peer=198.18.0.6 --step 1s $ce)"
echo "history: CE rate towards 198.18.0.6 per second $pts; avg, max, min, last; filters, CSV, local time"

# 1-minute rollups: three minutes of the same traffic; a step of whole
# minutes reads the rollups (60 ticks a minute, each 25/s), another step the
# packed samples, and both agree
"$LAB_BIN/pcapgen" --output "$WORK/long.pcap" --packets 200000 --qps 4 --time-step 1000 \
	--ce-every 10 --ce-qp 3 >/dev/null || fail "pcapgen (200 s)"
"$FABMON" replay --db "$WORK/long.db" "$WORK/long.pcap" >/dev/null 2>&1 || fail "replay (200 s)"
# 22:14:00 and 22:15:00 UTC, the two whole minutes of the capture
M="--db $WORK/long.db --since 1700000040 --until 1700000159 --label peer=198.18.0.6"
# shellcheck disable=SC2086
for agg in avg:25 max:25 min:25 last:25 count:60; do
	got=$("$FABMON" history $M --step 1m --agg "${agg%:*}" --json $ce | jq -c '[.points[][1]]')
	[ "$got" = "[${agg#*:},${agg#*:}]" ] || fail "rollups, --agg ${agg%:*}: $got"
	# 30 s steps are not whole minutes: the packed samples
	raw=$("$FABMON" history $M --step 30s --agg "${agg%:*}" --json $ce |
		jq -c 'if .agg == "count" then [[.points[][1]] | add / 2] else [.points[][1]] | unique end')
	[ "$raw" = "[${agg#*:}]" ] || fail "raw samples, --agg ${agg%:*}: $raw, rollups $got"
done
[ "$(sqlite3 "$WORK/long.db" 'SELECT count(*) > 0 FROM rollups')" = 1 ] || fail "no rollup rows"
echo "rollups: two whole minutes of 60 ticks at 25/s, avg max min last count, the same from raw samples"

# history's errors: unknown metric, too many series, bad step or agg: exit 2
for args in "no_such_metric" "--step 0s $ce" "--step x $ce" \
	"--agg median $ce" "--label peer $ce" "--since 1700000000 --until 1700001000 --step 1ms $ce"; do
	# shellcheck disable=SC2086
	"$FABMON" history --db "$db" $args >"$WORK/out" 2>"$WORK/err"
	rc=$?
	[ $rc = 2 ] || fail "fabmon history $args: exit $rc, want 2"
done
# over 64 series (40 receivers, 9 classes each): exit 2, saying how to narrow it
"$LAB_BIN/pcapgen" --output "$WORK/many.pcap" --packets 400 --qps 40 >/dev/null &&
	"$FABMON" replay --db "$WORK/many.db" "$WORK/many.pcap" >/dev/null 2>&1 ||
	fail "the 40-queue-pair capture"
"$FABMON" history --db "$WORK/many.db" --since 1699999999 --until 1700000001 \
	fabmon_roce_packets_total >"$WORK/out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q -- '--label' "$WORK/out" ||
	fail "over 64 series: exit $rc, $(cat "$WORK/out")"

# the same over HTTP: /api/v1/series and /api/v1/query_range from an agent
# (100 values at most an answer) whose database holds the same capture
# replayed as if taken 10 minutes ago: the agent prunes samples older than
# its retention, and 2023 is
t0=$(($(date +%s) - 600))
"$LAB_BIN/pcapgen" --output "$WORK/recent.pcap" --packets 8000 --qps 4 --time-step 1000 \
	--ce-every 10 --ce-qp 3 --time-start $t0 >/dev/null &&
	"$FABMON" replay --db "$WORK/api.db" "$WORK/recent.pcap" >/dev/null 2>&1 ||
	fail "replaying the recent capture"
api_root=$WORK/api_sys
netdev_tree "$api_root" eth0 1
port=$(free_port)
start_agent "$port" --db "$WORK/api.db" --interval 100ms --collectors netdev \
	--sysfs-root "$api_root" --api-max-points 100
api() { curl -s -o "$WORK/api.json" -w '%{http_code}' "http://127.0.0.1:$port/api/v1/$1"; }
[ "$(api "series?match=$ce")" = 200 ] && [ "$(jq '.data | length' "$WORK/api.json")" = 4 ] ||
	fail "GET series: $(cat "$WORK/api.json")"
[ "$(api "series?match=$ce&label=peer=198.18.0.6")" = 200 ] &&
	[ "$(jq -r '.data[0].type' "$WORK/api.json")" = counter ] || fail "GET series with a label"
range="query_range?metric=$ce&label=peer=198.18.0.6&start=$t0&end=$((t0 + 10))&step=1s"
[ "$(api "$range")" = 200 ] || fail "GET $range: $(cat "$WORK/api.json")"
want=$("$FABMON" history --db "$WORK/api.db" --since $t0 --until $((t0 + 10)) --json --step 1s \
	--label peer=198.18.0.6 $ce | jq -c .)
[ "$(jq -c '.data[0]' "$WORK/api.json")" = "$want" ] &&
	[ "$(jq -c '[.data[0].points[1:-1][][1]] | unique' "$WORK/api.json")" = "[25]" ] ||
	fail "query_range: $(cat "$WORK/api.json"), fabmon history: $want"
# the event with its subject's samples from a minute before to a minute
# after, within the answer's 100 values: CE towards the receiver at 25/s
[ "$(api events/1)" = 200 ] || fail "GET events/1: $(cat "$WORK/api.json")"
ce_pts=$(jq -c '[.data.samples[] | select(.metric == "fabmon_roce_ecn_ce_packets_total")
	| .points[][1]] | unique' "$WORK/api.json")
n_pts=$(jq '[.data.samples[].points[]] | length' "$WORK/api.json")
[ "$(jq -r .data.subject "$WORK/api.json")" = peer=198.18.0.6 ] && [ "$ce_pts" = "[25]" ] &&
	[ "$n_pts" -le 100 ] || fail "GET events/1 samples: CE $ce_pts, $n_pts points"
for q in "query_range?start=1700000000&step=1s metric" \
	"query_range?metric=$ce&start=1700000000&end=1700000010 step" \
	"query_range?metric=$ce&start=1700000000&end=1700000010&step=10ms step" \
	"query_range?metric=$ce&step=1s&agg=p99 agg" \
	"query_range?metric=$ce&step=1s&start=1700000010&end=1700000000 end" \
	"query_range?metric=nope&step=1s&start=$t0&end=$((t0 + 10)) metric" \
	"query_range?metric=$ce&step=1s&label=peer label" \
	"query_range?metric=fabmon_roce_packets_total&start=$t0&end=$((t0 + 10))&step=1s label" \
	"query_range?metric=$ce&step=1s&limit=5 limit" \
	"series?match=$ce&step=1s step"; do
	set -- $q
	code=$(api "$1")
	[ "$code" = 400 ] && [ "$(jq -r .parameter "$WORK/api.json")" = "$2" ] ||
		fail "GET $1: $code $(cat "$WORK/api.json"), want 400 naming $2"
done
echo "HTTP: /api/v1/series and /api/v1/query_range answer as fabmon history; /api/v1/events/1 carries its samples ($n_pts points); 400s name the parameter"

# 2. top: the incast receiver first, no link
top=$("$FABMON" top $W --json)
[ "$(echo "$top" | jq -r 'select(.rank == 1) | .subject + " " + .kinds')" = "peer=198.18.0.6 incast" ] ||
	fail "top: $top"
[ "$("$FABMON" top $W --by link --json | grep -c '^{')" = 0 ] || fail "top --by link lists a peer"
[ "$("$FABMON" top $W --by peer --json | grep -c '^{')" = 1 ] || fail "top --by peer"
"$FABMON" top $W --by port >/dev/null 2>&1 && fail "top --by port accepted"
echo "top:"
"$FABMON" top $W | sed 's/^/  /'

# 3. snapshot while an agent writes its database every 100 ms
root=$WORK/sys
netdev_tree "$root" eth0 1
port=$(free_port)
start_agent "$port" --db "$WORK/live.db" --interval 100ms --collectors netdev --sysfs-root "$root"
sleep 1
"$FABMON" snapshot --db "$WORK/live.db" "$WORK/snap.db" || fail "snapshot while the agent writes"
[ "$(sqlite3 "$WORK/snap.db" 'PRAGMA integrity_check')" = ok ] || fail "snapshot integrity_check"
last=$(sqlite3 "$WORK/snap.db" 'SELECT max(ts_ms) FROM ticks')
want=$(sqlite3 "$WORK/live.db" "SELECT count(*) FROM ticks WHERE ts_ms <= $last")
got=$(sqlite3 "$WORK/snap.db" 'SELECT count(*) FROM ticks')
[ -n "$last" ] && [ "$got" = "$want" ] && [ "$got" -ge 5 ] ||
	fail "snapshot holds $got ticks, the source $want up to its last ($last)"
samples=$(stored_count "$WORK/snap.db" fabmon_collector_up --label collector=netdev)
[ "$samples" = "$got" ] || fail "snapshot: $samples samples of a series every tick has, $got ticks"
"$FABMON" events --db "$WORK/snap.db" >/dev/null || fail "fabmon events on the snapshot"
echo "snapshot while the agent wrote: integrity ok, $got ticks ($samples samples), all up to its last"
# --since keeps the window only; existing or missing files
"$FABMON" snapshot --db "$db" --since 1700000005 "$WORK/trim.db" || fail "snapshot --since"
[ "$(sqlite3 "$WORK/trim.db" 'SELECT min(ts_ms) >= 1700000005000 FROM ticks')" = 1 ] ||
	fail "snapshot --since kept older ticks"
[ "$(sqlite3 "$WORK/trim.db" 'SELECT count(*) FROM blocks WHERE end_ms < 1700000005000')" = 0 ] ||
	fail "snapshot --since kept older samples"
"$FABMON" snapshot --db "$db" "$WORK/snap.db" 2>/dev/null
[ $? = 2 ] || fail "snapshot over an existing file: want exit 2"
"$FABMON" snapshot --db "$WORK/missing.db" "$WORK/new.db" 2>/dev/null
[ $? = 1 ] || fail "snapshot of a missing database: want exit 1"
[ ! -e "$WORK/new.db" ] || fail "a failed snapshot left a file"
echo "snapshot --since trims; an existing OUT is refused (exit 2); a missing source leaves nothing (exit 1)"
exit 0
