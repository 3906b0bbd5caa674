#!/bin/bash
# SPDX-License-Identifier: MIT
# What the store reads back is checked, never trusted (docs/storage.md):
# 1. the staged records of a killed agent whose series id no series has
#    (0x08000001 and 0xfffffff0, as flipped bits make them: the first had the
#    next agent allocate 1 GiB, the second failed its every tick) are
#    skipped by the next agent, which stays ready and writing
#    (fabmon_store_up 1), counts them in fabmon_store_corrupt_records_total
#    and says so once in its log;
# 2. a packed block cut short (it does not decode) and one with a flipped
#    bit (it decodes, into other values) are skipped by `fabmon history`
#    with a warning naming the series and time range, the rest of the
#    answer shown, exit 0; /api/v1/query_range answers 200 with the same
#    in `warnings`; an agent resuming the series counts both.
. tests/lib.sh
command -v sqlite3 >/dev/null || skip "no sqlite3"
db=$WORK/c.db
root=$WORK/sys
netdev_tree "$root" eth0 1
netdev_tree "$root" eth1 1
port=$(free_port)
run() { start_agent "$port" --db "$db" --interval 100ms --collectors netdev --sysfs-root "$root"; }
stop() { kill -TERM "$AGENT_PID" && wait "$AGENT_PID"; }

run
sleep 1
kill -9 "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null
# a stage blob: a version byte, then 21 bytes a record, the id first
newest=$(sqlite3 "$db" "SELECT max(ts_ms) FROM stage")
[ -n "$newest" ] || fail "the killed agent staged nothing"
sqlite3 "$db" "UPDATE stage SET data = substr(data, 1, 1) || x'01000008' || substr(data, 6)
	WHERE ts_ms = $newest;
	UPDATE stage SET data = substr(data, 1, 22) || x'f0ffffff' || substr(data, 27)
	WHERE ts_ms = (SELECT max(ts_ms) FROM stage WHERE ts_ms < $newest)" || fail "sqlite3"
run
sleep 0.5
[ "$(metric "$port" fabmon_store_up)" = 1 ] ||
	fail "store_up $(metric "$port" fabmon_store_up) after corrupt staged ids: $(cat "$WORK/agent.log")"
n=$(metric "$port" 'fabmon_store_corrupt_records_total{kind="stage"}')
[ "$n" = 2 ] || fail "fabmon_store_corrupt_records_total{kind=\"stage\"} is '$n', not 2"
[ "$(grep -c 'corrupt stage record' "$WORK/agent.log")" = 1 ] ||
	fail "not said once: $(cat "$WORK/agent.log")"
stop
run
sleep 0.5
stop

# two blocks of eth0's MTU: the first cut short, a value bit of the second flipped
mtu=fabmon_netdev_mtu_bytes
eth0="(SELECT id FROM series WHERE name = '$mtu' AND labels = 'interface=\"eth0\"')"
ids=$(sqlite3 "$db" "SELECT id FROM blocks WHERE series_id = $eth0 ORDER BY id")
set -- $ids
[ $# -ge 2 ] || fail "eth0's MTU has $# blocks, not 2"
sqlite3 "$db" "UPDATE blocks SET data = substr(data, 1, 12) WHERE id = $1" || fail "sqlite3"
b=$(sqlite3 "$db" "SELECT hex(substr(data, 11, 1)) FROM blocks WHERE id = $2")
sqlite3 "$db" "UPDATE blocks SET data = substr(data, 1, 10) || x'$(printf '%02X' $((0x$b ^ 0x10)))'
	|| substr(data, 12) WHERE id = $2" || fail "sqlite3"
want=$(sqlite3 "$db" "SELECT sum(n) FROM blocks WHERE series_id = $eth0 AND id NOT IN ($1, $2)")
# a step that is not whole minutes: raw samples, not rollups
"$FABMON" history "$mtu" --db "$db" --since 0 --until now --step 99999999s --agg count --json \
	>"$WORK/h.json" 2>"$WORK/h.err"
rc=$?
[ $rc = 0 ] || fail "history exit $rc: $(cat "$WORK/h.err")"
[ "$(grep -c "^fabmon history: warning: skipped a corrupt block of $mtu{interface=\"eth0\"} from 20[0-9-]*T[0-9:.]*Z to 20[0-9-]*T[0-9:.]*Z$" "$WORK/h.err")" = 2 ] ||
	fail "no warning for each corrupt block: $(cat "$WORK/h.err")"
have=$(jq -s 'map(select(.labels == "interface=\"eth0\"") | .points | map(.[1]) | add // 0) | add' "$WORK/h.json")
[ "$have" = "${want:-0}" ] || fail "eth0: $have samples, not the ${want:-0} of its good blocks"
[ "$(jq -s 'map(select(.labels == "interface=\"eth1\"") | .points | map(.[1]) | add) | add' "$WORK/h.json")" -gt 0 ] ||
	fail "eth1's samples are gone: $(cat "$WORK/h.json")"

run
sleep 0.5
n=$(metric "$port" 'fabmon_store_corrupt_records_total{kind="block"}')
[ "$n" = 2 ] || fail "fabmon_store_corrupt_records_total{kind=\"block\"} is '$n', not 2"
t1=$(($(date +%s) + 1))
code=$(curl -s -o "$WORK/api.json" -w '%{http_code}' \
	"http://127.0.0.1:$port/api/v1/query_range?metric=$mtu&start=$((t1 - 3000))&end=$t1&step=3001s")
[ "$code" = 200 ] || fail "query_range: $code $(cat "$WORK/api.json")"
[ "$(jq '.warnings | length' "$WORK/api.json")" = 2 ] &&
	jq -e '.warnings[0] | startswith("skipped a corrupt block of")' "$WORK/api.json" >/dev/null &&
	[ "$(jq '.data | length' "$WORK/api.json")" = 2 ] ||
	fail "query_range without its warnings: $(cat "$WORK/api.json")"
echo "corrupt staged ids skipped and counted (store_up 1); two corrupt blocks skipped with" \
	"a warning each by history and query_range, the rest answered"
exit 0
