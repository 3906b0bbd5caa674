#!/bin/bash
# SPDX-License-Identifier: MIT
# make test's bounded fuzz run: each libFuzzer harness (packet parse, capture
# reader) for FUZZ_TEST_SECS (default 10) from the committed seeds, under
# AddressSanitizer and UBSan, with libFuzzer's seed FUZZ_SEED (default 1;
# empty: a random one) so that each run tries the same inputs: a check, not
# a search. `make fuzz` searches, longer and at random; the agent's
# parsers' harnesses run in tests/robustness/t_fuzz_parsers.sh.
. tests/lib.sh
[ -n "${FUZZ_BIN:-}" ] && ls "$FUZZ_BIN"/fuzz_* >/dev/null 2>&1 ||
	skip "no fuzz harnesses in '${FUZZ_BIN:-}' (built by make test with clang)"
FUZZ_SEED=${FUZZ_SEED-1} FUZZ_SECS=${FUZZ_TEST_SECS:-10} sh tests/fuzz/run.sh fuzz_packet fuzz_capture
