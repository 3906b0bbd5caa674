#!/bin/bash
# SPDX-License-Identifier: MIT
# locate and the cluster rules at scale, by simulation: a synthetic fabric
# of BENCH_LOCATE_NODES nodes (default 2000; 32 a leaf, 8 spines, each node
# probing 4 peers over 2 flows) written by synth_fabric.py as OpenMetrics —
# a clean window, then loss on one spine-leaf link — loaded with promtool
# tsdb create-blocks-from openmetrics into a Prometheus on loopback. Prints
# the sizes, the time to generate and load, each cluster rule's evaluation
# time at the fault (a query of its expression), and `fabmon locate`'s time
# and top-1 over both windows, beside the goal (2 s, the right link).
# Exits non-zero only when a figure could not be taken.
. tests/lib.sh
FABMON=${FABMON:-$PWD/build/fabmon}
nodes=${BENCH_LOCATE_NODES:-2000}
window=300
command -v prometheus >/dev/null && command -v promtool >/dev/null || skip "no prometheus (make deps)"
ms() { date +%s%3N; }

start=$(($(date +%s) / 60 * 60 - 2 * window - 120))
t=$(ms)
python3 tests/bench/synth_fabric.py --nodes "$nodes" --per-leaf 32 --spines 8 --peers 4 --flows 2 \
	--start $start --window $window --interval 15 --faults clean,link \
	>"$WORK/om.txt" 2>"$WORK/culprits" || fail "synth_fabric.py failed"
gen=$(($(ms) - t))
t=$(ms)
promtool tsdb create-blocks-from openmetrics "$WORK/om.txt" "$WORK/tsdb" >"$WORK/blocks" 2>&1 ||
	{ tail -n 5 "$WORK/blocks"; fail "promtool create-blocks-from openmetrics failed"; }
load=$(($(ms) - t))
# BLOCK ULID, MIN TIME, MAX TIME, DURATION, NUM SAMPLES, CHUNKS, SERIES, SIZE
series=$(awk 'NR > 1 && NF >= 8 { s += $(NF-1) } END { print s }' "$WORK/blocks")
samples=$(awk 'NR > 1 && NF >= 8 { s += $(NF-3) } END { print s }' "$WORK/blocks")
echo "  $nodes nodes: $(wc -l <"$WORK/om.txt") OpenMetrics lines ($(du -m "$WORK/om.txt" | cut -f1) MB)" \
	"written in $gen ms; promtool made blocks of $series series, $samples samples in $load ms"
rm -f "$WORK/om.txt"

port=$(free_port)
printf 'global:\n  scrape_interval: 15s\n' >"$WORK/prometheus.yml"
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
	--web.listen-address="127.0.0.1:$port" --log.level=warn >"$WORK/prometheus.log" 2>&1 &
prom=$!
on_exit "kill $prom"
url=http://127.0.0.1:$port
for _ in $(seq 240); do
	curl -sf "$url/-/ready" >/dev/null 2>&1 && break
	kill -0 $prom 2>/dev/null || { cat "$WORK/prometheus.log"; fail "prometheus exited"; }
	sleep 0.25
done
curl -sf "$url/-/ready" >/dev/null || fail "prometheus not ready"

read -r _ _ hi _ < <(sed -n 2p "$WORK/culprits")
# each recording rule's expression at the fault's end, as Prometheus
# evaluates it (its stats: the query's own evaluation time); the alerts
# compare the recorded series with a bound, which costs next to nothing
tail -n +1 dashboards/prometheus/fabmon-cluster.rules.yml | python3 -c '
import sys, yaml
for g in yaml.safe_load(sys.stdin)["groups"]:
    for r in g["rules"]:
        if "record" in r:
            print(r["record"] + "\t" + " ".join(r["expr"].split()))
' >"$WORK/rules.tsv" || fail "unable to read the cluster rules"
while IFS=$'\t' read -r name expr; do
	curl -sf --data-urlencode "query=$expr" --data-urlencode "time=$((hi - 1))" \
		--data-urlencode "stats=all" "$url/api/v1/query" >"$WORK/q.json" || fail "query of $name"
	printf '  rule %-50s %6.1f ms evaluation, %s series out\n' "$name" \
		"$(jq '.data.stats.timings.evalTotalTime * 1000' "$WORK/q.json")" "$(jq '.data.result | length' "$WORK/q.json")"
done <"$WORK/rules.tsv"

while read -r _ lo hi kind culprit; do
	t=$(ms)
	"$FABMON" locate --prometheus "$url" --since $((lo + 30)) --until $((hi - 1)) --json \
		>"$WORK/$kind.json" 2>"$WORK/err" || fail "locate ($kind): $(cat "$WORK/err")"
	took=$(($(ms) - t))
	top=$(jq -r '.suspects[0] // {} | "\(.kind) \(.suspect)"' "$WORK/$kind.json")
	n=$(jq '.suspects | length' "$WORK/$kind.json")
	if [ "$kind" = clean ]; then
		verdict=$([ "$n" = 0 ] && echo "right: nobody" || echo "WRONG: $n suspects")
	else
		verdict=$([ "$top" = "link $culprit" ] && echo "right: link $culprit" ||
			echo "WRONG: $top, want link $culprit")
	fi
	goal=$([ $took -le 2000 ] && echo met || echo "not met")
	echo "  locate, $kind window: $took ms (goal <= 2000 ms: $goal), $(jq .queries "$WORK/$kind.json")" \
		"queries, $(jq .nodes "$WORK/$kind.json") nodes, $n suspects; top-1 $verdict"
done <"$WORK/culprits"
