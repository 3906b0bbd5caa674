#!/bin/bash
# SPDX-License-Identifier: MIT
# The timeline page, GET /, in Debian's headless Chromium against a running
# agent whose database holds one known event (a replayed incast on
# 198.18.0.6, stamped 10 minutes ago): the page must load its events from
# /api/v1/events and draw them, as a bar on the timeline and a row in the
# list. The screenshot is kept as build/artifacts/timeline.png (ARTIFACTS
# to put it elsewhere). Chromium reaches only the agent on loopback.
. tests/lib.sh
command -v chromium >/dev/null || skip "no chromium (make deps)"
LAB_BIN=${LAB_BIN:-$PWD/build/lab}
[ -x "$LAB_BIN/pcapgen" ] || fail "no pcapgen in $LAB_BIN"
ARTIFACTS=${ARTIFACTS:-$PWD/build/artifacts}
"$LAB_BIN/pcapgen" --output "$WORK/c.pcap" --packets 8000 --qps 4 --time-step 1000 \
	--ce-every 10 --ce-qp 3 --time-start $(($(date +%s) - 600)) >/dev/null &&
	"$FABMON" replay --db "$WORK/p.db" "$WORK/c.pcap" >/dev/null 2>&1 || fail "replay --db"
netdev_tree "$WORK/sys" eth0 1
port=$(free_port)
start_agent "$port" --db "$WORK/p.db" --interval 1s --collectors netdev --sysfs-root "$WORK/sys"
url="http://127.0.0.1:$port/?window=1h"

curl -s -D "$WORK/headers" -o "$WORK/page.html" "$url" || fail "GET /"
grep -qi '^content-type: text/html' "$WORK/headers" || fail "GET /: $(cat "$WORK/headers")"
grep -q 'fabmon: events' "$WORK/page.html" || fail "GET / is not the page"

# chromium: headless, no sandbox (root in CI), its profile in $WORK, and
# no background traffic; virtual time lets the fetch finish before the dump
browse() {
	timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
		--disable-dev-shm-usage --no-first-run --user-data-dir="$WORK/chromium" \
		--virtual-time-budget=10000 "$@" 2>>"$WORK/chromium.log"
}
browse --dump-dom "$url" >"$WORK/dom.html" || { tail "$WORK/chromium.log"; fail "chromium failed"; }
grep -q 'data-loaded="yes"' "$WORK/dom.html" ||
	fail "the page did not load its events: $(grep -o '<div id="status"[^<]*' "$WORK/dom.html")"
grep -q '<rect[^>]*data-kind="incast"[^>]*data-subject="peer=198.18.0.6"' "$WORK/dom.html" ||
	fail "no incast bar for 198.18.0.6 on the timeline"
grep -q '<tr data-kind="incast" data-cause="network" data-subject="peer=198.18.0.6">' "$WORK/dom.html" ||
	fail "no incast row for 198.18.0.6 in the list"
grep -o '<div id="status"[^<]*' "$WORK/dom.html" | grep -q '1 event in the last 1h' ||
	fail "status: $(grep -o '<div id="status"[^<]*' "$WORK/dom.html")"
mkdir -p "$ARTIFACTS"
browse --screenshot="$ARTIFACTS/timeline.png" --window-size=1200,600 "$url" >/dev/null ||
	fail "chromium could not take the screenshot"
[ -s "$ARTIFACTS/timeline.png" ] || fail "no screenshot"
echo "headless chromium: the page drew the incast on 198.18.0.6 (bar and row);" \
	"screenshot $ARTIFACTS/timeline.png ($(stat -c %s "$ARTIFACTS/timeline.png") bytes)"
exit 0
