#!/bin/bash
# SPDX-License-Identifier: MIT
# The review commands on read-only media: a read-only bind mount (in a mount
# namespace of the test's own) and a user who may not write the directory.
# A database closed cleanly (no WAL) is read as immutable: history, events,
# top and snapshot work and see what a writable reader sees. A copy taken
# while the agent wrote, with its -wal and -shm, is read with mode=ro, WAL
# included. One with a -wal that holds ticks but no -shm cannot be read
# there (SQLite needs to make the -shm, and immutable would not see the
# ticks): refused, saying so, files untouched. The agent, which writes, is
# refused on a file it may not write, naming it and the reason.
. tests/lib.sh
need_root
command -v sqlite3 >/dev/null || skip "no sqlite3 (make deps)"
command -v jq >/dev/null || skip "no jq (make deps)"
command -v setpriv >/dev/null || skip "no setpriv (util-linux)"
unshare -m true 2>/dev/null || skip "no mount namespaces here"
port=$(free_port)
chmod 755 "$WORK"
mkdir "$WORK/live" "$WORK/clean" "$WORK/copy" "$WORK/walonly" "$WORK/out"
chmod 777 "$WORK/out" # where nobody writes its snapshot
start_agent "$port" --db "$WORK/live/a.db" --interval 100ms --collectors netdev --interfaces lo
sleep 1
cp "$WORK/live/a.db" "$WORK/live/a.db-wal" "$WORK/live/a.db-shm" "$WORK/copy/"
cp "$WORK/live/a.db" "$WORK/live/a.db-wal" "$WORK/walonly/"
kill "$AGENT_PID"
wait "$AGENT_PID"
cp "$WORK/live/a.db" "$WORK/clean/"
[ ! -e "$WORK/clean/a.db-wal" ] || fail "a cleanly closed database left a WAL"

# ro DIR CMD...: runs CMD with DIR bind-mounted read-only, in a mount
# namespace that ends with it (nothing to unmount)
ro() {
	d=$1
	shift
	unshare -m sh -c 'mount --bind -o ro "$0" "$0" && exec "$@"' "$d" "$@"
}
nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
samples() { "$@" history fabmon_collector_up --db "$db" --since 0 --step 99999999s --agg count \
	--json | jq -s 'map(.points | map(.[1]) | add // 0) | add // 0'; }

# a reader in a writable directory leaves an empty -wal and a -shm: on a copy
mkdir "$WORK/ref"
cp "$WORK/clean/a.db" "$WORK/ref/"
db=$WORK/ref/a.db
want=$(samples "$FABMON")
db=$WORK/clean/a.db
[ "$want" -gt 0 ] || fail "no samples in the database"
for how in ro nobody; do
	if [ $how = ro ]; then run() { ro "$WORK/clean" "$@"; }; else run() { nobody "$@"; }; fi
	[ "$(run touch "$WORK/clean/x" 2>/dev/null; echo $?)" != 0 ] || fail "$how: the directory is writable"
	got=$(samples run "$FABMON")
	[ "$got" = "$want" ] || fail "$how: history sees $got samples, a writable reader $want"
	run "$FABMON" events --db "$db" --since 0 >/dev/null || fail "$how: events"
	run "$FABMON" top --db "$db" --since 0 >/dev/null || fail "$how: top"
	rm -f "$WORK/out/snap.db"
	run "$FABMON" snapshot --db "$db" "$WORK/out/snap.db" || fail "$how: snapshot"
	[ "$(sqlite3 "$WORK/out/snap.db" 'PRAGMA integrity_check')" = ok ] || fail "$how: the snapshot"
	ls "$WORK/clean" | grep -q -- '-shm' && fail "$how: a -shm was made"
	echo "clean database, $how: history ($got samples), events, top and snapshot read it"
done

# the agent, which writes, is refused there, saying which file and why
nobody timeout 5 "$FABMON" agent --db "$db" --listen "127.0.0.1:$port" --collectors netdev \
	--interfaces lo >"$WORK/err" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "unable to write '$db': Permission denied" "$WORK/err" ||
	fail "the agent on a file it may not write: exit $rc, $(cat "$WORK/err")"
echo "the agent on a file it may not write: $(cat "$WORK/err")"

db=$WORK/copy/a.db
got=$(samples ro "$WORK/copy" "$FABMON")
[ "$got" -gt 0 ] || fail "a copy with its -wal and -shm, read-only: $got samples"
echo "a copy with its -wal and -shm, read-only mount: $got samples (the WAL's included)"

db=$WORK/walonly/a.db
before=$(cd "$WORK/walonly" && sha256sum a.db a.db-wal && stat -c '%n %s %.9Y' a.db a.db-wal)
ro "$WORK/walonly" "$FABMON" history fabmon_collector_up --db "$db" >"$WORK/err" 2>&1
rc=$?
[ $rc = 1 ] || fail "a -wal without -shm, read-only: exit $rc, want 1"
for w in "mode=ro" "a.db-shm" "immutable=1" "Read-only file system"; do
	grep -q "$w" "$WORK/err" || fail "a -wal without -shm: no '$w' in: $(cat "$WORK/err")"
done
after=$(cd "$WORK/walonly" && sha256sum a.db a.db-wal && stat -c '%n %s %.9Y' a.db a.db-wal)
[ "$after" = "$before" ] || fail "a -wal without -shm: files changed"
[ ! -e "$WORK/walonly/a.db-shm" ] || fail "a -shm was made"
echo "a -wal without -shm, read-only mount: refused, untouched: $(cat "$WORK/err")"
exit 0
