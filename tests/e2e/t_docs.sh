#!/bin/bash
# SPDX-License-Identifier: MIT
# The documentation keeps up with the code, so a new metric, flag, config
# key or event kind without documentation fails the build:
# - docs/metrics.md names every metric the code can export;
# - packaging/fabmon.1 and docs/operations.md name every agent option;
# - packaging/fabmon.conf.5 has an entry for every config key (agent/config.c's
#   table), with its default, and none for a key the agent does not take;
# - both man pages render without warnings (man --warnings, groff -ww);
# - docs/events.md states every event kind's rule in ten lines or fewer,
#   with its cause, and README.md's events table has a line for each;
# - README.md starts with the two commands, stays under 25600 bytes, and
#   its links to docs/, tests/ and packaging/ point at files that exist;
# - `make help` names every .PHONY target of the Makefile;
# - no user doc counts lab runs ("in 2 of 9 runs").
# Sources are found under agent/ and collector/ at any depth.
. tests/lib.sh

src() { find agent collector -name "$1" -type f 2>/dev/null; }

missing=""
metrics=$(grep -hoE '"fabmon_[a-z0-9_]*[a-z0-9]"' $(src '*.c') $(src '*.h') | tr -d '"' | sort -u)
[ "$(echo "$metrics" | wc -w)" -gt 100 ] || fail "found only $(echo "$metrics" | wc -w) metric names in agent/ and collector/"
for m in $metrics; do
	grep -q "\`$m\`" docs/metrics.md || missing="$missing $m"
done
[ -z "$missing" ] || fail "metrics not in docs/metrics.md's catalogue:$missing"
echo "docs/metrics.md: all $(echo "$metrics" | wc -w) metric names"

man1=$(sed 's/\\-/-/g' packaging/fabmon.1)
options=$("$FABMON" agent --help | grep -o -- '--[a-z-]*' | sort -u)
[ "$(echo "$options" | wc -w)" -gt 30 ] || fail "fabmon agent --help lists only: $options"
for o in $options; do
	grep -q -- "$o" <<<"$man1" || missing="$missing fabmon.1:$o"
	grep -q -- "$o" docs/operations.md || missing="$missing operations.md:$o"
done
[ -z "$missing" ] || fail "agent options not documented:$missing"
echo "packaging/fabmon.1, docs/operations.md: all $(echo "$options" | wc -w) agent options"

# config keys: the one table in config.c, STR("key", ...), DUR(...), UINT(...)
config_c=$(src config.c | head -n 1)
[ -n "$config_c" ] || fail "no config.c under agent/"
keys=$(grep -oE '^\s*(STR|DUR|UINT|UINT_CHECKED)\("[a-z_]+"' "$config_c" | sed 's/.*("//; s/"$//' | sort -u)
[ "$(echo "$keys" | wc -w)" -gt 30 ] || fail "$config_c: found only $(echo "$keys" | wc -w) keys: $keys"
# an entry: .BR key " (default ...)
entries=$(sed -n 's/^\.BR \([a-z_]*\) " (default.*/\1/p' packaging/fabmon.conf.5 | sort -u)
for k in $keys; do
	grep -qx "$k" <<<"$entries" || missing="$missing $k"
done
[ -z "$missing" ] || fail "config keys without an entry (.BR key \" (default ...) in packaging/fabmon.conf.5:$missing"
for k in $entries; do
	grep -qx "$k" <<<"$keys" || missing="$missing $k"
done
[ -z "$missing" ] || fail "packaging/fabmon.conf.5 documents keys $config_c does not take:$missing"
echo "packaging/fabmon.conf.5: all $(echo "$keys" | wc -w) config keys, each with its default"

# the man pages render cleanly: man's own warnings, and groff's all (-ww)
for page in packaging/fabmon.1 packaging/fabmon.conf.5; do
	if command -v man >/dev/null; then
		warn=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z \
			"$page" 2>&1 >/dev/null)
		[ -z "$warn" ] || fail "$page: man warnings: $warn"
		[ "$(MANWIDTH=80 man -l "$page" 2>/dev/null | wc -l)" -gt 20 ] || fail "$page: renders empty"
	fi
	command -v groff >/dev/null || skip "neither groff nor man installed (make deps: man-db)"
	warn=$(groff -man -ww -z "$page" 2>&1)
	[ -z "$warn" ] || fail "$page: groff warnings: $warn"
done
echo "man pages: fabmon.1, fabmon.conf.5 render without warnings"

# event kinds: the names and causes of events.c's table
kinds=$(grep -rhoE '\[EVENT_[A-Z_]+\] = \{ "[a-z_]+", EVENT_CAUSE_[A-Z]+' agent |
	sed -E 's/.*"([a-z_]+)", EVENT_CAUSE_([A-Z]+)/\1:\2/' | tr 'A-Z' 'a-z' | sort -u)
[ "$(echo "$kinds" | wc -w)" -ge 8 ] || fail "found only these event kinds under agent/: $kinds"
for kc in $kinds; do
	k=${kc%:*} cause=${kc#*:}
	# the section's lines, blank ones aside, up to the next heading
	body=$(awk -v h="## $k" '$0 == h { on = 1; next } on && /^#/ { exit } on && NF' docs/events.md)
	[ -n "$body" ] || { missing="$missing events.md:$k"; continue; }
	n=$(wc -l <<<"$body")
	[ "$n" -le 10 ] || fail "docs/events.md: the rule of $k is $n lines: state it in ten or fewer"
	grep -q "\*\*Cause\*\* $cause" <<<"$body" || fail "docs/events.md: $k does not say its cause ($cause)"
	grep -qE "^\| \`$k\` \| $cause \|" README.md || missing="$missing README.md:$k"
done
[ -z "$missing" ] || fail "event kinds not documented:$missing"
echo "events: all $(echo "$kinds" | wc -w) kinds, each rule in ten lines or fewer with its cause"

head -5 README.md | grep -qx 'make run' && head -6 README.md | grep -qx 'make test' ||
	fail "README.md must start with the two commands make run / make test"
size=$(wc -c <README.md)
[ "$size" -le 25600 ] || fail "README.md is $size bytes: at most 25600 (reference goes to docs/)"
for f in $(grep -oE '\]\((docs|tests|packaging)/[^)#]+' README.md docs/*.md tests/README.md |
	sed 's/.*](//' | sort -u); do
	[ -e "$f" ] || missing="$missing $f"
done
for f in $(grep -oE '\]\(\.\./[^)#]+|\]\([a-z]+\.md' docs/*.md | sed 's/^docs\/[a-z]*\.md:\](//'); do
	[ -e "docs/$f" ] || missing="$missing docs/$f"
done
[ -z "$missing" ] || fail "links to files that do not exist:$missing"
echo "README.md: $size bytes, starts with make run / make test, its links resolve"

# make help names every .PHONY target
help=$(make -s help 2>&1) || fail "make help: $help"
for tgt in $(sed -n 's/^\.PHONY: *//p' Makefile); do
	grep -qE "^  make $tgt( |\$)" <<<"$help" || missing="$missing $tgt"
done
[ -z "$missing" ] || fail "make help does not list:$missing"
echo "make help: all $(sed -n 's/^\.PHONY: *//p' Makefile | wc -w) .PHONY targets"

runs=$(grep -nE '\b[0-9]+ (of|in) [0-9]+ (`?t_[a-z_]+`? |lab |CI |bench )*(runs|faults)\b' \
	README.md docs/*.md tests/README.md packaging/fabmon.1 packaging/fabmon.conf.5)
[ -z "$runs" ] || fail "lab-run counts in user docs (they go in commit messages): $runs"
exit 0
