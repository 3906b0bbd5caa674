#!/bin/bash
# SPDX-License-Identifier: MIT
# fabmon locate against Debian's Prometheus holding a synthetic fabric's
# history (tests/bench/synth_fabric.py, loaded with promtool tsdb
# create-blocks-from openmetrics): 16 nodes on 4 leaves and 2 spines, four
# windows one after another — clean, a paused host, loss on one spine-leaf
# link, a port counting errors. In each window locate names the culprit
# top-1 (and nobody in the clean one), in a bounded number of queries; the
# host and its own access link, which the paths cannot tell apart, are
# listed together and said to be. --json and --csv say the same; an
# unreachable Prometheus or a refused query exit 1, usage errors 2; basic
# auth reaches a Prometheus that asks for it, over http and over https.
. tests/lib.sh
command -v prometheus >/dev/null || skip "no prometheus (make deps)"
command -v promtool >/dev/null || skip "no promtool (make deps)"
command -v jq >/dev/null || skip "no jq (make deps)"
command -v python3 >/dev/null || skip "no python3"

# four windows of 6 minutes ending a minute ago, at 5 s
start=$(($(date +%s) / 60 * 60 - 25 * 60))
python3 tests/bench/synth_fabric.py --start $start --window 360 --interval 5 \
	--faults clean,host,link,port >"$WORK/om.txt" 2>"$WORK/culprits" || fail "synth_fabric.py"
promtool tsdb create-blocks-from openmetrics "$WORK/om.txt" "$WORK/tsdb" >"$WORK/blocks" 2>&1 ||
	{ cat "$WORK/blocks"; fail "promtool refused the synthetic history"; }
printf 'global:\n  scrape_interval: 15s\n' >"$WORK/prometheus.yml"
port=$(free_port)
# the password's bcrypt hash for Prometheus' web config
pass=s3cret
hash=$(htpasswd -nbBC 10 "" "$pass" | tr -d ':\n')
printf 'basic_auth_users:\n  ops: %s\n' "$hash" >"$WORK/web.yml"
echo "$pass" >"$WORK/pass"
# prom_up URL [CURL ARGS...]: Prometheus on the history with web.yml at
# URL, ready (15 s at most) to curl with the password and CURL ARGS.
prom_up() {
	u=$1
	shift
	prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
		--web.listen-address="127.0.0.1:$port" --web.config.file="$WORK/web.yml" \
		--log.level=warn >"$WORK/prometheus.log" 2>&1 &
	prom=$!
	on_exit "kill $prom"
	for _ in $(seq 60); do
		curl -sf -u "ops:$pass" "$@" "$u/-/ready" >/dev/null 2>&1 && return 0
		kill -0 $prom 2>/dev/null || break
		sleep 0.25
	done
	cat "$WORK/prometheus.log"
	fail "prometheus not ready at $u"
}
url=http://127.0.0.1:$port
auth="--user ops --password-file $WORK/pass"
prom_up "$url"

# locate each window (from 30 s in: the look back of the one before is past)
# shellcheck disable=SC2086 # auth is a list
while read -r w lo hi kind culprit; do
	"$FABMON" locate --prometheus "$url" $auth --since $((lo + 30)) --until $((hi - 1)) --json \
		>"$WORK/w$w.json" 2>"$WORK/err" || { cat "$WORK/err"; fail "locate, window $kind"; }
	top=$(jq -r '.suspects[0] | "\(.kind) \(.suspect)"' "$WORK/w$w.json")
	queries=$(jq .queries "$WORK/w$w.json")
	[ "$queries" -le 8 ] || fail "window $kind: $queries queries"
	case $kind in
	clean) [ "$(jq '.suspects | length' "$WORK/w$w.json")" = 0 ] ||
		fail "clean window names suspects: $(jq -c .suspects "$WORK/w$w.json")" ;;
	host) [ "$top" = "host $culprit" ] || fail "paused host $culprit: top-1 '$top'"
		# the host and its access link: the same lossy paths, a tie said so
		[ "$(jq -r '.suspects[1].suspect' "$WORK/w$w.json")" = "$culprit - $(echo "$culprit" |
			awk -F. '{ printf "198.19.1.%d", int(($3 * 250 + $4 - 1) / 4) + 1 }')" ] ||
			fail "the host's access link is not second: $(jq -c '.suspects[1]' "$WORK/w$w.json")"
		jq -e '.suspects[0].tied_with | index(2)' "$WORK/w$w.json" >/dev/null ||
			fail "host and its link not said to be inseparable: $(jq -c '.suspects[0]' "$WORK/w$w.json")" ;;
	link) [ "$top" = "link $culprit" ] || fail "lossy link $culprit: top-1 '$top'" ;;
	port) case "$top" in "port $culprit -> leaf"*) ;; *) fail "port $culprit: top-1 '$top'" ;; esac ;;
	esac
	echo "window $kind: top-1 '$top' ($queries queries)"
done <"$WORK/culprits"

# from the very start of the window after the paused host's: the host's
# events closed at that start, so a step's look back still sees them, but
# they were never open in the window: the host is not a suspect
read -r _ _ _ _ host < <(grep ' host ' "$WORK/culprits")
read -r _ lo hi _ _ < <(grep -A1 ' host ' "$WORK/culprits" | tail -n 1)
# shellcheck disable=SC2086 # auth is a list
"$FABMON" locate --prometheus "$url" $auth --since "$lo" --until $((hi - 1)) --json >"$WORK/after.json" ||
	fail "locate, the window after the paused host's"
jq -e --arg h "$host" '[.suspects[] | select(.suspect == $h)] | length == 0' "$WORK/after.json" \
	>/dev/null || fail "the window after the pause names the paused host: $(jq -c .suspects "$WORK/after.json")"
echo "window after the pause, from its start: $(jq '.suspects | length' "$WORK/after.json") suspects, not $host"

# the table and CSV tell the same top-1
read -r _ lo hi _ culprit < <(sed -n 3p "$WORK/culprits")
"$FABMON" locate --prometheus "$url" $auth --since $((lo + 30)) --until $((hi - 1)) >"$WORK/table"
grep -qE "^ +1 +1\.00 +link +$culprit +on [0-9]+ of [0-9]+ lossy paths" "$WORK/table" ||
	fail "table: $(cat "$WORK/table")"
"$FABMON" locate --prometheus "$url" $auth --since $((lo + 30)) --until $((hi - 1)) --csv >"$WORK/csv"
[ "$(head -n 1 "$WORK/csv")" = "rank,score,kind,suspect,failing,of,first_seen,reported_by,tie" ] ||
	fail "CSV header: $(head -n 1 "$WORK/csv")"
grep -q "^1,1.000,link,\"$culprit\"," "$WORK/csv" || fail "CSV: $(head -n 2 "$WORK/csv")"

# errors: without the password Prometheus says 401 (exit 1); nobody listening
# (exit 1); usage (exit 2)
"$FABMON" locate --prometheus "$url" >/dev/null 2>"$WORK/err"
[ $? = 1 ] || fail "no credentials: not exit 1"
grep -q "HTTP 401" "$WORK/err" || fail "no credentials: $(cat "$WORK/err")"
"$FABMON" locate --prometheus "http://127.0.0.1:$(free_port)" >/dev/null 2>"$WORK/err"
[ $? = 1 ] || fail "nobody listening: not exit 1"
for args in "" "--prometheus ftp://x" "--prometheus $url --since nonsense" \
	"--prometheus $url --cert a.pem" "--prometheus $url --user ops" "--prometheus $url --db x"; do
	# shellcheck disable=SC2086
	"$FABMON" locate $args >/dev/null 2>"$WORK/err"
	rc=$?
	[ $rc = 2 ] || fail "fabmon locate $args: exit $rc, want 2"
done
"$FABMON" locate --help | grep -q -- '--password-file' || fail "--help"
echo "locate: table, CSV, basic auth; errors exit 1 (Prometheus) and 2 (usage)"

# TLS end to end: the same Prometheus behind https (its web config's
# tls_server_config; a CA and a server certificate for 127.0.0.1 made with
# openssl as tests/e2e/t_tls.sh makes them) with basic auth. locate with
# --ca-file and the password answers as over http; without the CA the
# certificate is refused (exit 1).
command -v openssl >/dev/null || skip "no openssl (make deps)"
kill $prom
wait $prom 2>/dev/null
ssl() { openssl "$@" 2>>"$WORK/openssl.log" || fail "openssl $1: $(tail -3 "$WORK/openssl.log")"; }
ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
# shellcheck disable=SC2086 # ec is a list
ssl req -x509 $ec -keyout "$WORK/ca.key" -out "$WORK/ca.crt" -days 2 -subj /CN=fabmon-t-locate-ca
# shellcheck disable=SC2086
ssl req $ec -keyout "$WORK/server.key" -out "$WORK/server.csr" -subj /CN=localhost
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$WORK/server.ext"
ssl x509 -req -in "$WORK/server.csr" -CA "$WORK/ca.crt" -CAkey "$WORK/ca.key" -CAcreateserial \
	-out "$WORK/server.crt" -days 2 -extfile "$WORK/server.ext"
printf 'tls_server_config:\n  cert_file: %s\n  key_file: %s\n' "$WORK/server.crt" \
	"$WORK/server.key" >>"$WORK/web.yml"
surl=https://127.0.0.1:$port
prom_up "$surl" --cacert "$WORK/ca.crt"
# shellcheck disable=SC2086 # auth is a list
"$FABMON" locate --prometheus "$surl" --ca-file "$WORK/ca.crt" $auth --since $((lo + 30)) \
	--until $((hi - 1)) --csv >"$WORK/tls.csv" 2>"$WORK/err" || fail "locate over https: $(cat "$WORK/err")"
cmp -s "$WORK/csv" "$WORK/tls.csv" || fail "locate over https says otherwise: $(head -n 2 "$WORK/tls.csv")"
# shellcheck disable=SC2086
"$FABMON" locate --prometheus "$surl" $auth >/dev/null 2>"$WORK/err"
[ $? = 1 ] || fail "https without the CA: not exit 1"
echo "locate over https with basic auth: the same answer; an unknown CA refused (exit 1)"
