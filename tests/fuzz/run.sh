#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs each libFuzzer harness in $FUZZ_BIN for FUZZ_SECS seconds, starting
# from its committed seeds (tests/fuzz/corpus/NAME) and keeping what it
# finds in $FUZZ_BIN/corpus/NAME; a crash leaves its input in
# $FUZZ_BIN/NAME-crash-*.
# Arguments name the harnesses to run (fuzz_config ...); none runs them all.
# FUZZ_SEED, when set, fixes libFuzzer's seed: the same mutations each run.
# Each harness gets TMPDIR, a scratch directory removed on exit, for the
# files it writes (fuzz_sysfs's attribute file).
# Exits non-zero if any harness failed. Run from the repository root.
set -u
status=0
scratch=$(mktemp -d "${TMPDIR:-/tmp}/fabmon-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$scratch"' EXIT
trap 'exit 130' INT TERM
names=$*
[ -n "$names" ] || names=$(cd "$FUZZ_BIN" && ls fuzz_* | grep -v '\.log$\|-crash-\|-leak-\|-timeout-\|-oom-')
for name in $names; do
	bin=$FUZZ_BIN/$name
	[ -x "$bin" ] || { echo "$name: not built in $FUZZ_BIN"; status=1; continue; }
	mkdir -p "$FUZZ_BIN/corpus/$name"
	echo "== $name, ${FUZZ_SECS}s"
	log="$FUZZ_BIN/$name.log"
	if TMPDIR=$scratch "$bin" -max_total_time="$FUZZ_SECS" ${FUZZ_SEED:+-seed="$FUZZ_SEED"} -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$FUZZ_BIN/$name-" "$FUZZ_BIN/corpus/$name" \
		"tests/fuzz/corpus/$name" >"$log" 2>&1; then
		echo "$name: $(grep -E '^Done [0-9]+ runs' "$log" | tail -n 1), no crash, leak or over-read; corpus $(ls "$FUZZ_BIN/corpus/$name" | wc -l) inputs"
	else
		echo "$name: FAILED (log $log):"
		tail -n 40 "$log"
		status=1
	fi
done
exit $status
