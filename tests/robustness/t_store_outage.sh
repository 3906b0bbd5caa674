#!/bin/bash
# SPDX-License-Identifier: MIT
# The database stops taking writes while the agent runs, twice each way: a
# full disk (a 4 MiB tmpfs filled with dd) and a read-only file (chattr +i on
# the database and its WAL, on a small ext4 image: ext4 refuses writes to an
# immutable file even through descriptors opened before, tmpfs does not).
# Each time the agent keeps serving /metrics, shows fabmon_store_up 0 and
# counts the failed ticks in fabmon_store_errors_total, logs the outage once
# (not once a tick), and writes again by itself when space returns or the
# file is writable again, saying so once. Afterwards the file passes
# integrity_check, every tick committed before an outage is still there, and
# every stored tick holds exactly its samples: nothing stored is lost.
. tests/lib.sh
need_root
command -v chattr >/dev/null && command -v mkfs.ext4 >/dev/null || skip "needs e2fsprogs"
port=$(free_port)
m() { metric "$port" "$1"; }
await() { await_metric "$port" "$@"; }

# outage NAME DB BREAK HEAL N: the N-th outage of the agent on DB, made by
# the command BREAK and ended by HEAL
outage() {
	name=$1 db=$2 brk=$3 heal=$4 n=$5
	committed=$(sqlite3 "$db" "SELECT max(ts_ms) FROM ticks")
	eval "$brk"
	await fabmon_store_up 0 || fail "$name: fabmon_store_up stayed 1"
	errs=$(m fabmon_store_errors_total)
	sleep 0.5
	now=$(m fabmon_store_errors_total)
	[ "$now" -ge $((errs + 3)) ] || fail "$name: failed ticks not counted: $errs, then $now"
	curl -sf "http://127.0.0.1:$port/metrics" | grep -q '^fabmon_netdev_receive_bytes_total' ||
		fail "$name: /metrics not served during the outage"
	eval "$heal"
	await fabmon_store_up 1 || fail "$name: the store did not resume"
	lines=$(grep -c "store: .*retrying every tick" "$WORK/agent.log")
	[ "$lines" = "$n" ] || fail "$name: $lines outage lines in the log after $n outages"
	lines=$(grep -c "store: writing again" "$WORK/agent.log")
	[ "$lines" = "$n" ] || fail "$name: $lines resume lines in the log after $n outages"
	have=$(sqlite3 "$db" "SELECT count(*) FROM ticks WHERE ts_ms = $committed")
	[ "$have" = 1 ] || fail "$name: tick $committed, committed before the outage, is gone"
	echo "$name $n: $now+ failed ticks counted, resumed"
}

# check DB NAME: the file is whole and every tick has its one sample
check() {
	[ "$(sqlite3 "$1" 'PRAGMA integrity_check')" = ok ] || fail "$2: database damaged"
	n=$(sqlite3 "$1" "SELECT count(*) FROM ticks")
	s=$(stored_count "$1" fabmon_collector_up --label collector=netdev)
	[ "$s" = "$n" ] || fail "$2: $n ticks but $s fabmon_collector_up{collector=\"netdev\"} samples"
	echo "$2: integrity ok, $n ticks, each with its samples"
}

# 1. a full disk
mnt=$WORK/tmpfs
mkdir -p "$mnt"
mount -t tmpfs -o size=4m fabmon-test "$mnt" || skip "unable to mount a tmpfs"
on_exit "umount -l '$mnt'"
start_agent "$port" --db "$mnt/f.db" --interval 100ms --collectors netdev,qdisc --interfaces lo
await fabmon_store_up 1 || fail "store not up at start"
for i in 1 2; do
	# dd stops at ENOSPC
	outage "full disk" "$mnt/f.db" "dd if=/dev/zero of='$mnt/filler' bs=64k 2>/dev/null" \
		"rm -f '$mnt/filler'" $i
	sleep 0.3
done
kill "$AGENT_PID"
wait "$AGENT_PID"
check "$mnt/f.db" "full disk"
: >"$WORK/agent.log"

# 2. a read-only file
img=$WORK/ext4.img
ext=$WORK/ext4
mkdir -p "$ext"
truncate -s 32M "$img" && mkfs.ext4 -q -F "$img" || fail "unable to make an ext4 image"
mount -o loop "$img" "$ext" || skip "unable to mount an ext4 image on a loop device"
db=$ext/ro.db
on_exit "umount -l '$ext'"
on_exit "chattr -i '$db' '$db-wal'"
start_agent "$port" --db "$db" --interval 100ms --collectors netdev,qdisc --interfaces lo
await fabmon_store_up 1 || fail "store not up at start"
for i in 1 2; do
	outage "read-only" "$db" "chattr +i '$db' '$db-wal'" "chattr -i '$db' '$db-wal'" $i
	sleep 0.3
done
kill "$AGENT_PID"
wait "$AGENT_PID"
grep "store:" "$WORK/agent.log"
check "$db" "read-only"
exit 0
