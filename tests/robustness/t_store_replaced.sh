#!/bin/bash
# SPDX-License-Identifier: MIT
# The database is deleted, replaced or moved while the agent writes it. Each
# time the agent says so once, counts the tick that found it as not written
# (fabmon_store_errors_total), and opens the path again as at start, within
# a second: deleted, a new database is started there; replaced by another
# program's file, that file is refused and left untouched (bytes,
# modification time, no WAL of the agent's beside it) with fabmon_store_up
# 0 until it is gone; moved away, the moved file is closed complete (every
# tick committed before the move in it) and a new one started; replaced by
# a fabmon database (a snapshot put back), the agent writes on it.
. tests/lib.sh
command -v sqlite3 >/dev/null || skip "no sqlite3 (make deps)"
db=$WORK/r.db
port=$(free_port)
m() { metric "$port" "$1"; }
await() { await_metric "$port" "$@"; }
# ticks_in FILE: the ticks FILE holds, 0 while it cannot be read (never
# making the file, as the agent would then find one there)
ticks_in() { sqlite3 -readonly "$1" "SELECT count(*) FROM ticks" 2>/dev/null || echo 0; }
# await_ticks FILE N: polls (5 s at most) until FILE holds more than N ticks
await_ticks() {
	for _ in $(seq 50); do
		[ "$(ticks_in "$1")" -gt "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
said() { grep -c "$1" "$WORK/agent.log"; }

start_agent "$port" --db "$db" --interval 100ms --collectors netdev --interfaces lo
await_ticks "$db" 2 || fail "no ticks at start"

# 1. deleted
errs=$(m fabmon_store_errors_total)
rm "$db"
await_ticks "$db" 2 || fail "deleted: no new database at the path: $(cat "$WORK/agent.log")"
[ "$(said "was deleted while the agent wrote it")" = 1 ] || fail "deleted: not said once"
[ "$(said "started a new database at")" = 1 ] || fail "deleted: the new database not said: $(cat "$WORK/agent.log")"
await fabmon_store_up 1 || fail "deleted: fabmon_store_up not 1 again"
[ "$(m fabmon_store_errors_total)" -gt "$errs" ] || fail "deleted: the lost tick not counted"
echo "deleted: said once, a new database started, $(ticks_in "$db") ticks in it"

# 2. replaced by another program's file
sqlite3 "$WORK/other.db" "CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('alice')"
cp "$WORK/other.db" "$WORK/put.db"
stamp=$(stat -c '%s %.9Y' "$WORK/put.db")
mv "$WORK/put.db" "$db"
await fabmon_store_up 0 || fail "replaced: fabmon_store_up stayed 1"
errs=$(m fabmon_store_errors_total)
sleep 0.5
[ "$(m fabmon_store_errors_total)" -ge $((errs + 3)) ] || fail "replaced: failed ticks not counted"
cmp -s "$db" "$WORK/other.db" || fail "replaced: the other program's file changed"
[ "$(stat -c '%s %.9Y' "$db")" = "$stamp" ] || fail "replaced: its modification time changed"
[ ! -e "$db-wal" ] || fail "replaced: a WAL beside it"
[ "$(said "was replaced by another file")" = 1 ] || fail "replaced: not said once"
[ "$(said "is not a fabmon database")" = 1 ] || fail "replaced: the refusal not said once"
curl -sf "http://127.0.0.1:$port/metrics" | grep -q '^fabmon_netdev_receive_bytes_total' ||
	fail "replaced: /metrics not served"
rm "$db"
await fabmon_store_up 1 || fail "replaced: not writing once the file is gone"
echo "replaced by another program's file: refused, untouched, written again once it was removed"

# 3. moved away
await_ticks "$db" 3 || fail "moved: no ticks before"
t=$(m fabmon_store_last_tick_timestamp_seconds)
mv "$db" "$WORK/moved.db"
await_ticks "$db" 2 || fail "moved: no new database at the path"
[ "$(said "was moved away while the agent wrote it")" = 1 ] || fail "moved: not said once"
[ "$(sqlite3 "$WORK/moved.db" 'PRAGMA integrity_check')" = ok ] || fail "moved: the file is damaged"
[ ! -e "$WORK/moved.db-wal" ] || fail "moved: left with a WAL"
want=$(awk -v t="$t" 'BEGIN { printf "%.0f", t * 1000 }')
[ "$(sqlite3 "$WORK/moved.db" "SELECT count(*) FROM ticks WHERE ts_ms = $want")" = 1 ] ||
	fail "moved: tick $want, committed before the move, not in the moved file"
echo "moved away: the moved file complete ($(ticks_in "$WORK/moved.db") ticks), a new one started"

# 4. replaced by a fabmon database: a snapshot put back
"$FABMON" snapshot --db "$WORK/moved.db" "$WORK/snap.db" || fail "snapshot"
n=$(ticks_in "$WORK/snap.db")
mv "$WORK/snap.db" "$db"
await_ticks "$db" $((n + 2)) || fail "a fabmon database put there: not written on"
[ "$(said "now writing the database at")" = 1 ] || fail "a fabmon database put there: not said"
echo "a snapshot put in its place: written on ($n ticks, then $(ticks_in "$db"))"
kill "$AGENT_PID"
wait "$AGENT_PID"
[ "$(sqlite3 "$db" 'PRAGMA integrity_check')" = ok ] || fail "the database is damaged"
grep "store:" "$WORK/agent.log"
exit 0
