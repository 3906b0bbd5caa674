#!/bin/bash
# SPDX-License-Identifier: MIT
# Least privilege. A root start with --user nobody: once the probes, the
# sockets and the database are open the agent is uid/gid nobody with no
# groups, the main thread keeps exactly CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN
# and CAP_NET_RAW (the other threads none), the bounding set is empty, and
# it goes on: /metrics served, ticks written to the database (now nobody's),
# the bpf collector up, and up again after a SIGHUP reloads its probes with
# only those capabilities. Started as the packaged unit starts it (user
# nobody, those capabilities ambient, nothing else), the bpf collector is up
# too, and so it is started as the DaemonSet starts it (root with only the
# capabilities the manifest adds, no_new_privs) on the database a previous
# run gave away. An unknown user, or --user without root, is exit 1 at start.
. tests/lib.sh

[ "$(id -u)" = 0 ] || skip "needs root: BPF probes, switching users and setpriv(1)"
command -v setpriv >/dev/null || skip "setpriv (util-linux) not installed"
getent passwd nobody >/dev/null || skip "no user 'nobody' on this host"
NOBODY_UID=$(id -u nobody)
NOBODY_GID=$(id -g nobody)
# bits 12 CAP_NET_ADMIN, 13 CAP_NET_RAW, 38 CAP_PERFMON, 39 CAP_BPF
# (linux/capability.h)
KEPT=000000c000003000

bpf=$("$FABMON" doctor --db "$WORK/none.db" --interfaces lo --collectors bpf | awk '$1 == "bpf" { print $2 }')
[ "$bpf" = available ] || skip "the bpf collector is not available here even as root (fabmon doctor): nothing to keep"

# ready PORT PID LOG WHAT: waits (10 s at most) for an agent started by hand
ready() {
	i=0
	until curl -sf "http://127.0.0.1:$1/readyz" >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 100 ] && kill -0 "$2" 2>/dev/null || { cat "$3" >&2; fail "$4: not ready"; }
		sleep 0.1
	done
	[ "$(metric "$1" 'fabmon_collector_up{collector="bpf"}')" = 1 ] ||
		{ cat "$3" >&2; fail "$4: bpf collector down"; }
}

# status PID FIELD: the first value of a /proc/PID/status line
status() { awk -v f="$2:" '$1 == f { print $2; exit }' "/proc/$1/status"; }

# nobody must reach the database by path (the API opens it per request):
# a root-owned directory it can read, like make run's ./var
chmod 0711 "$WORK"
mkdir -m 0755 "$WORK/var"
db="$WORK/var/fabmon.db"
port=$(free_port)
# lo only: the tc probe stays off the interfaces other tests build
start_agent "$port" --db "$db" --interval 200ms --interfaces lo --user nobody
pid=$AGENT_PID

# --- who it is now
[ "$(status $pid Uid)" = "$NOBODY_UID" ] || fail "uid $(status $pid Uid), expected $NOBODY_UID"
awk '$1 == "Uid:" || $1 == "Gid:"' /proc/$pid/status | awk -v u="$NOBODY_UID" -v g="$NOBODY_GID" \
	'{ want = $1 == "Uid:" ? u : g; for (i = 2; i <= 5; i++) if ($i != want) bad = 1 }
	END { exit bad }' || fail "real, effective, saved and fs ids not all nobody's: $(grep -E '^(Uid|Gid)' /proc/$pid/status)"
[ -z "$(awk '$1 == "Groups:" { print $2 }' /proc/$pid/status)" ] ||
	fail "supplementary groups kept: $(grep Groups /proc/$pid/status)"
for f in CapEff CapPrm; do
	[ "$(status $pid $f)" = "$KEPT" ] || fail "$f $(status $pid $f), expected $KEPT"
done
[ "$(status $pid CapBnd)" = 0000000000000000 ] || fail "bounding set $(status $pid CapBnd)"
[ "$(status $pid CapAmb)" = 0000000000000000 ] || fail "ambient set $(status $pid CapAmb)"
echo "main thread: Uid $NOBODY_UID, CapEff $(status $pid CapEff), CapBnd $(status $pid CapBnd)"
threads=0
for t in /proc/$pid/task/*; do
	tid=${t##*/}
	[ "$tid" = "$pid" ] && continue
	threads=$((threads + 1))
	[ "$(status $pid/task/$tid Uid)" = "$NOBODY_UID" ] || fail "thread $tid is uid $(status $pid/task/$tid Uid)"
	[ "$(status $pid/task/$tid CapEff)" = 0000000000000000 ] ||
		fail "thread $tid kept CapEff $(status $pid/task/$tid CapEff)"
done
[ $threads -ge 1 ] || fail "no HTTP thread found"
echo "$threads other thread(s): uid $NOBODY_UID, no capabilities"
n=$(grep -c "running as user 'nobody' (uid $NOBODY_UID, gid $NOBODY_GID), capabilities: " "$WORK/agent.log")
[ "$n" = 1 ] || { cat "$WORK/agent.log" >&2; fail "the drop was logged $n times, expected once"; }
grep "running as user" "$WORK/agent.log"

# --- it goes on as nobody
for f in "$db" "$db-wal" "$db-shm"; do
	[ "$(stat -c %u "$f")" = "$NOBODY_UID" ] || fail "'$f' is not nobody's: $(stat -c %U "$f")"
done
[ "$(metric "$port" 'fabmon_collector_up{collector="bpf"}')" = 1 ] ||
	{ cat "$WORK/agent.log" >&2; fail "bpf collector down after the drop"; }
c1=$(stored_count "$db" fabmon_ticks_total)
sleep 1.5
c2=$(stored_count "$db" fabmon_ticks_total)
[ "$c2" -gt "$c1" ] || fail "database not written after the drop: $c1 then $c2 ticks stored"
[ "$(metric "$port" fabmon_store_up)" = 1 ] || fail "fabmon_store_up is not 1"
echo "ticks stored: $c1, then $c2; bpf collector up"
curl -sf "http://127.0.0.1:$port/api/v1/events" | jq -e '.status == "ok"' >/dev/null ||
	fail "the API cannot read the database as nobody"

# a reload releases and reloads the probes with the kept capabilities only
kill -HUP $pid
i=0
until grep -q "configuration reloaded" "$WORK/agent.log"; do
	i=$((i + 1)); [ $i -lt 50 ] || fail "no reload after SIGHUP"; sleep 0.1
done
sleep 0.6
[ "$(metric "$port" 'fabmon_collector_up{collector="bpf"}')" = 1 ] ||
	{ cat "$WORK/agent.log" >&2; fail "bpf collector down after a reload as nobody"; }
! grep -q "collector bpf unavailable" "$WORK/agent.log" ||
	{ cat "$WORK/agent.log" >&2; fail "the reload as nobody could not load the probes"; }
echo "SIGHUP: probes reloaded as nobody, bpf collector up"

kill -TERM $pid
i=0
while kill -0 $pid 2>/dev/null; do
	i=$((i + 1)); [ $i -lt 100 ] || fail "agent still running 10 s after SIGTERM"; sleep 0.1
done
wait $pid
rc=$?
[ $rc = 0 ] || fail "exit status $rc after SIGTERM, expected 0"
[ "$(sqlite3 "$db" 'PRAGMA integrity_check')" = ok ] || fail "database damaged"

# --- as the DaemonSet starts it (packaging/k8s): root with only the
# capabilities the manifest adds, no_new_privs, on the database the first
# run gave to nobody
dscaps=+bpf,+perfmon,+net_admin,+net_raw,+setuid,+setgid,+setpcap,+chown,+dac_override
port3=$(free_port)
setpriv --no-new-privs --bounding-set -all,$dscaps --inh-caps -all \
	"$FABMON" agent --listen "127.0.0.1:$port3" --db "$db" --interval 200ms --interfaces lo \
	--user nobody >"$WORK/ds.log" 2>&1 &
dpid=$!
on_exit "kill -9 $dpid"
ready "$port3" $dpid "$WORK/ds.log" "DaemonSet-style start"
[ "$(status $dpid CapEff)" = "$KEPT" ] && [ "$(status $dpid Uid)" = "$NOBODY_UID" ] ||
	fail "DaemonSet-style start: uid $(status $dpid Uid), CapEff $(status $dpid CapEff)"
kill -TERM $dpid
wait $dpid || fail "DaemonSet-style agent: exit status $? after SIGTERM"
echo "DaemonSet-style start (9 capabilities, no_new_privs, database already nobody's): as nobody, bpf up"

# --- as the systemd unit starts it: nobody with the four capabilities ambient
mkdir -m 0750 "$WORK/unit" && chown nobody: "$WORK/unit"
port2=$(free_port)
caps=+bpf,+perfmon,+net_admin,+net_raw
setpriv --reuid nobody --regid "$NOBODY_GID" --clear-groups --bounding-set -all,$caps \
	--inh-caps $caps --ambient-caps $caps \
	"$FABMON" agent --listen "127.0.0.1:$port2" --db "$WORK/unit/fabmon.db" --interval 200ms \
	--interfaces lo >"$WORK/unit.log" 2>&1 &
upid=$!
on_exit "kill -9 $upid"
ready "$port2" $upid "$WORK/unit.log" "unit-style start (ambient capabilities)"
[ "$(status $upid CapEff)" = "$KEPT" ] || fail "unit-style start: CapEff $(status $upid CapEff)"
kill -TERM $upid
wait $upid || fail "unit-style agent: exit status $? after SIGTERM"
echo "unit-style start (nobody, ambient capabilities): bpf collector up, CapEff $KEPT"

# --- refused at start, exit 1, before anything is opened
out=$("$FABMON" agent --listen 127.0.0.1:0 --db "$WORK/var/none.db" --user fabmon-no-such-user-$$ 2>&1)
rc=$?
[ $rc = 1 ] || fail "unknown user: exit $rc, expected 1 ($out)"
echo "$out" | grep -q "user 'fabmon-no-such-user-$$' (user): no such user" || fail "unknown user: '$out'"
[ ! -e "$WORK/var/none.db" ] || fail "unknown user: the database was created anyway"
echo "unknown user: exit 1: $out"
out=$(setpriv --reuid nobody --regid "$NOBODY_GID" --clear-groups \
	"$FABMON" agent --listen 127.0.0.1:0 --db "$WORK/unit/x.db" --user root 2>&1)
rc=$?
[ $rc = 1 ] || fail "--user root as nobody: exit $rc, expected 1 ($out)"
echo "$out" | grep -q "switching users needs root" || fail "--user without root: '$out'"
echo "--user without root: exit 1: $out"
exit 0
