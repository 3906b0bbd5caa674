#!/bin/bash
# SPDX-License-Identifier: MIT
# The size cap: an agent with db_cap_mb 1 writing ~600 series every 100 ms
# passes 1 MiB in a few seconds; from then on it deletes the oldest ticks
# first, so the pages in use stay near the cap (the file itself only grows
# by what one tick adds before pages are freed again), the newest ticks are
# all there, and the log says so once.
. tests/lib.sh
command -v sqlite3 >/dev/null || skip "no sqlite3 (make deps)"
root=$WORK/sys
for i in $(seq 0 59); do netdev_tree "$root" "eth$i" 1; done
port=$(free_port)
start_agent "$port" --db "$WORK/c.db" --interval 100ms --collectors netdev --sysfs-root "$root" \
	--db-cap-mb 1
used() {
	sqlite3 "$WORK/c.db" 'SELECT (SELECT page_count FROM pragma_page_count) -
		(SELECT freelist_count FROM pragma_freelist_count)' |
		awk -v ps="$(sqlite3 "$WORK/c.db" 'PRAGMA page_size')" '{ print $1 * ps }'
}
for _ in $(seq 150); do
	grep -q 'reached its 1 MiB cap' "$WORK/agent.log" && break
	sleep 0.1
done
grep -q 'reached its 1 MiB cap' "$WORK/agent.log" || fail "the cap was never reached: $(used) bytes"
sleep 3 # 30 more ticks under the cap
max=0
for _ in $(seq 10); do
	u=$(used)
	[ "$u" -gt "$max" ] && max=$u
	sleep 0.2
done
# one tick adds ~25 KiB: in use stays within a few ticks of the cap
[ "$max" -le $((1024 * 1024 + 256 * 1024)) ] || fail "in use $max bytes over a 1 MiB cap"
first=$(sqlite3 "$WORK/c.db" 'SELECT min(ts_ms) FROM ticks')
last=$(sqlite3 "$WORK/c.db" 'SELECT max(ts_ms) FROM ticks')
n=$(sqlite3 "$WORK/c.db" 'SELECT count(*) FROM ticks')
ticks=$(metric "$port" fabmon_ticks_total)
[ "$n" -lt "$ticks" ] || fail "no tick was deleted: $n of $ticks kept"
[ $((last - first)) -le $((n * 200)) ] || fail "the kept ticks are not the newest: $first..$last for $n"
[ "$(grep -c "reached its 1 MiB cap" "$WORK/agent.log")" = 1 ] || { grep store "$WORK/agent.log"; fail "the cap was logged more than once"; }
[ "$(sqlite3 "$WORK/c.db" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check"
echo "1 MiB cap: at most $max bytes in use over 2 s, the newest $n of $ticks ticks kept, logged once"
exit 0
