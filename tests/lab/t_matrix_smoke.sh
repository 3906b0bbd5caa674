#!/bin/bash
# SPDX-License-Identifier: MIT
# The scenario matrix end to end on three seeds (tests/bench/matrix.sh; the
# whole matrix runs in `make bench`): a clean ring on 4 ranks raises no event,
# a downed link in a ring is found as a stall on its rank, a PFC storm in the
# culprit's counter tree as a pfc_storm on its port — kinds today's agent has,
# judged on kind and culprit only (a missing cause is no failure here). The
# table prints, and every run took down its lab and what ran in it. The seeds
# are the first of 5000-9999 with those parameters: the same every time.
# About 2 min (three runs of 30-45 s on a busy 2-core host); bounded at 4.
. tests/lib.sh
need_root
for tool in python3 nft; do
	command -v $tool >/dev/null || skip "no $tool (make deps): the matrix needs it"
done
[ -x "${LAB_BIN:-$PWD/build/lab}/peerflood" ] || fail "no peerflood in ${LAB_BIN:-$PWD/build/lab}"
find_seed() {
	python3 tests/bench/matrix.py find "ranks=4,load=none,gen=loadgen:ring-allreduce,$1" 5000 9999 ||
		fail "no seed with $1"
}
clean=$(find_seed fault=none,tick=1s)
down=$(find_seed fault=down,tick=200ms)
pfc=$(find_seed fault=pfc,tick=200ms)
echo "seeds: clean $clean, down $down, pfc $pfc"

MATRIX_SEEDS="$clean,$down,$pfc" MATRIX_RESULTS=$WORK/results timeout -k 10 240 \
	bash tests/bench/matrix.sh >"$WORK/out" 2>&1
rc=$?
cat "$WORK/out"
[ $rc != 77 ] || skip "$(grep SKIP "$WORK/out")"
[ $rc = 0 ] || fail "matrix.sh exited $rc"
grep -q '^  fault .* recall .*+cause' "$WORK/out" || fail "no table"
grep -q '^  clean traffic, host load none' "$WORK/out" || fail "no clean-traffic line"

# torn down: no namespace of the runs' labs, nothing still running in one
for lab in $(jq -r .lab "$WORK/results"); do
	[ -z "$(ip netns list | grep "^$lab-")" ] || fail "lab $lab left namespaces: $(ip netns list | grep "^$lab-")"
	! pgrep -f "/run/netns/$lab-" >/dev/null || fail "lab $lab left processes: $(pgrep -af "/run/netns/$lab-")"
done

bash tests/bench/matrix.sh --expect >"$WORK/expect"
verdict() { python3 tests/bench/matrix.py verdict "$WORK/expect" "$WORK/results" "$1"; }
[ "$(verdict "$clean")" = quiet ] || fail "clean seed $clean: $(verdict "$clean")"
[ "$(verdict "$down")" = found ] || fail "downed link, seed $down: no stall on its rank"
[ "$(verdict "$pfc")" = found ] || fail "PFC storm, seed $pfc: no pfc_storm on its port"
exit 0
