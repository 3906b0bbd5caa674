#!/bin/bash
# SPDX-License-Identifier: MIT
# The Check unit suite built with -fsanitize=address,undefined (make
# san-runner; SAN_RUNNER names it): fails on any sanitizer report (an
# overrun, a leak, a misaligned or otherwise undefined read) as on a failed
# check. The plain suite runs first in make test; this catches what it
# survives (kmap keys read through their structs at offset 1, b975d0b).
. tests/lib.sh
[ -x "${SAN_RUNNER:-}" ] || skip "no sanitizer build of the unit runner (SAN_RUNNER; make san-runner)"
log=$WORK/san.log
# ASan and UBSan make the suite 2-3 times slower: Check's per-test timeouts
# (4 s by default) are scaled to match, so a slow host is not a failure
export CK_TIMEOUT_MULTIPLIER=${CK_TIMEOUT_MULTIPLIER:-3}
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 "$SAN_RUNNER" >"$log" 2>&1
rc=$?
report='ERROR: [A-Za-z]*Sanitizer\|runtime error:'
if grep -q "$report" "$log"; then
	grep -A 15 "$report" "$log" | head -n 80
	fail "a sanitizer report in the unit suite (above)"
fi
[ "$rc" = 0 ] || { tail -n 20 "$log"; fail "the unit suite under sanitizers exited $rc"; }
tail -n 1 "$log"
