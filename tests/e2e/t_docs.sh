#!/bin/bash
# SPDX-License-Identifier: MIT
# The README documents every metric the code can export and every agent
# option, so a new metric or flag without documentation fails the build.
. tests/lib.sh

missing=""
for m in $(grep -oh '"fabmon_[a-z0-9_]*[a-z0-9]"' agent/*.c collector/*.c collector/*/*.c | tr -d '"' | sort -u); do
	grep -q "\`$m\`" README.md || missing="$missing $m"
done
[ -z "$missing" ] || fail "metrics not in README.md's catalogue:$missing"
for o in $("$FABMON" agent --help | grep -o -- '--[a-z-]*' | sort -u); do
	grep -q -- "$o" README.md || missing="$missing $o"
done
[ -z "$missing" ] || fail "agent options not in README.md:$missing"
head -5 README.md | grep -qx 'make run' && head -6 README.md | grep -qx 'make test' ||
	fail "README.md must start with the two commands make run / make test"
exit 0
