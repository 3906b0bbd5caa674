#!/bin/bash
# SPDX-License-Identifier: MIT
# The static topology file: the agent exports its own host's line as
# fabmon_topology_info and the links at it or its leaf as
# fabmon_topology_link_info (no other host's, no other link); a node the
# file does not name exports none; a file with a mistake is refused at
# start and by --check-config with its file and line (exit 2), and so is
# a topology_host that is not a name.
. tests/lib.sh
cat >"$WORK/topo" <<'EOF'
# racks and rails LLDP cannot see
host node1 rack r1 rail 0 leaf leaf1
host node2 rack r1 rail 1 leaf leaf2
link node1 leaf1
link leaf1 spine1
link leaf2 spine1
link leaf2 spine2
EOF
port=$(free_port)
start_agent "$port" --db "$WORK/a.db" --collectors topology --topology-file "$WORK/topo" \
	--topology-host node1
m=$(curl -sf "http://127.0.0.1:$port/metrics" | grep '^fabmon_topology' | sort)
want='fabmon_topology_info{host="node1",rack="r1",rail="0",leaf="leaf1"} 1
fabmon_topology_link_info{a="leaf1",b="spine1"} 1
fabmon_topology_link_info{a="node1",b="leaf1"} 1'
[ "$m" = "$want" ] || fail "node1's topology series: $m"
curl -sf "http://127.0.0.1:$port/metrics" | promtool check metrics 2>&1 | grep -q topology &&
	fail "promtool check metrics: $(curl -sf "http://127.0.0.1:$port/metrics" | promtool check metrics 2>&1 | grep topology)"
kill "$AGENT_PID"
echo "node1: its own line and its 2 links of 4"

port=$(free_port)
start_agent "$port" --db "$WORK/b.db" --collectors topology --topology-file "$WORK/topo" \
	--topology-host node9
[ -z "$(curl -sf "http://127.0.0.1:$port/metrics" | grep '^fabmon_topology')" ] ||
	fail "a host the file does not name exports topology series"
[ "$(metric "$port" 'fabmon_collector_up{collector="topology"}')" = 1 ] || fail "topology collector down"
kill "$AGENT_PID"
echo "node9 (not in the file): no topology series, the collector up"

printf 'host node1 rack r1\nhost node2 color blue\n' >"$WORK/bad"
"$FABMON" agent --check-config --db "$WORK/c.db" --topology-file "$WORK/bad" >"$WORK/out" 2>&1
[ $? = 2 ] || fail "--check-config with a bad topology file: not exit 2"
grep -q "$WORK/bad:2: unknown attribute 'color'" "$WORK/out" || fail "bad file: $(cat "$WORK/out")"
"$FABMON" agent --listen "127.0.0.1:$(free_port)" --db "$WORK/c.db" --topology-file "$WORK/bad" \
	>"$WORK/out" 2>&1
[ $? = 2 ] || fail "the agent starts with a bad topology file"
"$FABMON" agent --check-config --db "$WORK/c.db" --topology-host 'no spaces' >"$WORK/out" 2>&1
[ $? = 2 ] || fail "a topology_host that is not a name: not exit 2"
echo "a bad topology file or host name: exit 2, naming file and line"
