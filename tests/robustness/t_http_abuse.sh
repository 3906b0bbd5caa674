#!/bin/bash
# SPDX-License-Identifier: MIT
# The HTTP side under abuse, with the default limits, on loopback (~35 s):
#  - slowloris: 300 connections from 30 loopback addresses (10 each, under
#    the per-address limit) that send part of a request and then either
#    trickle a header line every 2 s or go silent; scrapes from 127.0.0.1
#    meanwhile all answer 200, fast; the silent ones are closed after
#    http_timeout; RSS stays bounded;
#  - a 40 KiB URL is 414, 40 KiB of headers (one or many) 431, and the
#    agent serves on;
#  - POST, PUT, DELETE, OPTIONS, TRACE and an invented method are 405 with
#    Allow: GET, HEAD;
#  - wrk on /metrics for ABUSE_WRK_SECS (default 10) at its natural rate with
#    4 connections: no socket error, no non-2xx answer, RSS within 8 MiB of
#    where a warm-up left it.
# The figures are printed. make bench's "http" block runs the long load.
. tests/lib.sh

for t in python3 curl wrk; do
	command -v $t >/dev/null || skip "$t not installed (make deps)"
done
WRK_SECS=${ABUSE_WRK_SECS:-10}
port=$(free_port)
start_agent "$port" --db "$WORK/a.db" --collectors netdev --interval 200ms
url=http://127.0.0.1:$port
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$AGENT_PID/status"; }

# scrapes N: N scrapes of /metrics from 127.0.0.1, one line "codes max_s
# median_s" (codes: the distinct statuses)
scrapes() {
	for _ in $(seq "$1"); do
		curl -s -o /dev/null -w '%{http_code} %{time_total}\n' --max-time 5 "$url/metrics"
	done | sort -k2 -g | awk '{ c[$1] = 1; t[NR] = $2 }
		END { for (k in c) s = s (s ? "," : "") k; print s, t[NR], t[int((NR + 1) / 2)] }'
}

# --- slowloris
read -r codes base_max base_med <<<"$(scrapes 20)"
[ "$codes" = 200 ] || fail "baseline scrapes: $codes"
rss0=$(rss)
# prints "open N" once all are connected, then after HOLD seconds "trickling
# N silent N": how many of each the agent still holds
python3 - "$port" 300 10 13 >"$WORK/slow.out" 2>&1 <<'EOF' &
import socket, sys, time
port, n, per_ip, hold = (int(a) for a in sys.argv[1:])
trickle, silent = [], []
for i in range(n):
    s = socket.socket()
    s.bind(("127.0.0.%d" % (2 + i // per_ip), 0))
    s.settimeout(3)
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: fabmon\r\n")
    (trickle if i % 2 else silent).append(s)
print("open", n, flush=True)
end = time.time() + hold
while time.time() < end:
    time.sleep(2)
    for s in trickle:
        try:
            s.send(b"X-Slow: 1\r\n")
        except OSError:
            pass
def held(socks):
    k = 0
    for s in socks:
        s.setblocking(False)
        try:
            k += s.recv(1) != b""
        except BlockingIOError:
            k += 1
        except OSError:
            pass
    return k
print("trickling", held(trickle), "silent", held(silent), flush=True)
EOF
slow=$!
on_exit "kill $slow"
for _ in $(seq 100); do grep -q '^open' "$WORK/slow.out" && break; sleep 0.1; done
grep -q '^open 300' "$WORK/slow.out" || fail "slowloris could not connect: $(cat "$WORK/slow.out")"
sleep 1
read -r codes slow_max slow_med <<<"$(scrapes 20)"
rss1=$(rss)
wait $slow
read -r _ trickling _ silent <<<"$(tail -n 1 "$WORK/slow.out")"
echo "scrape latency (s): idle max $base_max median $base_med;" \
	"with 300 slow connections open max $slow_max median $slow_med"
echo "RSS: $rss0 KiB idle, $rss1 KiB with 300 slow connections;" \
	"after 13 s held: $trickling of 150 trickling, $silent of 150 silent"
[ "$codes" = 200 ] || fail "scrapes with 300 slow connections open: $codes"
# generous for a loaded 2-core CI machine; unblocked it is a few ms
awk -v m="$slow_max" 'BEGIN { exit !(m < 1) }' || fail "a scrape took $slow_max s beside slowloris"
[ "$silent" = 0 ] || fail "$silent silent connections outlived http_timeout (10 s)"
[ $((rss1 - rss0)) -lt 20480 ] || fail "300 slow connections cost $((rss1 - rss0)) KiB"

# --- oversized requests: libmicrohttpd's own answers at its 32 KiB bound
big=$(head -c 40000 /dev/zero | tr '\0' a)
[ "$(curl -s -o /dev/null -w '%{http_code}' "$url/metrics?$big")" = 414 ] || fail "huge URL: not 414"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$url/$big")" = 414 ] || fail "huge path: not 414"
[ "$(curl -s -o /dev/null -w '%{http_code}' -H "X-Big: $big" "$url/metrics")" = 431 ] ||
	fail "huge header: not 431"
hdrs=()
for i in $(seq 400); do hdrs+=(-H "X-Many-$i: ${big:0:100}"); done
[ "$(curl -s -o /dev/null -w '%{http_code}' "${hdrs[@]}" "$url/metrics")" = 431 ] ||
	fail "400 headers of 100 bytes: not 431"
# under the bound is served
[ "$(curl -s -o /dev/null -w '%{http_code}' "$url/metrics?${big:0:8000}")" = 200 ] ||
	fail "an 8000-byte query string: not 200"

# --- methods
for m in POST PUT DELETE OPTIONS TRACE PATCH BREW; do
	out=$(curl -s -D - -o /dev/null -X $m --data x "$url/metrics")
	case $out in "HTTP/1.1 405 "*) ;; *) fail "$m: $(head -n 1 <<<"$out")" ;; esac
	grep -qi '^Allow: GET, HEAD' <<<"$out" || fail "$m: 405 without Allow"
done

# --- load: wrk's natural rate on 4 connections; RSS after a warm-up as the base
wrk -t 1 -c 4 -d 2s "$url/metrics" >/dev/null 2>&1 || fail "wrk warm-up failed"
rss2=$(rss)
wrk -t 2 -c 4 -d "${WRK_SECS}s" --latency "$url/metrics" >"$WORK/wrk.out" 2>&1 ||
	fail "wrk failed: $(cat "$WORK/wrk.out")"
rss3=$(rss)
reqs=$(awk '/requests in/ { print $1 }' "$WORK/wrk.out")
rate=$(awk '/^Requests\/sec:/ { print $2 }' "$WORK/wrk.out")
p99=$(awk '$1 == "99%" { print $2 }' "$WORK/wrk.out")
echo "wrk ${WRK_SECS} s, 4 connections: $reqs requests, $rate/s, p99 $p99;" \
	"RSS $rss2 KiB before, $rss3 KiB after"
grep -q 'Socket errors' "$WORK/wrk.out" && fail "wrk: $(grep 'Socket errors' "$WORK/wrk.out")"
grep -q 'Non-2xx' "$WORK/wrk.out" && fail "wrk: $(grep 'Non-2xx' "$WORK/wrk.out")"
[ "${reqs:-0}" -gt 0 ] || fail "wrk made no requests"
[ $((rss3 - rss2)) -lt 8192 ] || fail "RSS grew $((rss3 - rss2)) KiB under load"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$url/metrics")" = 200 ] || fail "not serving after all that"
kill -0 "$AGENT_PID" || fail "agent died"
exit 0
