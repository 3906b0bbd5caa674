#!/bin/bash
# SPDX-License-Identifier: MIT
# The CLI contract: --help on every command, exit 0 ok / 1 runtime / 2 usage,
# --check-config, config errors with file and line, doctor's reasons.
. tests/lib.sh

expect_rc() {
	want=$1; shift
	"$@" >"$WORK/out" 2>&1
	rc=$?
	[ $rc -eq "$want" ] || { cat "$WORK/out" >&2; fail "'$*' exited $rc, want $want"; }
}
expect_out() { grep -q -- "$1" "$WORK/out" || { cat "$WORK/out" >&2; fail "no '$1' in output"; }; }

expect_rc 0 "$FABMON" --help; expect_out "commands:"
expect_rc 2 "$FABMON"
expect_rc 2 "$FABMON" frobnicate; expect_out "unknown command 'frobnicate'"
for c in agent doctor version; do
	expect_rc 0 "$FABMON" $c --help; expect_out "usage: fabmon $c"
done
expect_rc 0 "$FABMON" version; expect_out "^fabmon [0-9]"
expect_rc 2 "$FABMON" agent --no-such-flag
expect_rc 2 "$FABMON" agent --interval fast; expect_out "bad value 'fast' for 'interval'"
expect_rc 2 "$FABMON" agent --listen 9478; expect_out "expected ADDR:PORT"
expect_rc 2 "$FABMON" agent --collectors netdev,nope; expect_out "for 'collectors'"

# --check-config on the shipped file (its database's directory is the
# package's: one of this test's instead) and on broken ones
expect_rc 0 "$FABMON" agent --config packaging/fabmon.conf --db "$WORK/ok.db" --check-config
expect_out "^configuration OK$"
printf '[agent]\ninterval = 1s\nlisten = 127.0.0.1:1\nbogus_key = 1\n' >"$WORK/bad.conf"
expect_rc 2 "$FABMON" agent --config "$WORK/bad.conf" --check-config
expect_out "$WORK/bad.conf:4: unknown key 'bogus_key'"
printf '[agent]\nretention = forever\n' >"$WORK/bad2.conf"
expect_rc 2 "$FABMON" agent --config "$WORK/bad2.conf" --check-config
expect_out "bad.conf\|bad2.conf:2: bad value 'forever' for 'retention': expected a duration"
expect_rc 2 "$FABMON" agent --config "$WORK/none.conf" --check-config; expect_out "unable to open"

# a database that cannot be opened: clear error, exit 1
expect_rc 1 "$FABMON" agent --listen 127.0.0.1:0 --db /nonexistent-dir/x.db
expect_out "unable to open database"
echo "not a database, just some text that fills more than a header ......................" >"$WORK/junk.db"
expect_rc 1 "$FABMON" agent --listen 127.0.0.1:0 --db "$WORK/junk.db"
expect_out "junk.db"

# doctor on the real fixtures: rdma available; on an empty root: the reasons
expect_rc 0 "$FABMON" doctor --sysfs-root "$SHARED_FIXTURES/sysfs" --collectors netdev,rdma --db "$WORK/d.db"
expect_out "^rdma  *available"
mkdir -p "$WORK/empty/class"
expect_rc 0 "$FABMON" doctor --sysfs-root "$WORK/empty" --db "$WORK/d.db"
expect_out "no RDMA devices under $WORK/empty/class/infiniband"
expect_out "^netdev  *unavailable"
expect_rc 1 "$FABMON" doctor --sysfs-root "$WORK/empty" --db "$WORK/junk.db"
expect_out "is not a fabmon database"
# without privilege the bpf collector is down, with the reason
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	expect_rc 0 setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
		--bounding-set=-all "$FABMON" doctor --collectors bpf --db /nonexistent/x.db
	expect_out "^bpf  *unavailable"
	expect_out "needs root or CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN"
fi
exit 0
