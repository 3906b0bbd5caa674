#!/bin/bash
# SPDX-License-Identifier: MIT
# TLS and basic authentication from a web config (exporter-toolkit's form),
# with real curl over loopback: a CA, a server and a client certificate made
# here with openssl, a bcrypt hash from htpasswd. HTTPS with the CA, plain
# HTTP refused; 401 without or with wrong credentials, 200 with the right
# ones, /healthz open; each client_auth_type with no, a foreign and the CA's
# client certificate; TLS 1.0/1.1 refused (curl shown able to speak them to
# openssl s_server first), 1.2 and 1.3 served, 1.2 refused at min_version
# TLS13; bad web configs are exit 2 with FILE:LINE from --check-config.
. tests/lib.sh

for t in openssl curl htpasswd; do
	command -v $t >/dev/null || skip "$t not installed (make deps)"
done

# --- the PKI: a CA, a server certificate for 127.0.0.1, a client one, and a
# client certificate no one signed
cd "$WORK" || fail "no work dir"
ssl() { openssl "$@" 2>>"$WORK/openssl.log" || fail "openssl $1 failed: $(tail -3 "$WORK/openssl.log")"; }
ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
ssl req -x509 $ec -keyout ca.key -out ca.crt -days 2 -subj /CN=fabmon-t-tls-ca
ssl req $ec -keyout server.key -out server.csr -subj /CN=localhost
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >server.ext
ssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 \
	-extfile server.ext
ssl req $ec -keyout client.key -out client.csr -subj /CN=prometheus
printf 'extendedKeyUsage=clientAuth\n' >client.ext
ssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAserial ca.srl -out client.crt -days 2 \
	-extfile client.ext
ssl req -x509 $ec -keyout rogue.key -out rogue.crt -days 2 -subj /CN=rogue
# cost 10, exporter-toolkit's example; -n prints "user:hash"
hash=$(htpasswd -nbBC 10 prometheus 's3cret pass' | cut -d: -f2-)
case $hash in '$2y$10$'*) ;; *) fail "htpasswd gave no bcrypt hash: $hash" ;; esac
cd - >/dev/null || fail "no repository dir"

CLIENT="--cert $WORK/client.crt --key $WORK/client.key"
ROGUE="--cert $WORK/rogue.crt --key $WORK/rogue.key"
AUTH=(-u "prometheus:s3cret pass")
# code ARGS...: the HTTP status curl got over TLS with the test's CA, 000 if none
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert "$WORK/ca.crt" "$@"; }

# web FILE [CLIENT_AUTH_TYPE [MIN_VERSION]]: a web config with the test's
# certificates (relative names: beside the file) and one user
web() {
	{
		echo "tls_server_config:"
		echo "  cert_file: server.crt"
		echo "  key_file: server.key"
		[ -n "${2:-}" ] && echo "  client_auth_type: $2"
		case ${2:-} in *Verify*) echo "  client_ca_file: ca.crt" ;; esac
		[ -n "${3:-}" ] && echo "  min_version: $3"
		echo "basic_auth_users:"
		echo "  prometheus: '$hash'"
	} >"$WORK/$1"
}

# tls_agent WEBFILE: an agent serving HTTPS on $port, ready when /readyz
# answers over TLS (with the client certificate, which every policy takes)
tls_agent() {
	[ -n "${AGENT_PID:-}" ] && { kill "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null; }
	port=$(free_port)
	"$FABMON" agent --listen "127.0.0.1:$port" --db "$WORK/t.db" --collectors netdev \
		--web-config-file "$WORK/$1" >>"$WORK/agent.log" 2>&1 &
	AGENT_PID=$!
	on_exit "kill -9 $AGENT_PID"
	for _ in $(seq 100); do
		[ "$(code $CLIENT "https://127.0.0.1:$port/readyz")" = 200 ] && return 0
		kill -0 $AGENT_PID 2>/dev/null || { cat "$WORK/agent.log" >&2; fail "agent exited"; }
		sleep 0.1
	done
	cat "$WORK/agent.log" >&2
	fail "agent not ready over TLS after 10 s"
}

# --- TLS and basic auth, no client certificates
web plain.yml
tls_agent plain.yml
url=https://127.0.0.1:$port
[ "$(code "${AUTH[@]}" "$url/metrics")" = 200 ] || fail "right password over TLS: not 200"
curl -sf --cacert "$WORK/ca.crt" "${AUTH[@]}" "$url/metrics" | grep -q '^fabmon_tick_interval_seconds ' ||
	fail "no metrics over TLS"
[ "$(code "$url/metrics")" = 401 ] || fail "no credentials: not 401"
curl -s -D - -o /dev/null --cacert "$WORK/ca.crt" "$url/metrics" |
	grep -qi '^WWW-Authenticate: Basic realm="fabmon"' || fail "401 without WWW-Authenticate"
[ "$(code -u prometheus:wrong "$url/metrics")" = 401 ] || fail "wrong password: not 401"
[ "$(code -u 'nobody:s3cret pass' "$url/metrics")" = 401 ] || fail "unknown user: not 401"
[ "$(code -u prometheus: "$url/metrics")" = 401 ] || fail "empty password: not 401"
for p in / /api/v1/events /nope; do
	[ "$(code "$url$p")" = 401 ] || fail "$p without credentials: not 401"
done
[ "$(code "$url/healthz")" = 200 ] || fail "/healthz needs no password, got $(code "$url/healthz")"
[ "$(code "$url/readyz")" = 200 ] || fail "/readyz needs no password"
# the server's certificate is the test CA's: without it curl must refuse
curl -s -o /dev/null --max-time 5 "$url/healthz" && fail "server certificate trusted without the CA"
# plain HTTP to the TLS port gets no HTTP answer
out=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$port/healthz")
[ "$out" = 000 ] || fail "plain HTTP to the TLS port answered $out"

# bcrypt's cost, first use against the cache (printed, not asserted)
t1=$(curl -s -o /dev/null -w '%{time_total}' --cacert "$WORK/ca.crt" -u 'prometheus:s3cret pass' \
	"$url/api/v1/events")
t2=$(curl -s -o /dev/null -w '%{time_total}' --cacert "$WORK/ca.crt" -u prometheus:wrong "$url/metrics")
t3=$(curl -s -o /dev/null -w '%{time_total}' --cacert "$WORK/ca.crt" "${AUTH[@]}" "$url/metrics")
echo "request times (s): cached right password $t1, wrong password (bcrypt cost 10) $t2, cached $t3"

# TLS versions: curl can speak 1.0 and 1.1 here (openssl s_server answers),
# and the agent refuses them; 1.2 and 1.3 are served
old="--ciphers DEFAULT@SECLEVEL=0"
sport=$(free_port)
openssl s_server -accept "127.0.0.1:$sport" -cert "$WORK/server.crt" -key "$WORK/server.key" \
	-tls1 -cipher 'DEFAULT@SECLEVEL=0' -www -quiet >/dev/null 2>&1 &
spid=$!
on_exit "kill $spid"
for _ in $(seq 50); do (echo >/dev/tcp/127.0.0.1/$sport) 2>/dev/null && break; sleep 0.1; done
[ "$(code --tlsv1.0 --tls-max 1.0 $old "https://127.0.0.1:$sport/")" = 200 ] ||
	skip "this curl cannot speak TLS 1.0 even to openssl s_server: the refusal would prove nothing"
kill $spid
for v in 1.0 1.1; do
	out=$(code --tlsv$v --tls-max $v $old "$url/healthz")
	[ "$out" = 000 ] || fail "TLS $v accepted (HTTP $out)"
done
for v in 1.2 1.3; do
	[ "$(code --tlsv$v --tls-max $v "$url/healthz")" = 200 ] || fail "TLS $v refused"
	curl -sv --cacert "$WORK/ca.crt" --tlsv$v --tls-max $v "$url/healthz" 2>&1 |
		grep -q "SSL connection using TLSv$v" || fail "TLS $v: not what was negotiated"
done

web tls13.yml "" TLS13
tls_agent tls13.yml
url=https://127.0.0.1:$port
[ "$(code --tlsv1.2 --tls-max 1.2 "$url/healthz")" = 000 ] || fail "min_version TLS13: 1.2 served"
[ "$(code --tlsv1.3 "$url/healthz")" = 200 ] || fail "min_version TLS13: 1.3 refused"

# --- client certificates: none, a foreign one, the CA's, per policy
# (expect: the three statuses; 000 is a refused handshake)
policy() {
	web "$1.yml" "$1"
	tls_agent "$1.yml"
	url=https://127.0.0.1:$port
	got="$(code "${AUTH[@]}" "$url/metrics") $(code "${AUTH[@]}" $ROGUE "$url/metrics")"
	got="$got $(code "${AUTH[@]}" $CLIENT "$url/metrics")"
	[ "$got" = "$2" ] || fail "$1: none, foreign, CA's client certificate gave $got, want $2"
	echo "$1: $got"
}
policy RequireAndVerifyClientCert "000 000 200"
[ "$(code $CLIENT "$url/metrics")" = 401 ] || fail "a client certificate does not replace the password"
policy VerifyClientCertIfGiven "200 000 200"
policy RequireAnyClientCert "000 200 200"
policy RequestClientCert "200 200 200"
policy NoClientCert "200 200 200"

# SIGHUP leaves the web config alone, and says a restart applies it
kill -HUP "$AGENT_PID"
for _ in $(seq 50); do grep -q "web config .* read at start only" "$WORK/agent.log" && break; sleep 0.1; done
grep -q "reload: the web config ('$WORK/NoClientCert.yml') is read at start only" "$WORK/agent.log" ||
	fail "SIGHUP: no restart notice for the web config"
[ "$(code "${AUTH[@]}" "$url/metrics")" = 200 ] || fail "SIGHUP: TLS or auth lost"
kill "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null
AGENT_PID=""

# --- bad web configs: --check-config exit 2, FILE:LINE and what is wrong
check_bad() { # NAME TEXT MESSAGE (a grep -F pattern after the file name)
	printf '%s' "$2" >"$WORK/$1"
	out=$("$FABMON" agent --web-config-file "$WORK/$1" --check-config 2>&1)
	rc=$?
	[ $rc = 2 ] || fail "$1: --check-config exit $rc, want 2 ($out)"
	case $out in "fabmon: $WORK/$1$3"*) ;; *) fail "$1: got '$out', want '$WORK/$1$3...'" ;; esac
}
out=$("$FABMON" agent --web-config-file "$WORK/absent.yml" --check-config 2>&1)
[ $? = 2 ] || fail "missing web config: not exit 2"
[ "$out" = "fabmon: unable to open '$WORK/absent.yml': No such file or directory" ] ||
	fail "missing web config: $out"
check_bad yaml.yml $'tls_server_config:\n  cert_file: server.crt\n key_file: server.key\n' \
	":3: YAML syntax error"
check_bad key.yml $'tls_server_config:\n  cert_file: server.crt\n  keyfile: server.key\n' \
	":3: unknown key 'keyfile' in 'tls_server_config'"
check_bad hash.yml $'basic_auth_users:\n  prometheus: s3cret\n' \
	":2: bad hash for user 'prometheus': expected a bcrypt hash"
check_bad cert.yml $'tls_server_config:\n  cert_file: nope.crt\n  key_file: server.key\n' \
	":2: unable to read '$WORK/nope.crt' for 'cert_file': No such file or directory"
check_bad pair.yml $'tls_server_config:\n  cert_file: server.crt\n  key_file: rogue.key\n' \
	":2: 'cert_file' 'server.crt' and 'key_file' 'rogue.key': "
check_bad old.yml $'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  min_version: TLS10\n' \
	":4: bad value 'TLS10' for 'min_version': TLS 1.0 and 1.1 are not offered"
check_bad ca.yml $'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: RequireAndVerifyClientCert\n' \
	":4: 'client_auth_type' RequireAndVerifyClientCert needs 'client_ca_file'"
# the same through the INI key, and the agent itself refuses to start
printf '[agent]\nweb_config_file = %s\n' "$WORK/hash.yml" >"$WORK/fabmon.conf"
out=$("$FABMON" agent --config "$WORK/fabmon.conf" --db "$WORK/t.db" --listen 127.0.0.1:0 2>&1)
[ $? = 2 ] || fail "agent with a bad web config: not exit 2 ($out)"
case $out in *"$WORK/hash.yml:2: bad hash"*) ;; *) fail "agent with a bad web config: $out" ;; esac
web good.yml
printf '[agent]\nweb_config_file = %s\n' "$WORK/good.yml" >"$WORK/fabmon.conf"
[ "$("$FABMON" agent --config "$WORK/fabmon.conf" --db "$WORK/t.db" --check-config)" = \
	"configuration OK" ] ||
	fail "a good web config through the INI key: not OK"
exit 0
