#!/bin/bash
# SPDX-License-Identifier: MIT
# A source absent at start is looked for again: the RDMA devices appear in
# the sysfs tree after the agent started (a driver loaded late), and within
# collector_retry the rdma collector is up and its series are served.
. tests/lib.sh

root=$WORK/sys
netdev_tree "$root" lab0 7
port=$(free_port)
start_agent "$port" --db "$WORK/r.db" --interval 200ms --collectors netdev,rdma \
	--sysfs-root "$root" --collector-retry 1s
[ "$(metric "$port" 'fabmon_collector_up{collector="rdma"}')" = 0 ] || fail "rdma up with no devices"
grep -q "collector rdma unavailable: no RDMA devices under $root/class/infiniband" \
	"$WORK/agent.log" || fail "no unavailable message"
cp -R "$SHARED_FIXTURES/sysfs/class/infiniband" "$root/class/"
for _ in $(seq 50); do
	[ "$(metric "$port" 'fabmon_collector_up{collector="rdma"}')" = 1 ] && break
	sleep 0.1
done
[ "$(metric "$port" 'fabmon_collector_up{collector="rdma"}')" = 1 ] ||
	fail "rdma not picked up after its devices appeared"
[ "$(metric "$port" 'fabmon_rdma_port_transmit_bytes_total{device="mlx5_0",port="1"}')" = \
	11523046035392 ] || fail "rdma series missing"
grep -q "collector rdma available now" "$WORK/agent.log" || fail "no available-now message"
exit 0
