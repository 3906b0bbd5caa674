#!/bin/bash
# SPDX-License-Identifier: MIT
# The size cap over a simulated past: a database holding 6 MiB of old packed
# samples and some old rollups (filler rows of a series long gone, stamped
# over the last two days) is opened by an agent with db_cap_mb 4. It deletes
# the oldest packed samples first, a bounded number a tick, until the pages
# in use are under the cap; the rollups stay while packed samples are left
# to delete, its own new samples are all there, and the log says so once.
. tests/lib.sh
command -v sqlite3 >/dev/null || skip "no sqlite3 (make deps)"
command -v jq >/dev/null || skip "no jq (make deps)"
db=$WORK/c.db
root=$WORK/sys
for i in $(seq 0 9); do netdev_tree "$root" "eth$i" 1; done
port=$(free_port)
used() {
	sqlite3 "$db" 'SELECT (SELECT page_count FROM pragma_page_count) -
		(SELECT freelist_count FROM pragma_freelist_count)' |
		awk -v ps="$(sqlite3 "$db" 'PRAGMA page_size')" '{ print $1 * ps }'
}

# a database of this schema, then the filler: 3000 blocks of 2000 bytes, one
# every minute back from an hour ago, and 48 hour rows of rollups before them
start_agent "$port" --db "$db" --interval 100ms --collectors netdev --sysfs-root "$root"
kill -TERM "$AGENT_PID"
wait "$AGENT_PID"
now=$(($(date +%s) * 1000))
sqlite3 "$db" "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 3000)
	INSERT INTO blocks (series_id, start_ms, end_ms, n, data)
	SELECT -1, $now - 3600000 - i * 60000, $now - 3600000 - i * 60000 + 59000, 60,
		randomblob(2000) FROM k;
	WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 48)
	INSERT INTO rollups (series_id, hour_ms, n, data)
	SELECT -1, $now - 86400000 * 3 - i * 3600000, 60, randomblob(500) FROM k;" ||
	fail "filler rows"
before=$(used)
[ "$before" -gt $((6 * 1024 * 1024)) ] || fail "filler: only $before bytes in use"
oldest=$(sqlite3 "$db" 'SELECT min(end_ms) FROM blocks WHERE series_id = -1')
newest=$(sqlite3 "$db" 'SELECT max(end_ms) FROM blocks WHERE series_id = -1')

start_agent "$port" --db "$db" --interval 100ms --collectors netdev --sysfs-root "$root" \
	--db-cap-mb 4
# the reading that ended the wait is the one judged: a tick may add a page
# between two readings (CI read 4096 bytes over once it was under)
for _ in $(seq 200); do
	u=$(used)
	[ "$u" -le $((4 * 1024 * 1024)) ] && break
	sleep 0.1
done
[ "$u" -le $((4 * 1024 * 1024)) ] || fail "still $u bytes in use after 20 s under a 4 MiB cap"
grep -q 'reached its 4 MiB cap' "$WORK/agent.log" || fail "the cap was not logged"
sleep 1 # ten more ticks at the cap
max=0
for _ in $(seq 10); do
	u=$(used)
	[ "$u" -gt "$max" ] && max=$u
	sleep 0.1
done
# a tick adds a few KiB and sheds 16 rows (32 KiB) when over
[ "$max" -le $((4 * 1024 * 1024 + 64 * 1024)) ] || fail "in use $max bytes over a 4 MiB cap"
kill -TERM "$AGENT_PID"
wait "$AGENT_PID"

left=$(sqlite3 "$db" 'SELECT count(*) FROM blocks WHERE series_id = -1')
first=$(sqlite3 "$db" 'SELECT min(end_ms) FROM blocks WHERE series_id = -1')
last=$(sqlite3 "$db" 'SELECT max(end_ms) FROM blocks WHERE series_id = -1')
[ "$left" -gt 0 ] && [ "$left" -lt 3000 ] || fail "$left of 3000 filler blocks left"
[ "$last" = "$newest" ] && [ "$first" -gt "$oldest" ] ||
	fail "not the oldest first: $oldest..$newest became $first..$last"
[ "$(sqlite3 "$db" 'SELECT count(*) FROM blocks WHERE series_id = -1 AND end_ms < '"$first")" = 0 ]
[ "$(sqlite3 "$db" 'SELECT count(*) FROM rollups WHERE series_id = -1')" = 48 ] ||
	fail "rollups were deleted while packed samples were left"
n=$(sqlite3 "$db" 'SELECT count(*) FROM ticks')
s=$(stored_count "$db" fabmon_collector_up --label collector=netdev)
[ "$s" = "$n" ] || fail "the agent's own samples: $s for $n ticks"
[ "$(grep -c "reached its 4 MiB cap" "$WORK/agent.log")" = 1 ] ||
	{ grep store "$WORK/agent.log"; fail "the cap was logged more than once"; }
[ "$(sqlite3 "$db" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check"
echo "4 MiB cap: $before -> at most $max bytes in use; the oldest $((3000 - left)) of 3000 old blocks deleted, rollups kept, all $n ticks' samples kept, logged once"
exit 0
