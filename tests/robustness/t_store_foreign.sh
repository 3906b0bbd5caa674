#!/bin/bash
# SPDX-License-Identifier: MIT
# After kill -9 the agent's WAL stays beside its database, holding ticks
# not yet copied into the file. Whatever is put at the database path then
# (another program's SQLite file, a text file, an empty file, nothing at
# all), or a WAL of another program beside the agent's own file, the next
# agent refuses to start (exit 1, saying why) and changes neither file: not
# a byte, not a modification time. With its own file back, it starts and
# keeps every tick committed before the kill.
. tests/lib.sh
command -v sqlite3 >/dev/null || skip "no sqlite3 (make deps)"
db=$WORK/f.db
port=$(free_port)
# an agent that starts is stopped after 3 s
run() { timeout 3 "$FABMON" agent --db "$db" --listen "127.0.0.1:$port" --interval 100ms \
	--collectors netdev --interfaces lo; }
# stamp: the bytes, size and modification time (ns) of the database and WAL
stamp() {
	for f in "$db" "$db-wal"; do
		[ -e "$f" ] && echo "$f $(sha256sum <"$f") $(stat -c '%s %.9Y' "$f")" || echo "$f absent"
	done
}

start_agent "$port" --db "$db" --interval 100ms --collectors netdev --interfaces lo
sleep 0.5
t=$(metric "$port" fabmon_store_last_tick_timestamp_seconds)
kill -9 "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null
[ -s "$db-wal" ] || fail "no WAL left by kill -9"
mv "$db" "$WORK/saved.db"

# refuse NAME WANT: the agent started now exits 1 saying WANT, both files as they were
refuse() {
	before=$(stamp)
	run >"$WORK/out" 2>&1
	rc=$?
	[ $rc = 1 ] || fail "$1: exit $rc, want 1: $(cat "$WORK/out")"
	grep -q "$2" "$WORK/out" || fail "$1: no '$2' in: $(cat "$WORK/out")"
	[ "$(stamp)" = "$before" ] || fail "$1: files changed: $before / $(stamp)"
	echo "$1: refused, untouched: $(sed 's/^fabmon: error: //' "$WORK/out")"
}
sqlite3 "$WORK/other.db" "CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('alice')"
cp "$WORK/other.db" "$db"
refuse "another program's SQLite file" "is not a fabmon database"
head -c 5000 /dev/urandom | base64 >"$db"
refuse "a text file" "not SQLite at all"
: >"$db"
refuse "an empty file" "is empty but"
rm "$db"
refuse "no file" "is absent but"

# the WAL another program's SQLite left (it did not checkpoint at close)
mv "$db-wal" "$WORK/saved.db-wal"
sqlite3 "$WORK/w.db" ".dbconfig no_ckpt_on_close on" "PRAGMA journal_mode = WAL" \
	"CREATE TABLE t (x)" "INSERT INTO t VALUES (1)" >/dev/null
[ -s "$WORK/w.db-wal" ] || fail "sqlite3 left no WAL"
cp "$WORK/saved.db" "$db"
cp "$WORK/w.db-wal" "$db-wal"
refuse "another program's WAL" "is not the WAL of a fabmon database"

# its own, back: the ticks committed before the kill are there
mv "$WORK/saved.db" "$db"
mv "$WORK/saved.db-wal" "$db-wal"
start_agent "$port" --db "$db" --interval 100ms --collectors netdev --interfaces lo
kill "$AGENT_PID"
wait "$AGENT_PID"
want=$(awk -v t="$t" 'BEGIN { printf "%.0f", t * 1000 }')
[ "$(sqlite3 "$db" "SELECT count(*) FROM ticks WHERE ts_ms = $want")" = 1 ] ||
	fail "tick $want, committed before the kill, is gone"
[ "$(sqlite3 "$db" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check"
echo "its own file back: started, tick $want kept"
exit 0
