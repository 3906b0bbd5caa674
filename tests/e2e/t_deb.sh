#!/bin/bash
# SPDX-License-Identifier: MIT
# make deb: the package unpacked (dpkg-deb -x) has every path at its mode,
# owned by root, the config as its only conffile, maintainer scripts that
# parse, a control file with the binary's version and its libraries; the
# unpacked binary runs (version, --check-config on the shipped config); the
# man page names every agent option and renders without warnings; lintian
# finds no errors (its warnings are printed); the unit has the hardening
# the issue asks for and `systemd-analyze verify` is silent on it. As root
# on a host without fabmon installed, the package is installed for real:
# the user fabmon owns /var/lib/fabmon, 0750; then purged: user, group,
# directory and files gone.
. tests/lib.sh

for t in dpkg-deb lintian systemd-analyze man; do
	command -v $t >/dev/null || skip "$t not installed (make deps)"
done
version=$("$FABMON" version | awk '{ print $2 }')
debver=$version-1
arch=$(dpkg --print-architecture)
deb=build/fabmon_${debver}_$arch.deb

make -s deb >"$WORK/make.log" 2>&1 || { cat "$WORK/make.log" >&2; fail "make deb"; }
[ -f "$deb" ] || fail "make deb made no $deb"
root=$WORK/root
dpkg-deb -x "$deb" "$root"
dpkg-deb -e "$deb" "$WORK/DEBIAN"

# path type mode
layout="usr/bin/fabmon f 755
etc/fabmon/fabmon.conf f 644
lib/systemd/system/fabmon.service f 644
var/lib/fabmon d 755
usr/share/man/man1/fabmon.1.gz f 644
usr/share/doc/fabmon/copyright f 644
usr/share/doc/fabmon/changelog.Debian.gz f 644
usr/share/fabmon/grafana d 755
usr/share/fabmon/prometheus d 755"
for f in dashboards/grafana/*.json; do layout="$layout
usr/share/fabmon/grafana/${f##*/} f 644"; done
for f in dashboards/prometheus/*.rules.yml packaging/prometheus/*; do layout="$layout
usr/share/fabmon/prometheus/${f##*/} f 644"; done
while read -r p type mode; do
	[ -e "$root/$p" ] || fail "$p missing from the package"
	[ "$(stat -c %a "$root/$p")" = "$mode" ] || fail "$p: mode $(stat -c %a "$root/$p"), expected $mode"
	[ $type = d ] && [ ! -d "$root/$p" ] && fail "$p is not a directory"
	[ $type = f ] && [ ! -f "$root/$p" ] && fail "$p is not a file"
done <<<"$layout"
echo "layout: $(wc -l <<<"$layout") paths at their modes"
dpkg-deb -c "$deb" | awk '$2 != "root/root" { print; bad = 1 } END { exit bad }' ||
	fail "files not owned by root/root"
cmp -s packaging/fabmon.conf "$root/etc/fabmon/fabmon.conf" || fail "the shipped config is not packaging/fabmon.conf"
for z in usr/share/man/man1/fabmon.1.gz usr/share/doc/fabmon/changelog.Debian.gz; do
	gzip -t "$root/$z" || fail "$z is not gzip"
done

# control
[ "$(cat "$WORK/DEBIAN/conffiles")" = /etc/fabmon/fabmon.conf ] ||
	fail "conffiles: $(cat "$WORK/DEBIAN/conffiles")"
field() { sed -n "s/^$1: //p" "$WORK/DEBIAN/control"; }
[ "$(field Package)" = fabmon ] && [ "$(field Version)" = "$debver" ] &&
	[ "$(field Architecture)" = "$arch" ] || fail "control: $(cat "$WORK/DEBIAN/control")"
for d in libc6 libcap-ng0 libbpf1 libsqlite3-0 libmicrohttpd12 adduser; do
	field Depends | grep -q "\b$d\b" || fail "Depends lacks $d: $(field Depends)"
done
for s in postinst prerm postrm; do
	[ "$(stat -c %a "$WORK/DEBIAN/$s")" = 755 ] || fail "$s: mode $(stat -c %a "$WORK/DEBIAN/$s")"
	sh -n "$WORK/DEBIAN/$s" || fail "$s does not parse"
done
grep -q '^\s*if \[ -d /run/systemd/system \]' "$WORK/DEBIAN/postinst" ||
	fail "postinst: daemon-reload not guarded by /run/systemd/system"
echo "control: fabmon $debver $arch; conffiles, maintainer scripts OK"

# the unpacked binary
[ "$("$root/usr/bin/fabmon" version)" = "fabmon $version" ] || fail "unpacked binary's version"
# its database's directory is made by postinst at install: one of the test's
out=$("$root/usr/bin/fabmon" agent --config "$root/etc/fabmon/fabmon.conf" --db "$WORK/deb.db" \
	--check-config 2>&1)
[ "$out" = "configuration OK" ] || fail "shipped config: $out"
echo "unpacked binary: $("$root/usr/bin/fabmon" version); shipped config: $out"

# the man page names every agent option and renders cleanly
man=$(zcat "$root/usr/share/man/man1/fabmon.1.gz" | sed 's/\\-/-/g')
missing=""
for o in $("$FABMON" agent --help | grep -o -- '--[a-z-]*' | sort -u); do
	grep -q -- "$o" <<<"$man" || missing="$missing $o"
done
[ -z "$missing" ] || fail "agent options not in packaging/fabmon.1:$missing"
warn=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z \
	"$root/usr/share/man/man1/fabmon.1.gz" 2>&1 >/dev/null)
[ -z "$warn" ] || fail "man page warnings: $warn"

# lintian: errors fail, warnings are shown. Its scratch files go under
# $WORK: it leaves an ELF cache (/tmp/mldbm-elf-*) behind otherwise.
mkdir -p "$WORK/lintian-tmp"
TMPDIR=$WORK/lintian-tmp lintian "$deb" >"$WORK/lintian.log" 2>&1
echo "lintian: $(grep -c '^E:' "$WORK/lintian.log") error(s), $(grep -c '^W:' "$WORK/lintian.log") warning(s)"
grep -E '^[EW]:' "$WORK/lintian.log"
! grep -q '^E:' "$WORK/lintian.log" || fail "lintian errors"

# the unit: hardening present, verify silent (ExecStart at the unpacked binary)
unit=$root/lib/systemd/system/fabmon.service
want="User=fabmon
AmbientCapabilities=CAP_BPF CAP_PERFMON CAP_NET_ADMIN CAP_NET_RAW
CapabilityBoundingSet=CAP_BPF CAP_PERFMON CAP_NET_ADMIN CAP_NET_RAW
NoNewPrivileges=yes
ProtectSystem=strict
ReadWritePaths=/var/lib/fabmon
ProtectHome=yes
PrivateTmp=yes
ProtectKernelModules=yes
MemoryDenyWriteExecute=yes
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK AF_PACKET
SystemCallFilter=@system-service bpf perf_event_open
ExecStart=/usr/bin/fabmon agent --config /etc/fabmon/fabmon.conf"
while read -r line; do
	grep -qxF "$line" "$unit" || fail "unit lacks '$line'"
done <<<"$want"
mkdir -p "$WORK/unit"
sed "s#^ExecStart=/usr/bin/fabmon #ExecStart=$root/usr/bin/fabmon #" "$unit" >"$WORK/unit/fabmon.service"
out=$(cd "$WORK/unit" && MANPATH=$root/usr/share/man systemd-analyze verify fabmon.service 2>&1)
rc=$?
[ $rc = 0 ] && [ -z "$out" ] || fail "systemd-analyze verify (exit $rc): $out"
echo "systemd-analyze verify: exit 0, no output"
MANPATH=$root/usr/share/man systemd-analyze security --offline=yes "$WORK/unit/fabmon.service" 2>/dev/null |
	grep 'Overall exposure' || true

# installed for real, then purged
if [ "$(id -u)" != 0 ]; then
	echo "SKIP part: installing the package needs root"
	exit 0
fi
if dpkg-query -W -f='${Status}' fabmon 2>/dev/null | grep -q installed || getent passwd fabmon >/dev/null; then
	echo "SKIP part: fabmon (package or user) already on this host; not installing over it"
	exit 0
fi
on_exit "dpkg --purge fabmon"
i=0
until dpkg -i "$deb" >"$WORK/dpkg.log" 2>&1; do
	grep -q 'lock' "$WORK/dpkg.log" || { cat "$WORK/dpkg.log" >&2; fail "dpkg -i"; }
	i=$((i + 1))
	[ $i -lt 20 ] || { echo "SKIP part: dpkg locked by another process for 20 s"; exit 0; }
	sleep 1
done
getent passwd fabmon >/dev/null || fail "postinst made no user fabmon"
[ "$(stat -c '%U:%G %a' /var/lib/fabmon)" = "fabmon:fabmon 750" ] ||
	fail "/var/lib/fabmon: $(stat -c '%U:%G %a' /var/lib/fabmon)"
[ "$(dpkg-query -W -f='${Conffiles}' fabmon | awk '{ print $1 }')" = /etc/fabmon/fabmon.conf ] ||
	fail "dpkg does not hold the config as a conffile"
out=$(systemd-analyze verify /lib/systemd/system/fabmon.service 2>&1) ||
	fail "systemd-analyze verify on the installed unit: $out"
shell=$(getent passwd fabmon | cut -d: -f7)
echo "installed: user fabmon ($(id fabmon), shell $shell), /var/lib/fabmon fabmon:fabmon 750, unit verifies"
dpkg --purge fabmon >"$WORK/dpkg.log" 2>&1 || { cat "$WORK/dpkg.log" >&2; fail "dpkg --purge"; }
! getent passwd fabmon >/dev/null || fail "purge left the user fabmon"
! getent group fabmon >/dev/null || fail "purge left the group fabmon"
[ ! -e /var/lib/fabmon ] && [ ! -e /usr/bin/fabmon ] && [ ! -e /etc/fabmon/fabmon.conf ] ||
	fail "purge left files behind"
echo "purged: user, group, /var/lib/fabmon and files gone"
exit 0
