#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A synthetic fabric's Prometheus history as OpenMetrics, for
`promtool tsdb create-blocks-from openmetrics`: N nodes shaped like fabmon's
series (agent info, port error counters, LLDP neighbours, events naming
peers, mesh probes sent and lost per peer and flow, and their hops) on a
leaf-spine fabric, with faults one after another in windows of their own.

  synth_fabric.py --nodes N --per-leaf K --spines S --peers P --flows F
                  --start UNIX --interval SECONDS --window SECONDS
                  --faults clean,host,link,port

Each fault takes one window, in order; the culprits are printed on stderr
as "WINDOW FROM TO KIND CULPRIT" (the names `fabmon locate` should give):
  host  a node paused: its series stop, every path to it is lost, the
        nodes that probe it raise an `unreachable` event naming it
  link  loss on one spine-leaf link: the paths across it lose 5 %, their
        nodes raise `lossy_link` naming the peer
  port  a node's eth0 counts receive errors and its paths lose 2 %
Addresses are 198.18.0.0/15: nodes 198.18.x.y, leaves 198.19.1.L, spines
198.19.2.S. Deterministic: the same arguments give the same file.
"""
import argparse
import sys


def addr(i):
    return "198.18.%d.%d" % (i // 250, i % 250 + 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--per-leaf", type=int, default=4)
    ap.add_argument("--spines", type=int, default=2)
    ap.add_argument("--peers", type=int, default=4)
    ap.add_argument("--flows", type=int, default=2)
    ap.add_argument("--start", type=int, required=True)
    ap.add_argument("--interval", type=int, default=5)
    ap.add_argument("--window", type=int, default=360)
    ap.add_argument("--faults", default="clean,host,link,port")
    a = ap.parse_args()
    n, k = a.nodes, a.per_leaf
    leaves = (n + k - 1) // k
    leaf = lambda i: i // k
    leaf_addr = lambda l: "198.19.1.%d" % (l + 1)
    spine_addr = lambda s: "198.19.2.%d" % (s + 1)
    inst = lambda i: addr(i) + ":9478"
    faults = a.faults.split(",")
    end = a.start + a.window * len(faults)
    times = list(range(a.start, end, a.interval))
    # the culprits: a node and a link away from node 0, fixed by the sizes
    host_c = n // 2 + 1
    port_c = n // 3
    link_c = (a.spines - 1, leaves - 1)  # spine, leaf
    win = {}
    for w, f in enumerate(faults):
        lo, hi = a.start + w * a.window, a.start + (w + 1) * a.window
        win[f] = (lo, hi)
        culprit = {"clean": "-", "host": addr(host_c),
                   "link": " - ".join(sorted([leaf_addr(link_c[1]), spine_addr(link_c[0])])),
                   "port": inst(port_c) + " eth0"}[f]
        print("%d %d %d %s %s" % (w, lo, hi, f, culprit), file=sys.stderr)

    def during(f, t):
        return f in win and win[f][0] <= t < win[f][1]

    def alive(i, t):
        return not (i == host_c and during("host", t))

    # paths: each node probes P peers in other leaves, F flows each; a flow
    # picks a spine by hash, as ECMP would
    paths = []
    for i in range(n):
        for p in range(1, a.peers + 1):
            j = (i + p * k + p) % n
            if leaf(j) == leaf(i):
                j = (j + k) % n
            if j == i or leaf(j) == leaf(i):
                continue
            for f in range(a.flows):
                s = (i * 7 + j * 13 + f * 5) % a.spines
                hops = [leaf_addr(leaf(i)), spine_addr(s), leaf_addr(leaf(j)), addr(j)]
                paths.append((i, j, f, s, hops))

    def loss(path, t):
        i, j, f, s, hops = path
        if during("host", t) and j == host_c:
            return 1.0
        if during("link", t) and s == link_c[0] and link_c[1] in (leaf(i), leaf(j)):
            return 0.05
        if during("port", t) and port_c in (i, j):
            return 0.02
        return 0.0

    out = sys.stdout
    job = 'job="fabmon"'
    w = out.write
    w("# TYPE fabmon_agent_info gauge\n")
    for i in range(n):
        for t in times:
            if alive(i, t):
                w('fabmon_agent_info{instance="%s",%s,version="0.1.0"} 1 %d\n' % (inst(i), job, t))
    w("# TYPE fabmon_netdev_receive_errors counter\n")
    for i in range(n):
        v = 0
        for t in times:
            if i == port_c and during("port", t):
                v += 20 * a.interval
            if alive(i, t):
                w('fabmon_netdev_receive_errors_total{instance="%s",%s,interface="eth0"} %d %d\n'
                  % (inst(i), job, v, t))
    # a counter with the same labels, which a query must not confuse
    w("# TYPE fabmon_netdev_transmit_errors counter\n")
    for i in range(n):
        for t in times:
            if alive(i, t):
                w('fabmon_netdev_transmit_errors_total{instance="%s",%s,interface="eth0"} 0 %d\n'
                  % (inst(i), job, t))
    w("# TYPE fabmon_lldp_neighbor_info gauge\n")
    for i in range(n):
        for t in times[::6]:
            if alive(i, t):
                w('fabmon_lldp_neighbor_info{instance="%s",%s,interface="eth0",chassis_id="%s",'
                  'port_id="Ethernet%d",system_name="leaf%d",port_description="",'
                  'management_address="%s"} 1 %d\n'
                  % (inst(i), job, leaf_addr(leaf(i)), i % k + 1, leaf(i) + 1,
                     leaf_addr(leaf(i)), t))
    # events: a node raises one naming the peer of a path while it loses
    w("# TYPE fabmon_event_active gauge\n")
    ev = {}
    for path in paths:
        i, j = path[0], path[1]
        for t in times:
            l = loss(path, t)
            if l > 0 and alive(i, t):
                kind = "unreachable" if l >= 1 else "lossy_link"
                ev.setdefault((i, kind, j), set()).add(t)
    for (i, kind, j) in sorted(ev):
        for t in sorted(ev[(i, kind, j)]):
            w('fabmon_event_active{instance="%s",%s,kind="%s",cause="%s",subject="peer=%s"} 1 %d\n'
              % (inst(i), job, kind, "host" if kind == "unreachable" else "network", addr(j), t))
    # the agent's series (docs/mesh.md): per peer, and per flow with its
    # path and hops. The agent shows a flow's series and hops only while a
    # flow of the peer stands out; here every flow has them, so that clean
    # flows clear the hops they cross at any scale (locate counts a flow
    # with hops and no loss series as clean either way)
    def flow_out(path, t):
        return alive(path[0], t)
    peers = {}
    for path in paths:
        peers.setdefault((path[0], path[1]), []).append(path)
    for name, lost in (("fabmon_mesh_probes_sent", False), ("fabmon_mesh_probes_lost", True)):
        w("# TYPE %s counter\n" % name)
        for (i, j), ps in sorted(peers.items()):
            v = 0.0
            for t in times:
                v += sum(10 * a.interval * (loss(p, t) if lost else 1) for p in ps)
                if alive(i, t):
                    w('%s_total{instance="%s",%s,peer="%s"} %d %d\n'
                      % (name, inst(i), job, addr(j), v, t))
    for name, lost in (("fabmon_mesh_flow_probes_sent", False),
                       ("fabmon_mesh_flow_probes_lost", True)):
        w("# TYPE %s counter\n" % name)
        for path in paths:
            i, j, f = path[0], path[1], path[2]
            v = 0.0
            for t in times:
                v += 10 * a.interval * (loss(path, t) if lost else 1)
                if flow_out(path, t):
                    w('%s_total{instance="%s",%s,peer="%s",flow="%d",path="%s"} %d %d\n'
                      % (name, inst(i), job, addr(j), f, "+".join(path[4]), v, t))
    w("# TYPE fabmon_mesh_hop_info gauge\n")
    for (i, j), ps in sorted(peers.items()):
        for path in ps:
            f, hops = path[2], path[4]
            for h, ad in enumerate(hops):
                for t in times[::6]:
                    if any(flow_out(p, t) for p in ps):
                        w('fabmon_mesh_hop_info{instance="%s",%s,peer="%s",flow="%d",hop="%d",address="%s"} 1 %d\n'
                          % (inst(i), job, addr(j), f, h + 1, ad, t))
    w("# EOF\n")


if __name__ == "__main__":
    main()
