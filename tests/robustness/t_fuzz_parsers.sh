#!/bin/bash
# SPDX-License-Identifier: MIT
# make test's bounded fuzz run of the agent's parsers, each for
# FUZZ_PARSER_SECS (default 6) from the seeds in tests/fuzz/corpus/NAME,
# under AddressSanitizer and UBSan, with a fixed seed as in
# tests/fuzz/t_fuzz.sh: the config file (fuzz_config), sysfs values
# (fuzz_sysfs), the JSON API's query parameters (fuzz_http_query), the
# packed-sample codec, arbitrary blocks and a bit-exact round trip
# (fuzz_pack), and the stage's replay: arbitrary staged ticks packed by the
# next writer (fuzz_stage). `make fuzz` searches longer, at random.
. tests/lib.sh
names="fuzz_config fuzz_sysfs fuzz_http_query fuzz_pack fuzz_stage"
for n in $names; do
	[ -x "${FUZZ_BIN:-}/$n" ] || skip "no $n in '${FUZZ_BIN:-}' (built by make test with clang)"
done
FUZZ_SEED=${FUZZ_SEED-1} FUZZ_SECS=${FUZZ_PARSER_SECS:-6} sh tests/fuzz/run.sh $names
