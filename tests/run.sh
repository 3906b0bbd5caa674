#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs every test: the Check unit runner, then each tests/*/t_*.sh and
# tests/*/*/t_*.sh script
# (bash).
# A script exits 0 (pass), 77 (skip: it prints why) or anything else (fail).
# Ends with one line CI reads: "N passed, N failed, N skipped".
# Environment: FABMON (the binary), UNIT_RUNNER, SHARED_FIXTURES; run from
# the repository root. TESTS=pattern runs only scripts whose path matches.
set -u
cd "$(dirname "$0")/.." || exit 1
export FABMON SHARED_FIXTURES
pass=0 fail=0 skip=0 failed=""

log=$(mktemp /tmp/fabmon-unit-XXXXXX)
if [ -z "${TESTS:-}" ]; then
	echo "== unit (Check)"
	"$UNIT_RUNNER" 2>&1 | tee "$log"
	# "100%: Checks: 28, Failures: 0, Errors: 0"
	line=$(grep -E '^[0-9]+%: Checks: ' "$log" | tail -n 1)
	n=$(echo "$line" | sed -n 's/.*Checks: \([0-9]*\).*/\1/p')
	f=$(echo "$line" | sed -n 's/.*Failures: \([0-9]*\), Errors: \([0-9]*\).*/\1 \2/p')
	if [ -z "$n" ]; then
		echo "unit runner printed no summary: counted as one failure"
		fail=$((fail + 1)); failed="$failed unit"
	else
		set -- $f
		bad=$(($1 + $2))
		pass=$((pass + n - bad)); fail=$((fail + bad))
		[ "$bad" -gt 0 ] && failed="$failed unit"
	fi
	skips=$(grep -c '^SKIP: ' "$log")
	[ "$skips" -gt 0 ] && echo "note: $skips unit tests skipped their body (see SKIP: lines above)"
fi
rm -f "$log"

for t in tests/*/t_*.sh tests/*/*/t_*.sh; do
	[ -e "$t" ] || continue
	case "$t" in *${TESTS:-}*) ;; *) continue ;; esac
	echo "== $t"
	start=$(date +%s)
	timeout -k 10 600 bash "$t"
	rc=$?
	secs=$(($(date +%s) - start))
	case $rc in
	0) pass=$((pass + 1)); echo "PASS $t (${secs}s)" ;;
	77) skip=$((skip + 1)); echo "SKIP $t" ;;
	*) fail=$((fail + 1)); failed="$failed $t"; echo "FAIL $t (exit $rc, ${secs}s)" ;;
	esac
done

[ -n "$failed" ] && echo "failed:$failed"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
