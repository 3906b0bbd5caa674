#!/bin/bash
# SPDX-License-Identifier: MIT
# The Grafana dashboards (dashboards/grafana/*.json) as Grafana and
# Prometheus will take them:
# - each is valid JSON with what Grafana needs (uid, title, schemaVersion,
#   panels with unique ids, a type, a grid position inside 24 columns and
#   targets with refIds), its uid stable (the file's name, one of the five
#   known ones), the Prometheus datasource variable on every panel, and the
#   node and interface template variables;
# - every panel, variable and annotation expression parses: they become a
#   rules file (Grafana's variables replaced) that `promtool check rules`
#   must pass;
# - every metric a panel, variable, annotation or rule names exists in the
#   agent's catalogue: the golden files, a live /metrics with every
#   collector up (as t_promtool.sh starts it, plus a mirror capture of
#   RoCEv2), and, for what only hardware or a running detector shows (PFC
#   ethtool stats, LLDP neighbours, open events), the metric names in the
#   agent's sources; and every label a selector matches on is one that
#   metric carries. A renamed metric or label fails here, not in Grafana.
. tests/lib.sh
command -v promtool >/dev/null || fail "promtool missing (make deps installs prometheus)"
command -v jq >/dev/null || fail "jq missing (make deps)"

dash=dashboards/grafana
rules=dashboards/prometheus
want_uids="fabmon-collectives fabmon-fabric-overview fabmon-fabric-suspects fabmon-incident-timeline fabmon-node-detail"

# 1. Grafana's fields, uids, variables
uids=""
for f in "$dash"/*.json; do
	jq empty "$f" 2>"$WORK/jq.err" || fail "$f: not JSON: $(cat "$WORK/jq.err")"
	uid=$(jq -r '.uid // empty' "$f")
	[ "$uid" = "$(basename "$f" .json)" ] || fail "$f: uid '$uid' is not the file's name"
	uids="$uids $uid"
	bad=$(jq -r '
		def panels: .panels[]? | (., (.panels[]?));
		[ (if (.title | type) != "string" or .title == "" then "no title" else empty end),
		  (if (.schemaVersion | type) != "number" then "no schemaVersion" else empty end),
		  (if (.panels | type) != "array" or (.panels | length) == 0 then "no panels" else empty end),
		  (if (.templating.list | type) != "array" then "no templating.list" else empty end),
		  ([panels | .id] | if length != (unique | length) then "panel ids not unique" else empty end),
		  (panels | select((.id | type) != "number") | "panel \(.title): no numeric id"),
		  (panels | select((.type | type) != "string") | "panel \(.title): no type"),
		  (panels | select((.title | type) != "string" or .title == "") | "panel \(.id): no title"),
		  (panels | select([.gridPos.h, .gridPos.w, .gridPos.x, .gridPos.y] | map(type) != ["number", "number", "number", "number"])
			| "panel \(.title): no gridPos"),
		  (panels | select(.gridPos.x + .gridPos.w > 24) | "panel \(.title): wider than 24 columns"),
		  (panels | select(.type != "row") | select(.datasource.uid != "${datasource}")
			| "panel \(.title): datasource is not the $datasource variable"),
		  (panels | select(.type != "row") | select((.targets | length) == 0) | "panel \(.title): no targets"),
		  (panels | select(.type != "row") | select([.targets[].refId] | length != (unique | length))
			| "panel \(.title): refIds not unique"),
		  (panels | select(.type != "row") | .targets[] | select((.expr // "") == "" or .datasource.uid != "${datasource}")
			| "a target without expr or datasource"),
		  (.templating.list | map(select(.name == "datasource" and .type == "datasource" and .query == "prometheus"))
			| if length != 1 then "no datasource variable (type datasource, query prometheus)" else empty end),
		  (.templating.list | map(select(.name == "node" and .type == "query"
			and (.query.query // .query | test("^label_values\\(.*, *instance\\)$")))) | if length != 1 then "no node variable over instance" else empty end),
		  (.templating.list | map(select(.name == "interface" and .type == "query"
			and (.query.query // .query | test("^label_values\\(.*, *interface\\)$")))) | if length != 1 then "no interface variable" else empty end),
		  (.templating.list[] | select(.type == "query" and .datasource.uid != "${datasource}")
			| "variable \(.name): datasource is not $datasource")
		] | .[]' "$f")
	[ -z "$bad" ] || fail "$f: $(echo "$bad" | head -5 | tr '\n' ';')"
done
[ "$(echo $uids | tr ' ' '\n' | sort | tr '\n' ' ')" = "$want_uids " ] ||
	fail "dashboard uids changed: got '$uids', want '$want_uids' (a uid is what links and bookmarks keep)"
npanels=$(jq -s '[.[] | .panels[]? | (., .panels[]?) | select(.type != "row")] | length' "$dash"/*.json)
echo "grafana fields: $(echo $uids | wc -w) dashboards, $npanels panels, uids stable, variables present"

# 2. every expression parses: panels, query variables, annotations, with
# Grafana's variables replaced ($__rate_interval and friends by a duration,
# the others by a regex that matches anything)
jq -s '
	def exprs: .panels[]? | (., .panels[]?) | .targets[]? | .expr // empty;
	def varexprs: .templating.list[] | select(.type == "query") | (.query.query // .query)
		| if test("^label_values\\(") then capture("^label_values\\((?<m>.*),[^,]*\\)$").m
		  elif test("^query_result\\(") then capture("^query_result\\((?<m>.*)\\)$").m
		  else . end;
	def annexprs: .annotations.list[] | .expr // empty;
	[ .[] | exprs, varexprs, annexprs ]
	| map(gsub("\\$\\{?__(rate_interval|interval|range)\\}?"; "1m")
	      | gsub("\\$\\{?[A-Za-z_][A-Za-z0-9_]*(:[a-z]+)?\\}?"; ".*"))
	| { groups: [ { name: "dashboards",
		rules: to_entries | map({ record: "dashboard:expr_\(.key):check", expr: .value }) } ] }
	' "$dash"/*.json >"$WORK/dash.rules.json" || fail "unable to collect the dashboards' expressions"
n=$(jq '.groups[0].rules | length' "$WORK/dash.rules.json")
out=$(promtool check rules "$WORK/dash.rules.json" 2>&1) || fail "dashboard expressions: $out"
echo "promtool check rules: $n dashboard expressions parse"

# the rules files' expressions, from their YAML: `expr: ONE LINE` or
# `expr: |` (or >) followed by the lines indented deeper
for f in "$rules"/*.rules.yml; do
	awk '
		blk && (NF == 0 || match($0, /^ */) && RLENGTH > ind) { print; next }
		blk { blk = 0; print "" }
		/^ *expr: *[|>]-? *$/ { blk = 1; match($0, /^ */); ind = RLENGTH; next }
		/^ *expr: / { sub(/^ *expr: */, ""); print; print "" }
		END { if (blk) print "" }' "$f"
done >"$WORK/rule.exprs"
jq -r '.groups[0].rules[].expr' "$WORK/dash.rules.json" >>"$WORK/rule.exprs"
recorded=$(grep -ho '^ *- record: *[^ ]*' "$rules"/*.rules.yml | sed 's/.*record: *//')

# 3. the catalogue: golden files, a live /metrics, the sources' names
cat tests/fixtures/golden/*.prom >"$WORK/catalogue.prom"
if [ "$(id -u)" = 0 ]; then
	. tests/lab/lab.sh
	lab_up 2
	root=$WORK/sys
	lab_sysfs "$root"
	lab_agent 1 --db "$WORK/p.db" --interval 200ms --sysfs-root "$root" \
		--collectors netdev,ethtool,rdma,qdisc,pressure,bpf,pcap \
		--ethtool-include 'peer_ifindex' --pcap-interfaces eth0
	# a tbf for fabmon_qdisc_rate_bytes (1 Gbit/s: no bound on these few packets)
	lab_exec 1 tc qdisc replace dev eth0 root tbf rate 1gbit burst 64kb latency 50ms ||
		fail "unable to add a tbf on rank 1"
	lab_exec 2 ping -c 2 -i 0.2 198.18.0.1 >/dev/null
	lab_exec 2 "${LAB_BIN:-$PWD/build/lab}/roce_gen" 198.18.0.1 200 50 >/dev/null ||
		fail "roce_gen failed"
	sleep 0.6
	lab_scrape >"$WORK/live.prom" || fail "scrape failed"
	for c in netdev ethtool rdma qdisc bpf pcap; do
		grep -q "^fabmon_collector_up{collector=\"$c\"} 1$" "$WORK/live.prom" ||
			{ cat "$WORK/agent.log"; fail "collector $c not up"; }
	done
	cat "$WORK/live.prom" >>"$WORK/catalogue.prom"
	live="a live /metrics ($(grep -vc '^#' "$WORK/live.prom") series, 6 collectors)"
else
	live="no live /metrics (not root: namespaces needed)"
fi
# "name label label ..." a series, from the exposition text
grep -v '^#' "$WORK/catalogue.prom" | perl -ne '
	next unless /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? /;
	my ($n, $l) = ($1, $2 // ""); $l =~ s/"(?:[^"\\]|\\.)*"//g;
	print join(" ", $n, $l =~ /(\w+)=/g), "\n";' | sort -u >"$WORK/catalogue.labels"
cut -d' ' -f1 "$WORK/catalogue.labels" | sort -u >"$WORK/catalogue.names"
grep -rhoI --include='*.[ch]' '"fabmon_[a-z0-9_]*[a-z0-9]"' agent collector | tr -d '"' | sort -u >"$WORK/source.names"

# names a selector uses (outside strings, ranges, matchers and grouping
# clauses; not functions or keywords), and "name label" for each matcher
perl -ne '
	my $e = $_;
	while ($e =~ /(?<![\w:.])([a-zA-Z_:][\w:]*)\s*\{([^}]*)\}/g) {
		my ($n, $m) = ($1, $2); $m =~ s/"(?:[^"\\]|\\.)*"//g;
		print "L $n $_\n" for $m =~ /(\w+)\s*(?:=~|!~|!=|=)/g;
	}
	$e =~ s/"(?:[^"\\]|\\.)*"//g; $e =~ s/\x27(?:[^\x27\\]|\\.)*\x27//g;
	$e =~ s/\[[^\]]*\]//g; $e =~ s/\{[^}]*\}//g;
	$e =~ s/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)//g;
	$e =~ s/\boffset\s+-?\w+//g;
	while ($e =~ /(?<![\w:.])([a-zA-Z_:][\w:]*)(\s*\()?/g) {
		next if $2;
		next if $1 =~ /^(?:by|without|on|ignoring|group_left|group_right|bool|and|or|unless|offset|inf|nan)$/i;
		print "N $1\n";
	}' "$WORK/rule.exprs" | sort -u >"$WORK/used"

synthetic="up scrape_duration_seconds scrape_samples_scraped ALERTS ALERTS_FOR_STATE"
missing="" srconly="" nused=0
for m in $(awk '$1 == "N" { print $2 }' "$WORK/used"); do
	nused=$((nused + 1))
	case " $synthetic " in *" $m "*) continue ;; esac
	echo "$recorded" | grep -qx -- "$m" && continue
	grep -qx -- "$m" "$WORK/catalogue.names" && continue
	if grep -qx -- "$m" "$WORK/source.names"; then
		srconly="$srconly $m"
	else
		missing="$missing $m"
	fi
done
[ -z "$missing" ] || fail "metrics used by dashboards or rules that the agent does not export:$missing"

# labels: a matcher's label must be on that metric (target labels and the
# LLDP neighbor label of link series aside); metrics known only from the
# sources are not checked
badlabel=""
while read -r _ m l; do
	case "$l" in instance | job | __name__) continue ;; esac
	[ "$l" = neighbor ] && case "$m" in fabmon_netdev_* | fabmon_ethtool_* | fabmon_qdisc_*) continue ;; esac
	grep -q "^$m " "$WORK/catalogue.labels" || grep -qx -- "$m" "$WORK/catalogue.names" || continue
	grep -q "^$m .*\b$l\b" "$WORK/catalogue.labels" || badlabel="$badlabel $m{$l}"
done < <(grep '^L ' "$WORK/used")
[ -z "$badlabel" ] || fail "labels no series of the metric carries:$badlabel"

echo "catalogue: golden files + $live + sources; $nused names used, all exported"
echo "known from the sources only (hardware, LLDP, open events):$srconly"
exit 0
