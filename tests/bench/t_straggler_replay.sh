#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/bench/straggler_replay.py over runs made up here in the format
# straggler_study.sh writes: four ring peers at 25 MB/s, busy the whole of
# every 100 ms tick. In the faulty run 198.18.0.3 falls to half that 50 ms
# before a tick ends (that tick reads 0.75 of the others), so the default
# rule names it two whole ticks later, 250 ms after the onset, and a looser
# first tick (--first 0.8 --second 0.6) one tick sooner. 198.18.0.4 dips
# with it, to 0.45 on the onset's tick and 0.55 after, and would be named
# first; it is not, as its sender receives over the slow link (its
# upstream). In the clean run one peer dips to 0.4 for one tick: no open by
# default, one with --once.
. tests/lib.sh
command -v python3 >/dev/null || skip "no python3 (make deps)"
replay="python3 tests/bench/straggler_replay.py"

# run DIR ONSET_TICK DIP: 60 ticks from 1.8e9 s; from tick ONSET_TICK (-1:
# none) 198.18.0.3's share reads 0.75, then 0.5 until tick 50, and
# 198.18.0.4's 0.45, then 0.55; DIP (-1: none) is a tick on which
# 198.18.0.2 alone reads 0.4.
run() {
	mkdir -p "$1"
	python3 - "$@" <<'EOF' || fail "unable to make up $1"
import datetime, sys
d, onset, dip = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
t0, full = 1.8e9, 25e6
def stamp(k):
    t = datetime.datetime.fromtimestamp(t0 + k / 10, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"
def share(p, k):
    if p == 3 and onset >= 0 and onset <= k < 50:
        return 0.75 if k == onset else 0.5
    if p == 4 and onset >= 0 and onset <= k < 50:
        return 0.45 if k == onset else 0.55  # its ACKs wait behind that data
    return 0.4 if p == 2 and k == dip else 1.0
for metric in ("acked_bytes_total", "busy_seconds_total",
               "delivery_rate_bytes_per_second", "upstream_busy_rate_bytes_per_second"):
    with open(f"{d}/fabmon_tcp_{metric}.csv", "w") as f:
        f.write("time,labels,value\n")
        for k in range(60):
            for p in range(1, 5):
                # a peer's upstream is its sender's own receiving: the
                # link before its own in the ring
                src = (p + 2) % 4 + 1 if metric.startswith("upstream") else p
                v = 1.0 if metric == "busy_seconds_total" else full * share(src, k)
                f.write(f'{stamp(k)},"peer=""198.18.0.{p}"",source=""bpf""",{v}\n')
with open(f"{d}/onsets", "w") as f:
    f.write(f"{int((t0 + onset / 10 - 0.05) * 1000)}\n" if onset >= 0 else "")
with open(f"{d}/offs", "w") as f:
    f.write(f"{int((t0 + 5.0) * 1000)}\n" if onset >= 0 else "")
EOF
}

run "$WORK/fault" 30 -1
run "$WORK/clean" -1 20
out=$($replay "$WORK/fault") || fail "replay failed: $out"
echo "default: $out"
[ "$out" = "false opens 0; faults 1, slow link named in 1, next link in 0; open median 250 ms, within 200 ms 0" ] ||
	fail "default rule: $out"
out=$($replay --first 0.8 --second 0.6 "$WORK/fault")
echo "looser first tick: $out"
case "$out" in *"open median 150 ms, within 200 ms 1") ;; *) fail "--first: $out" ;; esac
out=$($replay "$WORK/clean")
echo "clean: $out"
[ "$out" = "false opens 0; faults 0, slow link named in 0, next link in 0" ] || fail "clean: $out"
out=$($replay --once 0.45 "$WORK/clean")
case "$out" in "false opens 1;"*) ;; *) fail "--once on a dip: $out" ;; esac
# bad input: a directory with no counters, a flag without its pair
out=$($replay "$WORK/none" 2>&1) && fail "a missing run was replayed"
case "$out" in *"$WORK/none"*) ;; *) fail "no clear error for a missing run: $out" ;; esac
$replay --first 0.8 "$WORK/fault" 2>/dev/null && fail "--first without --second was taken"
exit 0
