#!/bin/bash
# SPDX-License-Identifier: MIT
# fabmon's Prometheus rules (dashboards/prometheus/) as Prometheus takes them:
# `promtool check rules` on every rules file; `promtool test rules` on every
# test file; every alert has summary and description annotations, a
# severity, a unit test in which it fires, and a runbook in
# docs/operations.md (a "#### AlertName" section); the
# scrape config examples in packaging/prometheus/ pass `promtool check
# config` with the rules loaded, and the file_sd target file is what
# Prometheus reads; the rules' bound for a silent kernel is the agent's.
. tests/lib.sh
command -v promtool >/dev/null || fail "promtool missing (make deps installs prometheus)"
command -v jq >/dev/null || fail "jq missing (make deps)"
dir=dashboards/prometheus

for f in "$dir"/*.rules.yml; do
	out=$(promtool check rules "$f" 2>&1) || fail "$f: $out"
	echo "$out" | grep -q 'SUCCESS' || fail "$f: $out"
	echo "$out" | grep -qi 'warn' && fail "$f: $out"
done
echo "promtool check rules: $(grep -h '^ *- \(record\|alert\):' "$dir"/*.rules.yml | wc -l) rules in $(ls "$dir"/*.rules.yml | wc -l) files"

for f in "$dir"/*.test.yml; do
	out=$(cd "$dir" && promtool test rules "$(basename "$f")" 2>&1) || fail "$f: $out"
done
echo "promtool test rules: $(ls "$dir"/*.test.yml | wc -l) files pass"

# the rules' silent kernel is the agent's and locate's (a header cannot be
# included in YAML: the value is compared)
knock=$(awk '$2 == "MESH_KNOCK_TIMEOUT_S" { print $3 }' collector/mesh/mesh_knock.h)
[ -n "$knock" ] || fail "MESH_KNOCK_TIMEOUT_S not found in collector/mesh/mesh_knock.h"
grep -q "fabmon_mesh_kernel_silent_seconds{job=\"fabmon\"} >= $knock\$" "$dir"/fabmon-cluster.rules.yml ||
	fail "fabmon-cluster.rules.yml: a kernel silent for $knock s (MESH_KNOCK_TIMEOUT_S) is not the rules' bound"

# each alert: annotations, severity, a test where it fires, a runbook
alerts=$(grep -h '^ *- alert:' "$dir"/*.rules.yml | sed 's/.*alert: *//')
[ -n "$alerts" ] || fail "no alerts found"
for a in $alerts; do
	# the rule's own lines: from its "- alert:" to the next rule
	body=$(awk -v a="$a" '/^ *- (alert|record):/ { on = ($0 ~ "alert: *" a "$") } on' "$dir"/*.rules.yml)
	for k in summary: description: severity: 'for:'; do
		echo "$body" | grep -q "^ *$k" || fail "alert $a has no $k"
	done
	# a test of it that expects it firing (exp_labels naming it follow)
	awk -v a="$a" '/alertname:/ { on = ($0 ~ "alertname: *" a "$") } on && /exp_labels:/ { found = 1 }
		END { exit !found }' "$dir"/*.test.yml || fail "alert $a: no promtool test in which it fires"
	grep -q "^#### $a\$" docs/operations.md || fail "alert $a: no runbook (#### $a) in docs/operations.md"
done
echo "alerts: $(echo $alerts | wc -w), each with annotations, severity, a firing unit test and a runbook"

# scrape config examples: full check, the rule files pointed at this tree
for f in packaging/prometheus/prometheus-*.yml; do
	sed "s|/usr/local/share/fabmon/prometheus/|$PWD/$dir/|" "$f" >"$WORK/$(basename "$f")"
	out=$(promtool check config "$WORK/$(basename "$f")" 2>&1) || fail "$f: $out"
	echo "$out" | grep -q 'SUCCESS: 2 rule files found' || fail "$f: rules not loaded: $out"
done
jq -e 'type == "array" and length > 0 and all(.[]; (.targets | type) == "array"
	and all(.targets[]; test("^[^:]+:9478$")) and (.labels | type) == "object")' \
	packaging/prometheus/fabmon-targets.json >/dev/null ||
	fail "packaging/prometheus/fabmon-targets.json: not a file_sd target list of :9478 targets"
echo "scrape config examples: $(ls packaging/prometheus/prometheus-*.yml | wc -l) pass promtool check config"
exit 0
