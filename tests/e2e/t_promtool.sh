#!/bin/bash
# SPDX-License-Identifier: MIT
# `promtool check metrics` (Debian's prometheus package) on every golden file
# and on a live /metrics with every collector up: netdev, ethtool, qdisc and
# bpf on a lab veth, rdma on the real counter files of ../shared/fixtures.
. tests/lib.sh
command -v promtool >/dev/null || fail "promtool missing (make deps installs prometheus)"

for g in tests/fixtures/golden/*.prom; do
	out=$(promtool check metrics <"$g" 2>&1) || fail "$g: $out"
	[ -z "$out" ] || fail "$g: $out"
done
echo "golden files lint clean: $(ls tests/fixtures/golden/*.prom | wc -l)"

need_root
. tests/lab/lab.sh
lab_up 2
root=$WORK/sys
lab_sysfs "$root"
lab_agent 1 --db "$WORK/p.db" --interval 500ms --sysfs-root "$root" \
	--collectors netdev,ethtool,rdma,qdisc,pressure,bpf,pcap --ethtool-include 'peer_ifindex'
lab_exec 2 ping -c 2 -i 0.2 198.18.0.1 >/dev/null
sleep 1.2
lab_scrape >"$WORK/metrics" || fail "scrape failed"
for c in netdev ethtool rdma qdisc bpf; do
	grep -q "^fabmon_collector_up{collector=\"$c\"} 1$" "$WORK/metrics" ||
		{ cat "$WORK/agent.log"; fail "collector $c not up"; }
done
grep -q '^fabmon_rdma_port_transmit_bytes_total{device="mlx5_0",port="1"} 11523046035392$' \
	"$WORK/metrics" || fail "rdma bytes from the fixture missing"
out=$(promtool check metrics <"$WORK/metrics" 2>&1) || fail "live /metrics: $out"
[ -z "$out" ] || fail "live /metrics: $out"
echo "live /metrics lint clean: $(grep -vc '^#' "$WORK/metrics") series, 5 collectors up"
exit 0
