#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Replays the straggler's open rule over counters a straggler_study.sh run
recorded, to weigh a rule's latency against its false opens offline
(docs/testing.md). A model of agent/detect/path.c's open, not the detector:
no holds, and peers are told apart by address only.

Each tick, per peer: its busy rate (bytes acknowledged over busy seconds;
only where busy for a tenth of the tick and 64 KiB acknowledged), its
typical rate (the median of its newest 3), and its share: the higher of
the busy rate and the delivery rate over the median of the other peers'
typical rates. A peer is judged where at least two others have a typical
rate and the others' median busy time is a tenth of the tick; not where its
upstream reads under 0.7 of that median. Of the peers under BOUND, the one
named the tick before comes first, then the lowest typical rate; the same
peer named on 2 ticks in a row opens. Optional faster rules, each also an
open: FIRST and SECOND (a peer not in a run, its share under FIRST on the
tick before and under SECOND on this one), ONCE (a share under it).

Usage: straggler_replay.py [--bound B] [--first F --second S] [--once O]
DIR... Prints, over all DIRs, one line: the opens outside the faults
(false), and per fault the open naming the slow link (198.18.0.3; the
median latency from the onset) and whether the next link (198.18.0.4) was
named within it.
"""
import argparse
import csv
import datetime
import statistics
import sys

SLOW, NEXT = "198.18.0.3", "198.18.0.4"
BUSY_MIN = 0.1  # of a tick
BULK_BYTES = 65536  # acknowledged in a tick
TYPICAL = 3  # newest busy rates a typical rate is the median of
UPSTREAM_SHARE = 0.7
OPEN_TICKS = 2
MERGE_S = 0.35  # a peer's opens this close are one
AFTER_S = 2.0  # a fault's window reaches this far past its end


def load(d, metric, optional=False):
    """{peer: {tick key (10 ms): value}} from one exported CSV; {} for an
    optional one a run does not have (an agent older than its gauge)."""
    out = {}
    try:
        f = open(f"{d}/fabmon_tcp_{metric}.csv", newline="")
    except FileNotFoundError:
        if optional:
            return out
        raise
    with f:
        for row in csv.DictReader(f):
            labels = row["labels"]
            if "198.18." not in labels:
                continue
            peer = labels.split('"')[1]
            t = datetime.datetime.fromisoformat(row["time"].replace("Z", "+00:00"))
            out.setdefault(peer, {})[round(t.timestamp() * 100)] = float(row["value"])
    return out


def read_ms(path):
    with open(path) as f:
        return [int(x) / 1000 for x in f if x.strip()]


def replay(d, rule):
    """The opens (time, peer) the rule (the parsed options) makes over
    directory d."""
    acked, busy = load(d, "acked_bytes_total"), load(d, "busy_seconds_total")
    rate, up = load(d, "delivery_rate_bytes_per_second"), load(d, "upstream_busy_rate_bytes_per_second", True)
    peers = sorted(acked)
    ticks = sorted(set().union(*(acked[p].keys() for p in peers)))
    # the tick's length in seconds, from the spacing of the samples
    span = statistics.median(y - x for x, y in zip(ticks, ticks[1:])) / 100 if len(ticks) > 1 else 0.1
    seen = {p: [] for p in peers}
    opens, named, run, last = [], None, 0, {}
    for k in ticks:
        now = {}
        for p in peers:
            ab, bs = acked[p].get(k), busy[p].get(k)
            ok = ab is not None and bs is not None and bs >= BUSY_MIN and ab * span >= BULK_BYTES
            now[p] = ab / bs if ok else None
        typical = {p: statistics.median(seen[p][-TYPICAL:]) for p in peers if len(seen[p]) >= TYPICAL}
        under, fast, share = [], [], {}
        for p in peers:
            if now[p] is None or p not in typical:
                continue
            others = [typical[q] for q in typical if q != p]
            moving = [busy[q].get(k, 0) for q in peers if q != p]
            if len(others) < 2 or statistics.median(moving) < BUSY_MIN:
                continue
            mid = statistics.median(others)
            if 0 < up.get(p, {}).get(k, 0) < UPSTREAM_SHARE * mid:
                continue
            share[p] = max(now[p], rate.get(p, {}).get(k, 0)) / mid
            if share[p] < rule.bound:
                under.append((p != named, typical[p], p))
            in_run = p == named and run >= 1
            if rule.first and not in_run and last.get(p, 9) < rule.first and share[p] < rule.second:
                fast.append(p)
            if rule.once and share[p] < rule.once:
                fast.append(p)
        for p in peers:
            if now[p] is not None:
                seen[p].append(now[p])
        last = share
        t = k / 100
        picked = min(under)[2] if under else None
        run = run + 1 if picked is not None and picked == named else (1 if picked else 0)
        named = picked
        for p in fast + ([picked] if picked and run == OPEN_TICKS else []):
            if not any(q == p and t - s < MERGE_S for s, q in opens[-4:]):
                opens.append((t, p))
    return opens


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bound", type=float, default=0.6,
                    help="share of the others' under which 2 ticks in a row open (default 0.6)")
    ap.add_argument("--first", type=float, default=0,
                    help="also open on a tick under --second after one under this")
    ap.add_argument("--second", type=float, default=0, help="see --first")
    ap.add_argument("--once", type=float, default=0, help="also open on one tick under this")
    ap.add_argument("dirs", nargs="+", metavar="DIR", help="a straggler_study.sh OUT directory")
    a = ap.parse_args()
    if a.first and not a.second:
        ap.error("--first needs --second")
    false, lat, nexts, faults = 0, [], 0, 0
    for d in a.dirs:
        try:
            on, off = read_ms(f"{d}/onsets"), read_ms(f"{d}/offs")
            opens = replay(d, a)
        except (OSError, KeyError, ValueError) as e:
            sys.exit(f"straggler_replay: {d}: {e}")
        windows = list(zip(on, off))
        false += sum(1 for t, _ in opens if not any(o <= t <= f + AFTER_S for o, f in windows))
        for o, f in windows:
            faults += 1
            inside = [(t, p) for t, p in opens if o <= t <= f + AFTER_S]
            slow = [t for t, p in inside if p == SLOW]
            if slow:
                lat.append(1000 * (slow[0] - o))
            nexts += any(p == NEXT for _, p in inside)
    print(f"false opens {false}; faults {faults}, slow link named in {len(lat)}, next link in {nexts}", end="")
    if lat:
        print(f"; open median {statistics.median(lat):.0f} ms, within 200 ms {sum(x <= 200 for x in lat)}")
    else:
        print()


if __name__ == "__main__":
    main()
