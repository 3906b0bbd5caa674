#!/bin/bash
# SPDX-License-Identifier: MIT
# fabmon export: the history an agent stored, as OpenMetrics that promtool
# turns into TSDB blocks, holds the same values as fabmon history (a gauge
# sample for sample; a counter as its totals, whose steps are history's
# rates), with the --label that joins it to the scraped series; bad input is
# refused with the reason and exit 2, a missing database with exit 1.
. tests/lib.sh
command -v promtool >/dev/null || skip "no promtool (make deps: prometheus)"
command -v jq >/dev/null || skip "no jq (make deps)"
port=$(free_port)
db=$WORK/a.db
start_agent "$port" --db "$db" --interval 1s --collectors netdev
sleep 5
kill "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null

"$FABMON" export --db "$db" --format openmetrics --since 10m --label instance=node1:9478 \
	--output "$WORK/om.txt" 2>"$WORK/err" || { cat "$WORK/err"; fail "fabmon export failed"; }
[ "$(tail -n 1 "$WORK/om.txt")" = "# EOF" ] || fail "no '# EOF' at the end"
grep -qx '# TYPE fabmon_ticks counter' "$WORK/om.txt" || fail "a counter's family keeps _total"
grep -qx '# TYPE fabmon_tick_duration_seconds gauge' "$WORK/om.txt" || fail "no gauge TYPE line"
grep -q '^fabmon_ticks_total{instance="node1:9478"} [0-9]* [0-9]*\.[0-9]\{3\}$' "$WORK/om.txt" ||
	fail "sample lines: $(grep -m1 '^fabmon_ticks_total' "$WORK/om.txt")"
promtool tsdb create-blocks-from openmetrics "$WORK/om.txt" "$WORK/tsdb" >"$WORK/blocks" 2>&1 ||
	{ cat "$WORK/blocks"; fail "promtool create-blocks-from openmetrics refused the export"; }
mkdir -p "$WORK/tsdb/wal" # promtool tsdb dump reads a WAL too
dump() { promtool tsdb dump --match="$1" "$WORK/tsdb" | awk '{ print $(NF-1) }'; }

# a gauge: every stored sample, in order, as fabmon history shows it per 1 s step
g=fabmon_tick_duration_seconds
want=$("$FABMON" history --db "$db" --since 10m --step 1s --agg last --json $g |
	jq -r '.points[][1]')
got=$(dump "$g{instance=\"node1:9478\"}")
[ -n "$want" ] || fail "fabmon history shows no $g"
# equal to a part in 10^9: history prints 13 digits, and rounding both to a
# fixed count of digits splits values that sit on a rounding tie
[ "$(echo "$got" | wc -l)" = "$(echo "$want" | wc -l)" ] &&
	paste <(echo "$got") <(echo "$want") | awk '{ d = $1 - $2; m = ($1 < 0 ? -$1 : $1) }
		(d < 0 ? -d : d) > 1e-9 * m + 1e-15 { bad = 1 } END { exit bad }' ||
	fail "$g in the TSDB: $(echo $got), fabmon history: $(echo $want)"
# a counter: its totals, one a tick, rising by 1 (fabmon history: rate 1/s)
ticks=$(dump 'fabmon_ticks_total{instance="node1:9478"}')
n=$(echo "$ticks" | wc -l)
[ "$n" -ge 4 ] || fail "fabmon_ticks_total: $n samples in the TSDB"
[ "$(echo "$ticks" | awk 'NR > 1 { print $1 - p } { p = $1 }' | sort -u)" = 1 ] ||
	fail "fabmon_ticks_total totals do not rise by one a tick: $(echo $ticks)"
rates=$("$FABMON" history --db "$db" --since 10m --step 1s --agg last --json fabmon_ticks_total |
	jq -c '[.points[][1] | . * 10 | round / 10] | unique')
[ "$rates" = "[1]" ] || fail "fabmon history's rate of fabmon_ticks_total: $rates"
echo "export: $n ticks and every $g sample in promtool's TSDB, as fabmon history shows them"

# one metric only; a stored label wins over --label
"$FABMON" export --db "$db" --format openmetrics --since 10m --metric fabmon_agent_info \
	--label host=other >"$WORK/one.txt" 2>/dev/null || fail "--metric"
[ "$(grep -c '^# TYPE' "$WORK/one.txt")" = 1 ] || fail "--metric exports other metrics"
grep -q 'host="other"' "$WORK/one.txt" && fail "--label overrode a stored label"

# errors: usage (2) with the reason, a missing database (1)
for args in "--since 10m" "--format json" "--format openmetrics --since yesterdayish" \
	"--format openmetrics --since now --until 1h" "--format openmetrics --label nokv" \
	"--format openmetrics --metric no_such_metric" "--format openmetrics extra"; do
	# shellcheck disable=SC2086 # args is a list
	"$FABMON" export --db "$db" $args >/dev/null 2>"$WORK/err"
	rc=$?
	[ $rc = 2 ] || fail "fabmon export $args: exit $rc, want 2"
	grep -q "^fabmon export: " "$WORK/err" || fail "fabmon export $args says: $(cat "$WORK/err")"
done
"$FABMON" export --db "$WORK/none.db" --format openmetrics >/dev/null 2>"$WORK/err"
[ $? = 1 ] || fail "a missing database: not exit 1"
grep -q "none.db" "$WORK/err" || fail "a missing database: $(cat "$WORK/err")"
"$FABMON" export --db "$db" --format openmetrics --output "$WORK/no/dir/f" 2>"$WORK/err"
[ $? = 1 ] || fail "an output that cannot be created: not exit 1"
"$FABMON" export --help | grep -q 'create-blocks-from openmetrics' || fail "--help"
echo "export: errors exit 2 (usage) and 1 (database, output) with the reason"
