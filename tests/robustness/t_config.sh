#!/bin/bash
# SPDX-License-Identifier: MIT
# Bad configurations, every key: the keys and their kinds come from
# `fabmon agent --help` (--KEY DURATION, N, REGEX, ...), the bounds from the
# agent's own error message ("expected an integer from 16 to 10000000").
# For each key a value of the wrong type, one just past each bound and an
# empty one must make --check-config exit 2 with FILE:LINE: bad value 'V' for
# 'KEY': expected ...; the bounds themselves pass. Then whole files: every
# truncation of the shipped config (exit 0, or 2 naming file and line; never
# anything else), a missing file, a directory, binary garbage (NUL bytes,
# random bytes), a line longer than the parser's buffer. Last, SIGHUP with
# each kind of bad file keeps the running configuration.
. tests/lib.sh

conf=$WORK/c.conf
checks=0

# check_config [ARGS...]: --check-config on $conf, with a database in $WORK
# (the default's directory is the package's)
check_config() { "$FABMON" agent --config "$conf" --db "$WORK/c.db" "$@" --check-config 2>&1; }

# check RC VALUE-LINE... : writes a file of the lines after a comment and
# [agent] (the first one at line 3) and runs --check-config; OUT is stderr
check_file() {
	want=$1; shift
	{ echo "# robustness"; echo "[agent]"; printf '%s\n' "$@"; } >"$conf"
	OUT=$(check_config)
	rc=$?
	checks=$((checks + 1))
	[ $rc = "$want" ] || fail "'$*': exit $rc, want $want: $OUT"
}

# bad KEY VALUE: must be refused at line 3, naming the value and the key
bad() {
	check_file 2 "$1 = $2"
	# inih trims the value as the agent sees it
	v=$(echo "$2" | sed 's/^ *//; s/ *$//')
	case "$OUT" in
	"fabmon: $conf:3: bad value '$v' for '$1': expected "?*) ;;
	*) fail "'$1 = $2': message without file, line, value, key and form: $OUT" ;;
	esac
}
good() { check_file 0 "$1 = $2"; }

# to_ms 100ms|1h|3660d: milliseconds
to_ms() {
	echo "$1" | awk '{ n = $0 + 0; u = $0; sub(/^[0-9.]+/, "", u)
		m = u == "ms" ? 1 : u == "s" || u == "" ? 1000 : u == "m" ? 60000 : u == "h" ? 3600000 : 86400000
		printf "%.0f", n * m }'
}

keys=$("$FABMON" agent --help | grep -o -- '--[a-z-]* [A-Z][A-Z:.,]*' | grep -v -- '^--config ' |
	sed 's/,$//' | sort -u)
[ "$(echo "$keys" | wc -l)" -ge 30 ] || fail "too few keys in fabmon agent --help: $keys"
nkeys=0
while read -r flag kind; do
	key=$(echo "${flag#--}" | tr - _)
	nkeys=$((nkeys + 1))
	long=$(head -c 5000 /dev/zero | tr '\0' a)
	case $kind in
	N | SECONDS | MBPS)
		for v in abc -1 1.5 12abc 0x10 "" " "; do bad "$key" "$v"; done
		form=$(echo "$OUT" | sed -n 's/.*from \([0-9]*\) .*to \([0-9]*\)$/\1 \2/p')
		[ -n "$form" ] || fail "$key: no 'from A to B' in: $OUT"
		set -- $form
		good "$key" "$1"
		good "$key" "$2"
		bad "$key" $(($2 + 1))
		[ "$1" -gt 0 ] && bad "$key" $(($1 - 1))
		bad "$key" 99999999999999999999999
		;;
	DURATION)
		for v in soon -1s 1x 0x10s 1e3ms "5 s" "1 h" ""; do bad "$key" "$v"; done
		lo=$(echo "$OUT" | sed -n 's/.*a duration from \([0-9a-z]*\) to .*/\1/p')
		hi=$(echo "$OUT" | sed -n 's/.*a duration \(from [0-9a-z]* \)\{0,1\}\(to\|up to\) \([0-9a-z]*\).*/\3/p')
		[ -n "$hi" ] || fail "$key: no bounds in: $OUT"
		good "$key" "$hi"
		bad "$key" "$(($(to_ms "$hi") + 1))ms"
		if [ -n "$lo" ]; then
			good "$key" "$lo"
			bad "$key" "$(($(to_ms "$lo") - 1))ms"
		fi
		;;
	ADDR:PORT)
		for v in nope 127.0.0.1 1.2.3.4:99999 : "[::1]9478" ""; do bad "$key" "$v"; done
		good "$key" 127.0.0.1:9478
		;;
	LIST)
		for v in nope netdev,nope; do bad "$key" "$v"; done
		good "$key" netdev,rdma
		;;
	REGEX)
		for v in "(" "[a-" "a{2,1}"; do bad "$key" "$v"; done
		good "$key" ""
		good "$key" "eth[0-9]+"
		;;
	PATH | DIR)
		bad "$key" ""
		good "$key" /tmp
		;;
	*) ;; # FILE,... and names: any text; only too long, below
	esac
	# every kind: a value longer than any buffer, as a flag (a file's line
	# is bounded by the parser, checked below)
	out=$("$FABMON" agent "$flag" "$long" --check-config 2>&1)
	rc=$?
	checks=$((checks + 1))
	[ $rc = 2 ] && case "$out" in "fabmon: $flag: bad value '"*"' for '$key': expected "*) true ;; *) false ;; esac ||
		fail "$flag with 5000 characters: exit $rc: ${out:0:200}"
done <<<"$keys"
echo "$nkeys keys from --help: wrong types, bounds, empty and too long values, $checks checks"

# whole files: every truncation of the shipped config
size=$(wc -c <packaging/fabmon.conf)
n=0
for cut in $(seq 0 23 "$size"); do
	head -c "$cut" packaging/fabmon.conf >"$conf"
	out=$(check_config)
	rc=$?
	n=$((n + 1))
	case $rc:$out in
	"0:configuration OK") ;;
	"2:fabmon: $conf:"[0-9]*": "?*) ;;
	"2:fabmon: sysfs_root '"*"': No such file or directory") ;; # /sys cut short
	*) fail "the shipped config cut at $cut bytes: exit $rc: $out" ;;
	esac
done
head -c 200 packaging/fabmon.conf | sed '$d' >"$conf"
printf 'interv' >>"$conf"
out=$(check_config)
line=$(wc -l <"$conf")
[ "$out" = "fabmon: $conf:$((line + 1)): syntax error: expected 'key = value' or '[agent]'" ] ||
	fail "a file cut in a key: $out"
echo "$n truncations of packaging/fabmon.conf: each OK or an error with file and line"

# expect_config RC PATTERN WHAT [ARGS...]: --check-config on $conf
expect_config() {
	out=$(check_config "${@:4}")
	rc=$?
	[ $rc = "$1" ] && case "$out" in $2) true ;; *) false ;; esac ||
		fail "$3: exit $rc: ${out:0:300}"
}
rm -f "$conf"
expect_config 2 "fabmon: unable to open '$conf': No such file or directory" "a missing file"
conf_save=$conf conf=$WORK
expect_config 2 "fabmon: unable to open '$WORK': not a regular file" "a directory"
# a FIFO would block the read until a writer came: refused at once
conf=$WORK/fifo.conf
mkfifo "$conf"
out=$(timeout 5 "$FABMON" agent --config "$conf" --db "$WORK/c.db" --check-config 2>&1)
rc=$?
[ $rc = 2 ] && [ "$out" = "fabmon: unable to open '$conf': not a regular file" ] ||
	fail "--check-config on a FIFO: exit $rc (124: it hung): $out"
out=$(timeout 5 "$FABMON" agent --web-config-file "$conf" --db "$WORK/c.db" --check-config 2>&1)
rc=$?
[ $rc = 2 ] && [ "$out" = "fabmon: unable to open '$conf': not a regular file" ] ||
	fail "--check-config with a FIFO for the web config: exit $rc (124: it hung): $out"
printf 'tls_server_config:\n  cert_file: fifo.conf\n  key_file: fifo.conf\n' >"$WORK/web.yml"
out=$(timeout 5 "$FABMON" agent --web-config-file "$WORK/web.yml" --db "$WORK/c.db" --check-config 2>&1)
rc=$?
[ $rc = 2 ] && [ "$out" = "fabmon: $WORK/web.yml:2: unable to read '$WORK/fifo.conf' for 'cert_file': not a regular file" ] ||
	fail "--check-config with a FIFO for the certificate: exit $rc (124: it hung): $out"
rm -f "$conf"
conf=$conf_save
printf '[agent]\n\0\0\0\n\0garbage\n' >"$conf"
expect_config 2 "fabmon: $conf:2: a NUL byte: expected a text file" "NUL bytes"
awk 'BEGIN { srand(8); for (i = 0; i < 4096; i++) printf "%c", int(rand() * 255) + 1 }' >"$conf"
expect_config 2 "fabmon: $conf:[0-9]*: *" "random bytes"
printf '[agent]\ninterfaces = %s\ninterval = 5s\n' "$(head -c 250 /dev/zero | tr '\0' a)" >"$conf"
expect_config 2 "fabmon: $conf:2: line too long: expected at most 198 characters a line" \
	"a line longer than the parser's buffer"
printf '[agent]\ninterfaces = %s\n' "$(head -c 185 /dev/zero | tr '\0' a)" >"$conf"
expect_config 0 "configuration OK" "a long line within the bound"
echo "missing file, directory, FIFO, NUL bytes, random bytes, long lines: refused with file (and line)"

# a key given twice: the last would win unseen, so both lines are named
printf '[agent]\ninterval = 1s\n# later\ninterval = 2s\n' >"$conf"
expect_config 2 "fabmon: $conf:4: duplicate key 'interval' (first at $conf:2): expected each key once" \
	"a key given twice"
out=$(timeout 5 "$FABMON" agent --config "$conf" --db "$WORK/d.db" --listen 127.0.0.1:0 2>&1)
rc=$?
[ $rc = 2 ] && case $out in *"$conf:4: duplicate key 'interval'"*) true ;; *) false ;; esac ||
	fail "the agent with a key given twice: exit $rc: $out"
# what a start would find wrong on this host: --check-config finds it first
printf '[agent]\nuser = fabmon-no-such-user\n' >"$conf"
expect_config 2 "fabmon: user 'fabmon-no-such-user' (user): no such user" "a user that does not exist"
printf '[agent]\n' >"$conf"
expect_config 2 "fabmon: db '$WORK/none/c.db': its directory '$WORK/none': No such file or directory" \
	"a database in a missing directory" --db "$WORK/none/c.db"
expect_config 2 "fabmon: sysfs_root '$WORK/nosys': No such file or directory" "a missing sysfs_root" \
	--sysfs-root "$WORK/nosys"
printf 'tls_server_config: [\n' >"$WORK/web.yml"
expect_config 2 "fabmon: $WORK/web.yml:1: *" "a web config that does not parse" \
	--web-config-file "$WORK/web.yml"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
	chmod 0711 "$WORK"
	mkdir -m 0700 "$WORK/private"
	expect_config 2 "fabmon: db '$WORK/private/c.db': user 'nobody' (user) cannot reach its directory '$WORK/private': Permission denied" \
		"a database directory the user cannot reach" --db "$WORK/private/c.db" --user nobody
	# root opens the database and gives it to the user: root's directory
	# will do, if the user can reach it
	chmod 0711 "$WORK/private"
	expect_config 0 "configuration OK" "root's directory the user can reach" \
		--db "$WORK/private/c.db" --user nobody
	# started as nobody, the agent makes the database itself
	out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$FABMON" agent --config "$conf" \
		--db "$WORK/private/c.db" --check-config 2>&1)
	rc=$?
	[ $rc = 2 ] && [ "$out" = "fabmon: db '$WORK/private/c.db': its directory '$WORK/private' is not writable by uid 65534: Permission denied" ] ||
		fail "started as nobody, a directory of root's: exit $rc: $out"
	echo "the database's directory checked as the user (root-owned, 0700 and 0711)"
fi
echo "--check-config: a key given twice, a missing user, directory, sysfs root, a bad web config"

# SIGHUP with each kind of bad file keeps the running configuration
# (t_signals.sh reloads a bad value)
printf '[agent]\ninterval = 200ms\ncollectors = netdev\n' >"$conf"
port=$(free_port)
start_agent "$port" --config "$conf" --db "$WORK/h.db" --interfaces lo
reloads=0
hup() { # NAME: the file as it is now must be refused, and 200ms kept
	kill -HUP "$AGENT_PID"
	reloads=$((reloads + 1))
	for _ in $(seq 30); do
		[ "$(grep -c 'keeping the running configuration' "$WORK/agent.log")" = $reloads ] && break
		sleep 0.1
	done
	[ "$(grep -c 'keeping the running configuration' "$WORK/agent.log")" = $reloads ] ||
		{ cat "$WORK/agent.log"; fail "SIGHUP with $1: not refused"; }
	kill -0 "$AGENT_PID" || fail "SIGHUP with $1: the agent died"
	[ "$(metric "$port" fabmon_tick_interval_seconds)" = 0.2 ] ||
		fail "SIGHUP with $1: running configuration not kept"
}
head -c 30 packaging/fabmon.conf >"$conf"
printf '\n[agent]\ninterval = 1s\nlis' >>"$conf"
hup "a truncated file"
printf '[agent]\ninterval = 1s\n\0\0' >"$conf"
hup "NUL bytes"
printf '[agent]\ninterval = 1s\nmax_series = 3\n' >"$conf"
hup "a value out of range"
printf '[agent]\ninterval = 1s\ndb =\n' >"$conf"
hup "an empty db"
printf '[agent]\ninterval = 1s\ninterval = 1s\n' >"$conf"
hup "a key given twice"
rm -f "$conf"
hup "a missing file"
# a FIFO: the read would wait for a writer, and the ticks must not
mkfifo "$conf"
t0=$(metric "$port" fabmon_ticks_total)
kill -HUP "$AGENT_PID"
reloads=$((reloads + 1))
sleep 1
t1=$(metric "$port" fabmon_ticks_total)
[ "$t1" -ge $((t0 + 3)) ] || fail "SIGHUP with a FIFO at the config path: the ticks stopped ($t0, then $t1 a second later)"
grep -q "reload: unable to open '$conf': not a regular file; keeping the running configuration" \
	"$WORK/agent.log" || fail "SIGHUP with a FIFO at the config path: not refused"
[ "$(metric "$port" fabmon_tick_interval_seconds)" = 0.2 ] ||
	fail "SIGHUP with a FIFO: running configuration not kept"
rm -f "$conf"
grep 'reload:' "$WORK/agent.log"
printf '[agent]\ninterval = 300ms\n' >"$conf"
kill -HUP "$AGENT_PID"
for _ in $(seq 30); do
	[ "$(metric "$port" fabmon_tick_interval_seconds)" = 0.3 ] && break
	sleep 0.1
done
[ "$(metric "$port" fabmon_tick_interval_seconds)" = 0.3 ] || fail "a good file after bad ones not loaded"
echo "SIGHUP: $reloads bad files refused, the running configuration kept; a good one then loaded"
exit 0
