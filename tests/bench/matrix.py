# SPDX-License-Identifier: MIT
"""The scenario matrix's helpers (tests/bench/matrix.sh runs them).

  params SEED              the run's parameters, as shell assignments
  find SPEC FROM TO        the first seed in FROM..TO whose parameters match
                           SPEC (key=value,...): how the smoke test picks seeds
  poll OUT SECONDS NS:PORT...  polls each agent's /metrics (in its network
                           namespace) every 0.1 s; writes to OUT when an event
                           shows up active and when it goes
  counters DIR MODE SCHEDULE HOLD_S ONSET_FILE  advances a copy of an RDMA
                           port's counter files: busy, then the fault (MODE pfc:
                           waiting, nothing sent; rdma_retx: retransmissions)
                           from SCHEDULE's start for HOLD_S, busy again to its end
  collect WORK SEED        one JSON line: the run's parameters, times and every
                           agent's events
  score EXPECT RESULTS NAME=SEEDS...  a table for each set, from the JSON lines
  line EXPECT JSON         one run in one line
  verdict EXPECT RESULTS SEED  found, missed, inert (a fault that slows nothing);
                           quiet or noisy N for a clean run
  seeds SPEC               "1000-1009", "5001,5223" or both: the seeds

A seed draws every parameter in one fixed order (params()), so the same seed
is the same run; a parameter added later goes at the end so that old seeds
keep theirs.
"""
import ctypes
import json
import math
import os
import random
import re
import socket
import sqlite3
import sys
import time

RATES_MBIT = [50, 100, 200, 400, 1000, 0]  # 0: unshaped
GENERATORS = ["loadgen:ring-allreduce", "loadgen:all-to-all", "loadgen:all-gather",
              "loadgen:handoff", "iperf3", "peerflood"]
# none twice: clean runs give the false-event rate its hours
FAULTS = ["none", "none", "throttle", "loss", "pause", "down", "pfc", "rdma_retx"]
HOLD_S = 8  # the fault lasts this long: past every latency goal (3 s) with room
TAIL_S = 3  # traffic goes on this long after the fault is undone


def params(seed):
    r = random.Random(seed)
    p = {"seed": seed}
    p["ranks"] = r.choice([4, 8])
    p["tick"] = r.choice(["200ms", "1s"])
    p["rate_mbit"] = r.choice(RATES_MBIT)
    p["gen"] = r.choice(GENERATORS)
    p["load"] = r.choice(["none", "stress"])
    p["fault"] = r.choice(FAULTS)
    # a hand-off runs between ranks 1 and 2 only: a fault elsewhere has no traffic
    p["culprit"] = r.randint(1, 2) if p["gen"] == "loadgen:handoff" else r.randint(1, p["ranks"])
    p["loss_pct"] = round(r.uniform(0.5, 5.0), 1)
    # a throttled port runs at a fifth to a third of the others (unshaped: 100 Mbit/s)
    p["throttle_kbit"] = int((p["rate_mbit"] or 300) * 1000 * r.uniform(0.2, 0.34))
    p["streams"] = r.randint(2, 8)  # iperf3 -P
    p["write_bytes"] = r.choice([65536, 512])  # peerflood: big writes or many small ones
    tick_s = 0.2 if p["tick"] == "200ms" else 1.0
    # the fault comes after 4-6 s of clean traffic, at a random point of a tick
    p["onset_ms"] = int(1000 * (r.uniform(4, 6) + r.random() * tick_s))
    p["hold_s"] = HOLD_S
    p["secs"] = (p["onset_ms"] + 999) // 1000 + HOLD_S + TAIL_S
    return p


def cmd_params(seed):
    for k, v in params(int(seed)).items():
        print("M_%s='%s'" % (k.upper(), v))


def seed_spec(spec):
    """"1000-1009", "5001,5223", or both mixed: the seeds, in order."""
    seeds = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        seeds.extend(range(int(lo), int(hi or lo) + 1))
    return seeds


def cmd_seeds(spec):
    print(" ".join(str(s) for s in seed_spec(spec)))
    return 0


def cmd_find(spec, lo, hi):
    want = dict(kv.split("=", 1) for kv in spec.split(",") if kv)
    for seed in range(int(lo), int(hi) + 1):
        p = params(seed)
        if all(str(p.get(k)) == v for k, v in want.items()):
            print(seed)
            return 0
    return 1


LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
CLONE_NEWNET = 0x40000000


def scrape(port):
    with socket.create_connection(("127.0.0.1", port), timeout=1.0) as s:
        s.sendall(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        chunks = []
        while True:
            b = s.recv(65536)
            if not b:
                break
            chunks.append(b)
    return b"".join(chunks).decode("utf-8", "replace")


def cmd_poll(out, seconds, *agents):
    """Bounded: SECONDS, or until OUT.stop exists. A socket belongs to the
    namespace its thread was in when it was made: setns, then connect."""
    libc = ctypes.CDLL(None, use_errno=True)
    targets = []
    for i, a in enumerate(agents):
        ns, port = a.rsplit(":", 1)
        targets.append((i + 1, os.open("/run/netns/" + ns, os.O_RDONLY), int(port)))
    active = {}
    end = time.time() + float(seconds)
    with open(out, "a") as f:
        while time.time() < end and not os.path.exists(out + ".stop"):
            t0 = time.time()
            for rank, fd, port in targets:
                if libc.setns(fd, CLONE_NEWNET) != 0:
                    continue
                try:
                    text = scrape(port)
                except OSError:
                    continue
                ms = int(time.time() * 1000)
                now = set()
                for line in text.splitlines():
                    if not line.startswith("fabmon_event_active{") or not line.endswith(" 1"):
                        continue
                    lab = dict(LABEL.findall(line))
                    key = (lab.get("kind", "?"), lab.get("subject", "?"))
                    now.add(key)
                    if (rank, key) not in active:
                        active[(rank, key)] = 1
                        f.write("%d %d open %s %s %s\n" % (ms, rank, key[0], key[1],
                                                           lab.get("cause", "unknown")))
                for (r, key) in [k for k in active if k[0] == rank and k[1] not in now]:
                    del active[(r, key)]
                    f.write("%d %d close %s %s\n" % (ms, rank, key[0], key[1]))
            f.flush()
            time.sleep(max(0.0, 0.1 - (time.time() - t0)))
    return 0


def write_counter(path, value):
    with open(path + ".new", "w") as f:
        f.write("%d\n" % value)
    os.rename(path + ".new", path)


def cmd_counters(port_dir, mode, schedule, hold_s, onset_file):
    """Started before the lab's agents (a python start-up took seconds on a
    loaded host), it waits (2 min at most) for SCHEDULE: "START_MS END_MS",
    wall clock. Then every 50 ms until END_MS: busy, 5M words (20 MB) a step,
    400 MB/s, no waiting, no errors;
    the fault from the first step at or after START_MS, for HOLD_S. That
    step's time is the onset, written to ONSET_FILE."""
    c = port_dir + "/counters/"
    h = port_dir + "/hw_counters/"
    files = {k: c + k for k in ("port_xmit_wait", "port_xmit_data", "port_rcv_data")}
    files.update({k: h + k for k in ("local_ack_timeout_err", "out_of_sequence",
                                     "packet_seq_err", "roce_adp_retrans")})
    val = {k: int(open(p).read().split()[0]) for k, p in files.items()}
    for _ in range(1200):
        if os.path.exists(schedule):
            break
        time.sleep(0.1)
    start_ms, end_ms = (int(x) for x in open(schedule).read().split())
    onset = None
    while time.time() * 1000 < end_ms:
        now = time.time() * 1000
        fault = now >= start_ms and (onset is None or now < onset + float(hold_s) * 1000)
        # busy, not waiting: were a busy port waiting too, an agent reading
        # between the files of a step while this advancer is starved (for
        # seconds, on a loaded host) could see waiting without data, a PFC
        # storm of the harness's making
        step = {"port_xmit_data": 5000000, "port_rcv_data": 5000000}
        if fault and mode == "pfc":
            # held by pause frames: waiting, sending nothing
            step = {"port_xmit_data": 0, "port_xmit_wait": 1000000}
        if fault and mode == "rdma_retx":
            step.update(local_ack_timeout_err=5, out_of_sequence=20, packet_seq_err=10,
                        roce_adp_retrans=20)
        if fault and onset is None:
            onset = int(time.time() * 1000)  # before the write: an agent may read it at once
            with open(onset_file, "w") as f:
                f.write("%d\n" % onset)
        for k, d in step.items():
            val[k] += d
            write_counter(files[k], val[k])
        time.sleep(0.05)
    return 0


def db_events(db):
    try:
        con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
        cols = [r[1] for r in con.execute("PRAGMA table_info(events)")]
        sel = ["kind", "subject", "start_ms",
               "open_ms" if "open_ms" in cols else "NULL",
               "end_ms", "cause" if "cause" in cols else "NULL"]
        rows = con.execute("SELECT %s FROM events ORDER BY id" % ", ".join(sel)).fetchall()
        con.close()
        return rows, None
    except sqlite3.Error as e:
        return [], "%s: %s" % (db, e)


def cmd_collect(work, seed):
    p = params(int(seed))
    times = {}
    for line in open(os.path.join(work, "times")):
        k, v = line.split()
        times[k] = int(v)
    seen = {}  # (rank, kind, subject) -> [(ms, cause)] of opens seen on /metrics
    poll = os.path.join(work, "poll.log")
    for line in open(poll) if os.path.exists(poll) else []:
        f = line.split()
        if len(f) == 6 and f[2] == "open":
            seen.setdefault((int(f[1]), f[3], f[4]), []).append((int(f[0]), f[5]))
    events, errors = [], []
    for rank in range(1, p["ranks"] + 1):
        rows, err = db_events(os.path.join(work, "r%d.db" % rank))
        if err:
            errors.append(err)
        for kind, subject, start, opened, end, cause in rows:
            # the first sighting on /metrics from its first tick on
            at = [s for s in seen.get((rank, kind, subject), []) if s[0] >= start]
            cause = cause or (at[0][1] if at else "unknown")
            events.append({"rank": rank, "kind": kind, "subject": subject, "start_ms": start,
                           "open_ms": opened, "end_ms": end, "cause": cause,
                           "seen_ms": at[0][0] if at else None})
    lab = open(os.path.join(work, "lab")).read().strip()
    rec = dict(p, times=times, events=events, errors=errors, lab=lab)
    print(json.dumps(rec, sort_keys=True))
    return 0


# ---- scoring ----

def load_expect(path):
    """The driver's table: FAULT KINDS SUBJECTS CAUSE, "#" comments."""
    table = {}
    for line in open(path):
        f = line.split()
        if len(f) == 4 and not f[0].startswith("#"):
            table[f[0]] = {"kinds": f[1].split("|"), "subjects": f[2].split("|"), "cause": f[3]}
    return table


def subject_ok(rule, ev, culprit):
    own = rule.startswith("own:")
    if own:
        rule = rule[4:]
        if ev["rank"] != culprit:
            return False
    rule = rule.replace("@IP", "198.18.0.%d" % culprit)
    return rule == "*" or rule == ev["subject"]


def judge(run, expect):
    """Each event: clean (opened before the fault's command began, or in a
    run without a fault),
    right (the expected kind and culprit, from the onset on: a culprit's
    event that re-opens after the fault is undone is still about it) or
    wrong; right_cause also has the expected cause; located is the culprit
    and the cause right, whatever the kind (the issue's own measure: a loss
    named slow_handoff on the culprit still points at it). The run: found
    (a right event), found_cause, found_located, latency (onset -> first
    right event on /metrics)."""
    t = run["times"]
    onset = t.get("onset")
    # an event that began while the fault's command ran is the fault's
    began = t.get("fault_cmd", onset)
    exp = expect.get(run["fault"])
    found = found_cause = found_located = False
    lat = None
    for ev in run["events"]:
        # by when it opened: a stall's start goes back to the wait's, which
        # can begin before the fault with data already in flight
        opened = ev["open_ms"] or ev["start_ms"]
        ev["phase"] = "clean" if onset is None or opened < began else "fault"
        ev["right"] = ev["right_cause"] = False
        ev["located"] = ev["phase"] == "fault" and exp is not None and \
            ev["cause"] == exp["cause"] and \
            any(subject_ok(r, ev, run["culprit"]) for r in exp["subjects"])
        found_located |= ev["located"]
        if ev["phase"] == "fault" and exp and ev["kind"] in exp["kinds"] and \
                any(subject_ok(r, ev, run["culprit"]) for r in exp["subjects"]):
            ev["right"] = True
            ev["right_cause"] = ev["cause"] == exp["cause"]
            found = True
            found_cause |= ev["right_cause"]
            at = ev["seen_ms"] or ev["open_ms"] or ev["start_ms"]
            if at <= t.get("restore", at) + 2000:
                lat = min(lat, at - onset) if lat is not None else at - onset
    run.update(found=found, found_cause=found_cause, found_located=found_located,
               latency_ms=lat)
    return run


def inert(run):
    """Why the run's fault slows nothing, or None: a throttle shapes the switch
    port towards the culprit, and a hand-off's prefill rank (1) receives only
    requests and ACKs through it. Such a run is not scored for recall; its
    events are still judged."""
    if run["fault"] == "throttle" and run["gen"] == "loadgen:handoff" and run["culprit"] == 1:
        return "a throttle on the prefill rank's port carries no hand-off data"
    return None


def scored(runs):
    """The runs with a fault that slows something."""
    return [r for r in runs if r["fault"] != "none" and not inert(r)]


def pct(vals, q):
    if not vals:
        return None
    v = sorted(vals)
    return v[max(0, math.ceil(q * len(v)) - 1)]  # nearest rank


def fmt(x, f="%.2f"):
    return "-" if x is None else f % x


def host_kind(kind):
    return kind == "host_stall"


# The goals: p90 onset -> event on /metrics, seconds, at each tick
LATENCY_GOALS = {"down": (1.0, 2.5), "pfc": (1.0, 2.5), "pause": (2.0, 2.0),
                 "throttle": (3.0, 3.0), "loss": (3.0, 3.0), "rdma_retx": (3.0, 3.0)}


def goal(w, text, value, ok, shown):
    w("  goal %-52s %-8s (%s)\n" % (text + ":", "-" if value is None else
                                     "met" if ok else "NOT MET", shown))


def goals(w, runs, expect, evs, clean):
    faults = scored(runs)
    rec = sum(r["found_cause"] for r in faults) / len(faults) if faults else None
    goal(w, "recall >= 0.99, right kind, culprit and cause", rec, rec is not None and rec >= 0.99,
         fmt(rec))
    prec = sum(e["right_cause"] for e in evs) / len(evs) if evs else None
    goal(w, "precision >= 0.99, right kind, culprit and cause", prec,
         prec is not None and prec >= 0.99, fmt(prec))
    secs, net, host = clean["none"]
    goal(w, "clean, no host load: 0 events", secs or None, net + host == 0,
         "%d in %.0f s" % (net + host, secs))
    secs, net, host = clean["stress"]
    goal(w, "clean, both cores busy: 0 network, <= 1 host_stall/10 min", secs or None,
         net == 0 and host * 600 <= secs, "%d network, %d host_stall in %.0f s" % (net, host, secs))
    none = []
    for fault, bounds in LATENCY_GOALS.items():
        for tick, bound in zip(("200ms", "1s"), bounds):
            lat = [r["latency_ms"] / 1000 for r in faults if r["fault"] == fault and
                   r["tick"] == tick and r["latency_ms"] is not None]
            p90 = pct(lat, 0.9)
            if p90 is None:
                none.append("%s at %s" % (fault, tick))
                continue
            goal(w, "onset -> event, %s at %s: p90 <= %.1f s" % (fault, tick, bound), p90,
                 p90 <= bound, "%.1f s, %d runs found" % (p90, len(lat)))
    if none:
        w("  latency goals with no run that found its event: %s\n" % ", ".join(none))


def score(runs, expect, label, out):
    w = out.write
    faults = scored(runs)
    idle = [r for r in runs if inert(r)]
    w("\n%s: %d runs (%d clean, %d with a fault)\n" % (label, len(runs),
                                                     len(runs) - len(faults) - len(idle),
                                                     len(faults)))
    for r in idle:
        w("  seed %d not scored for recall: %s\n" % (r["seed"], inert(r)))
    if not runs:
        return
    w("  %-10s %-38s %-8s %4s %6s %6s   %-12s %-11s\n" % (
        "fault", "expected kind", "cause", "runs", "recall", "+cause",
        "200ms p50/p90", "1s p50/p90"))
    for fault in [f for f in expect if f != "none"]:
        rs = [r for r in faults if r["fault"] == fault]
        e = expect[fault]
        cells = []
        for tick in ("200ms", "1s"):
            lat = [r["latency_ms"] / 1000 for r in rs if r["tick"] == tick and
                   r["latency_ms"] is not None]
            cells.append("%s/%s" % (fmt(pct(lat, 0.5), "%.1f"), fmt(pct(lat, 0.9), "%.1f")))
        w("  %-10s %-38s %-8s %4d %6s %6s   %-12s %-11s\n" % (
            fault, "|".join(e["kinds"]), e["cause"], len(rs),
            fmt(sum(r["found"] for r in rs) / len(rs) if rs else None),
            fmt(sum(r["found_cause"] for r in rs) / len(rs) if rs else None),
            cells[0], cells[1]))
    n = len(faults)
    evs = [e for r in runs for e in r["events"]]
    right = sum(e["right"] for e in evs)
    right_c = sum(e["right_cause"] for e in evs)
    w("  %-10s %-38s %-8s %4d %6s %6s\n" % (
        "all", "", "", n, fmt(sum(r["found"] for r in faults) / n if n else None),
        fmt(sum(r["found_cause"] for r in faults) / n if n else None)))
    w("  events raised, by kind: precision = right culprit (and cause) / raised\n")
    kinds = sorted(set(e["kind"] for e in evs))
    for k in kinds:
        ks = [e for e in evs if e["kind"] == k]
        w("    %-14s %4d raised, %4d clean-phase, precision %s, +cause %s\n" % (
            k, len(ks), sum(e["phase"] == "clean" for e in ks),
            fmt(sum(e["right"] for e in ks) / len(ks)),
            fmt(sum(e["right_cause"] for e in ks) / len(ks))))
    w("    %-14s %4d raised, precision %s, +cause %s\n" % (
        "all", len(evs), fmt(right / len(evs) if evs else None),
        fmt(right_c / len(evs) if evs else None)))
    w("  culprit and cause right, any kind: recall %s, precision %s\n" % (
        fmt(sum(r["found_located"] for r in faults) / n if n else None),
        fmt(sum(e["located"] for e in evs) / len(evs) if evs else None)))
    # clean time: a clean run from its traffic's start to its end; a fault
    # run's traffic before the onset
    clean = {}
    for load in ("none", "stress"):
        secs = net = host = 0
        for r in [r for r in runs if r["load"] == load]:
            t = r["times"]
            secs += ((t.get("onset") or t["end"]) - t["traffic"]) / 1000
            for e in r["events"]:
                if e["phase"] == "clean":
                    host += host_kind(e["kind"])
                    net += not host_kind(e["kind"])
        per_h = lambda x: fmt(x * 3600 / secs if secs else None, "%.0f")
        w("  clean traffic, host load %-6s: %5.0f s, %d network events (%s per hour),"
          " %d host_stall (%s per hour)\n" % (load, secs, net, per_h(net), host, per_h(host)))
        clean[load] = (secs, net, host)
    goals(w, runs, expect, evs, clean)


def cmd_score(expect_path, results, *labels):
    """LABELS: NAME=SEEDS (seed_spec), one table each."""
    expect = load_expect(expect_path)
    runs = [judge(json.loads(l), expect) for l in open(results) if l.strip()]
    for lab in labels:
        name, spec = lab.split("=", 1)
        want = set(seed_spec(spec))
        score([r for r in runs if r["seed"] in want], expect, "%s: seeds %s" % (name, spec),
              sys.stdout)
    return 0


def cmd_verdict(expect_path, results, seed):
    """The last run of SEED: "found", "missed", or for a run without a fault
    "quiet" or "noisy N"; "absent" when RESULTS has no such run."""
    expect = load_expect(expect_path)
    runs = [json.loads(l) for l in open(results) if l.strip()]
    runs = [judge(r, expect) for r in runs if r["seed"] == int(seed)]
    if not runs:
        print("absent")
    elif runs[-1]["fault"] == "none":
        n = len(runs[-1]["events"])
        print("noisy %d" % n if n else "quiet")
    else:
        print("inert" if inert(runs[-1]) else "found" if runs[-1]["found"] else "missed")
    return 0


def cmd_line(expect_path, result_line):
    """One run in one line, for the log as the matrix goes."""
    r = judge(json.loads(result_line), load_expect(expect_path))
    groups = {}  # the same event from several agents, or again: one entry
    for e in r["events"]:
        key = (e["kind"], e["subject"], e["cause"], "" if e["right"] else
               " (%s, wrong)" % e["phase"])
        groups.setdefault(key, []).append("r%d" % e["rank"])
    evs = ["%s:%s:%s x%d from %s%s" % (k[0], k[1], k[2], len(v), ",".join(sorted(set(v))), k[3])
           for k, v in groups.items()]
    evs = "; ".join(evs[:8]) + ("; and %d more" % (len(evs) - 8) if len(evs) > 8 else "") \
        if evs else "no events"
    verdict = "-" if r["fault"] == "none" else "not scored (%s)" % inert(r) if inert(r) \
        else "found" if r["found"] else "MISSED"
    lat = "" if r["latency_ms"] is None else " %.2f s" % (r["latency_ms"] / 1000)
    print("seed %d: %d ranks, tick %s, %s, %s, load %s, fault %s on rank %d: %s%s; events: %s" % (
        r["seed"], r["ranks"], r["tick"], "%d Mbit/s" % r["rate_mbit"] if r["rate_mbit"]
        else "unshaped", r["gen"], r["load"], r["fault"], r["culprit"], verdict, lat, evs))
    return 0


if __name__ == "__main__":
    cmds = {"params": cmd_params, "find": cmd_find, "poll": cmd_poll, "counters": cmd_counters,
            "collect": cmd_collect, "score": cmd_score, "line": cmd_line,
            "seeds": cmd_seeds, "verdict": cmd_verdict}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.stderr.write(__doc__)
        sys.exit(2)
    sys.exit(cmds[sys.argv[1]](*sys.argv[2:]))
