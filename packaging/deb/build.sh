#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds OUTDIR/fabmon_VERSION-REVISION_ARCH.deb from BINARY with dpkg-deb,
# from a staged tree (no debhelper): `make deb` runs it from the repository
# root. The version is the binary's own (`fabmon version`); the Debian
# revision is DEB_REVISION (default 1), and debian/changelog's newest entry
# must name the same version.
# usage: sh packaging/deb/build.sh BINARY OUTDIR
set -eu
umask 022

bin=$1
out=$2
deb=packaging/deb
version=$("$bin" version | awk '{ print $2 }')
debver="$version-${DEB_REVISION:-1}"
arch=$(dpkg --print-architecture)
logver=$(sed -n '1s/^fabmon (\([^)]*\)).*/\1/p' "$deb/changelog")
if [ "$logver" != "$debver" ]; then
	echo "deb: $deb/changelog's newest entry is '$logver', the package is '$debver':" \
		"add an entry" >&2
	exit 1
fi

stage="$out/deb/fabmon_${debver}_$arch"
rm -rf "$stage"
mkdir -p "$stage/DEBIAN"

# the binary, stripped as Debian ships them (the debug info stays in $bin)
install -D -m 0755 "$bin" "$stage/usr/bin/fabmon"
strip --remove-section=.comment --remove-section=.note --strip-unneeded \
	"$stage/usr/bin/fabmon"
install -D -m 0644 packaging/fabmon.conf "$stage/etc/fabmon/fabmon.conf"
install -D -m 0644 packaging/fabmon.service "$stage/lib/systemd/system/fabmon.service"
# postinst gives it to the fabmon user, 0750
install -d -m 0755 "$stage/var/lib/fabmon"
install -d -m 0755 "$stage/usr/share/man/man1" "$stage/usr/share/man/man5"
gzip -9n <packaging/fabmon.1 >"$stage/usr/share/man/man1/fabmon.1.gz"
gzip -9n <packaging/fabmon.conf.5 >"$stage/usr/share/man/man5/fabmon.conf.5.gz"
chmod 0644 "$stage/usr/share/man/man1/fabmon.1.gz" "$stage/usr/share/man/man5/fabmon.conf.5.gz"
# what `make install` puts under share/fabmon
install -d -m 0755 "$stage/usr/share/fabmon/grafana" "$stage/usr/share/fabmon/prometheus"
install -m 0644 dashboards/grafana/*.json "$stage/usr/share/fabmon/grafana/"
install -m 0644 dashboards/prometheus/*.rules.yml packaging/prometheus/* \
	"$stage/usr/share/fabmon/prometheus/"
install -D -m 0644 "$deb/copyright" "$stage/usr/share/doc/fabmon/copyright"
gzip -9n <"$deb/changelog" >"$stage/usr/share/doc/fabmon/changelog.Debian.gz"
chmod 0644 "$stage/usr/share/doc/fabmon/changelog.Debian.gz"

# the shared libraries' packages, as dpkg-shlibdeps finds them (it wants a
# debian/control to read, which this package has no other use for)
shl="$out/deb/shlibdeps"
rm -rf "$shl"
mkdir -p "$shl/debian"
printf 'Source: fabmon\n\nPackage: fabmon\nArchitecture: any\n' >"$shl/debian/control"
staged_bin=$(realpath "$stage/usr/bin/fabmon")
depends=$(cd "$shl" && dpkg-shlibdeps -O "-e$staged_bin" | sed -n 's/^shlibs:Depends=//p')
rm -rf "$shl"
[ -n "$depends" ] || {
	echo "deb: dpkg-shlibdeps found no dependencies" >&2
	exit 1
}

size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s/@VERSION@/$debver/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" \
	-e "s/@DEPENDS@/$depends/" "$deb/control.in" >"$stage/DEBIAN/control"
install -m 0644 "$deb/conffiles" "$stage/DEBIAN/conffiles"
install -m 0755 "$deb/postinst" "$deb/prerm" "$deb/postrm" "$stage/DEBIAN/"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
	xargs -0 md5sum) >"$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/md5sums"

dpkg-deb --root-owner-group -Zxz --build "$stage" "$out/fabmon_${debver}_$arch.deb" >/dev/null
echo "$out/fabmon_${debver}_$arch.deb"
