#!/bin/bash
# SPDX-License-Identifier: MIT
# fabmon events on a database of known events: fabmon replay --db of a
# pcapgen capture whose one receiver is CE-marked stores one incast, 6 s long,
# at capture time 1700000002-1700000008 (2023-11-14T22:13:22Z-28Z). The
# window, kind and subject filters, table (local time and --utc), --json and
# --csv must show exactly it, and GET /api/v1/events too; it reads a database
# the agent is writing;
# missing, foreign and newer files and bad arguments get their message and
# exit status.
. tests/lib.sh
command -v sqlite3 >/dev/null || skip "no sqlite3 (make deps)"
command -v jq >/dev/null || skip "no jq (make deps)"
[ -x "${LAB_BIN:-$PWD/build/lab}/pcapgen" ] || fail "no pcapgen in ${LAB_BIN:-$PWD/build/lab}"
LAB_BIN=${LAB_BIN:-$PWD/build/lab}
db=$WORK/e.db
"$LAB_BIN/pcapgen" --output "$WORK/c.pcap" --packets 6400 --qps 4 --time-step 1000 \
	--ce-every 10 --ce-qp 3 --ack-every 8 >/dev/null || fail "pcapgen failed"
"$FABMON" replay --db "$db" "$WORK/c.pcap" >"$WORK/replay.out" 2>&1 ||
	{ cat "$WORK/replay.out"; fail "fabmon replay --db failed"; }

ev() { "$FABMON" events --db "$db" "$@"; }
# count ARGS...: how many events --json lists
count() { ev --json "$@" | grep -c '^{' || true; }

# 1. the window: an event overlapping it is listed, one outside is not
[ "$(count --since 1700000000 --until 1700000010)" = 1 ] || fail "event not in its window"
[ "$(count --since 1700000005 --until 1700000006)" = 1 ] || fail "a window inside the event misses it"
[ "$(count --since 1700000009 --until 1700000100)" = 0 ] || fail "listed in a window after it"
[ "$(count --since 1699999000 --until 1700000001)" = 0 ] || fail "listed in a window before it"
[ "$(count)" = 0 ] || fail "a 2023 event in the default window (the last 24 h)"
[ "$(count --since 2023-11-14T23:13:00+01:00 --until '2023-11-14T22:14:00Z')" = 1 ] ||
	fail "RFC 3339 with an offset"
[ "$(count --since 1700000000 --kind incast --subject 198.18.0.6)" = 1 ] || fail "kind/subject"
[ "$(count --since 1700000000 --kind stall)" = 0 ] || fail "--kind stall lists the incast"
[ "$(count --since 1700000000 --subject 10.0.0.1)" = 0 ] || fail "--subject matched another peer"
echo "window, kind and subject filters: as stored"

# 2. the formats
json=$(ev --since 1700000000 --json)
[ "$(echo "$json" | jq -r '[.kind, .cause, .subject, .start, .end, .duration_seconds] | @tsv')" = \
	"$(printf 'incast\tnetwork\tpeer=198.18.0.6\t2023-11-14T22:13:22.000Z\t2023-11-14T22:13:28.000Z\t6')" ] ||
	fail "JSON: $json"
[ "$(echo "$json" | jq -r .evidence.ecn_ce_share)" != null ] || fail "JSON evidence: $json"
# replay ticks 1 s; event_open_ticks 2: opened a tick after its start
[ "$(echo "$json" | jq -r .opened)" = 2023-11-14T22:13:23.000Z ] || fail "JSON opened: $json"
csv=$(ev --since 1700000000 --csv)
[ "$(echo "$csv" | head -n 1)" = "id,kind,cause,subject,start,opened,end,peak_score,evidence" ] ||
	fail "CSV header"
echo "$csv" | sed -n 2p | grep -q '^1,incast,network,"peer=198.18.0.6",2023-11-14T22:13:22.000Z,2023-11-14T22:13:23.000Z,2023-11-14T22:13:28.000Z,' ||
	fail "CSV row: $csv"
TZ=Asia/Tokyo ev --since 1700000000 | grep -q '2023-11-15 07:13:22.000 JST' ||
	fail "table in local time: $(TZ=Asia/Tokyo ev --since 1700000000)"
TZ=Asia/Tokyo ev --since 1700000000 --utc | grep -q '2023-11-14 22:13:22.000 UTC' || fail "--utc"
ev --since 1700000000 | grep -q ' incast  *network  *peer=198.18.0.6 ' || fail "table: no cause column"
echo "table (local time, --utc), JSON, CSV:"
TZ=Asia/Tokyo ev --since 1700000000 | sed 's/^/  /'

# 3. read-only beside a running agent writing its own database
root=$WORK/sys
netdev_tree "$root" eth0 1
port=$(free_port)
start_agent "$port" --db "$WORK/live.db" --interval 100ms --collectors netdev --sysfs-root "$root"
for _ in 1 2 3 4 5; do
	"$FABMON" events --db "$WORK/live.db" --since 1h >"$WORK/live.out" 2>&1 ||
		fail "fabmon events beside the agent: $(cat "$WORK/live.out")"
	sleep 0.1
done
grep -q 'no events in the window' "$WORK/live.out" || fail "beside the agent: $(cat "$WORK/live.out")"
echo "beside a running agent: read 5 times while it wrote"

# 4. the same over HTTP: GET /api/v1/events from an agent whose database
# holds the replayed incast
kill -9 "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null
cp "$db" "$WORK/api.db"
port=$(free_port)
# the event is from 2023: kept past the default 90 days, or the agent's
# retention would delete it before the first request
start_agent "$port" --db "$WORK/api.db" --interval 100ms --collectors netdev --sysfs-root "$root" \
	--event-retention 3660d
api() { curl -s -o "$WORK/api.json" -w '%{http_code}' "http://127.0.0.1:$port/api/v1/$1"; }
[ "$(api 'events?start=1700000000&end=1700000010')" = 200 ] || fail "GET events: $(cat "$WORK/api.json")"
[ "$(jq -c '[.status, .truncated, (.data | length), .data[0].subject, .data[0].end]' "$WORK/api.json")" = \
	'["ok",false,1,"peer=198.18.0.6","2023-11-14T22:13:28.000Z"]' ] || fail "GET events: $(cat "$WORK/api.json")"
[ "$(jq -c '.data[0]' "$WORK/api.json")" = "$(ev --since 1700000000 --json | jq -c .)" ] ||
	fail "the API and fabmon events --json differ"
[ "$(api 'events?start=2023-11-14T22:00:00Z&kind=incast&subject=198.18.0.6')" = 200 ] &&
	[ "$(jq '.data | length' "$WORK/api.json")" = 1 ] || fail "GET events, kind and subject"
[ "$(api events)" = 200 ] && [ "$(jq '.data | length' "$WORK/api.json")" = 0 ] ||
	fail "GET events, default window (the last 24 h): $(cat "$WORK/api.json")"
[ "$(api events/1)" = 200 ] && [ "$(jq -r .data.kind "$WORK/api.json")" = incast ] ||
	fail "GET events/1: $(cat "$WORK/api.json")"
[ "$(api events/99)" = 404 ] || fail "GET events/99: want 404"
# strict: each bad request is a 400 naming its parameter
for q in 'events?start=yesterday start' 'events?end=soon end' 'events?start=1700000010&end=1700000000 end' \
	'events?kind=hot kind' 'events?limit=5 limit' 'events/1?start=0 start' 'events/x id'; do
	set -- $q
	code=$(api "$1")
	[ "$code" = 400 ] && [ "$(jq -r .parameter "$WORK/api.json")" = "$2" ] ||
		fail "GET $1: $code $(cat "$WORK/api.json"), want 400 naming $2"
done
[ "$(api nothing)" = 404 ] || fail "GET /api/v1/nothing: want 404"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$port/api/v1/events")" = 405 ] ||
	fail "POST /api/v1/events: want 405"
echo "HTTP: GET /api/v1/events and /events/ID answer as fabmon events --json; 400s name the parameter"

# 5. files that are not a usable database: exit 1 with a message naming them
cp "$db" "$WORK/newer.db"
sqlite3 "$WORK/newer.db" "PRAGMA user_version = 999"
printf 'not a database\n' >"$WORK/text.db"
for f in "$WORK/missing.db" "$WORK/text.db" "$WORK/newer.db"; do
	"$FABMON" events --db "$f" >"$WORK/out" 2>"$WORK/err"
	rc=$?
	[ $rc = 1 ] || fail "$f: exit $rc, want 1"
	grep -q "$(basename "$f")" "$WORK/err" || fail "$f: message does not name it: $(cat "$WORK/err")"
	echo "  $(cat "$WORK/err")"
done
# 6. usage errors: exit 2
for args in "--since yesterday" "--until tomorrow" "--since 1700000010 --until 1700000000" \
	"--kind hot" "--json --csv" "extra" "--bogus"; do
	# shellcheck disable=SC2086 # one argument list a string
	ev $args >"$WORK/out" 2>"$WORK/err"
	rc=$?
	[ $rc = 2 ] || fail "fabmon events $args: exit $rc, want 2"
	[ -s "$WORK/err" ] || fail "fabmon events $args: no message"
done
"$FABMON" events --help | grep -q -- '--since' || fail "--help"
echo "missing, foreign and newer files: exit 1 naming them; bad arguments: exit 2"
exit 0
