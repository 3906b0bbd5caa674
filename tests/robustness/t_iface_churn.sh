#!/bin/bash
# SPDX-License-Identifier: MIT
# Interfaces made and deleted at 10 a second for CHURN_SECS (default 20; a
# minute in make bench) in a lab namespace, while the agent there runs the
# netdev and bpf collectors every 100 ms with the tc probe on every
# interface it selects and series_expiry 2s. It must not crash; afterwards
# the probe is attached to eth0 alone (fabmon_bpf_attached_interfaces 1, one
# fabmon filter each way on eth0), its programs and links are as many as at
# the start (bpftool, by the agent's pid), the deleted interfaces' series
# have expired from /metrics, and its RSS stayed bounded (printed).
. tests/lib.sh
. tests/lab/lab.sh
need_root
command -v bpftool >/dev/null || skip "needs bpftool"
secs=${CHURN_SECS:-20}
lab_up 1
ns=$(lab_ns 1)
lab_agent 1 --db "$WORK/churn.db" --interval 100ms --collectors netdev,bpf \
	--interfaces 'eth0|ch[0-9]+' --series-expiry 2s
[ "$(lab_metric 'fabmon_probe_up{probe="tc"}')" = 1 ] || { cat "$WORK/agent.log"; skip "tc probe not up here"; }
# the agent's BPF programs and links: its descriptors of each kind
progs() { grep -l '^prog_id' /proc/"$AGENT_PID"/fdinfo/* 2>/dev/null | wc -l; }
links() { grep -l '^link_id' /proc/"$AGENT_PID"/fdinfo/* 2>/dev/null | wc -l; }
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$AGENT_PID/status"; }
filters() { lab_exec 1 tc filter show dev "$1" "$2" 2>/dev/null | grep -c 'fabmon_' || true; }
progs0=$(progs) links0=$(links)

# 10 interfaces a second: veth chN (peer cpN, not selected) made, the one
# made a second before deleted
# (so ~10 live at a time, each for a second)
on_exit "for i in \$(seq 0 19); do ip -n '$ns' link del ch\$i; done"
rss0=$(rss) rssmax=0 made=0 seen_max=0
t0=$(date +%s%N)
step=0
while [ $step -lt $((secs * 10)) ]; do
	# the steps due by now, in one batch: 10 a second whatever ip costs
	due=$((($(date +%s%N) - t0) / 100000000 + 1))
	[ $due -gt $((secs * 10)) ] && due=$((secs * 10))
	while [ $step -lt $due ]; do
		i=$((step % 20)) old=$(((step + 10) % 20))
		printf 'link del ch%d\nlink add ch%d type veth peer name cp%d\nlink set ch%d up\n' \
			$old $i $i $i
		step=$((step + 1))
	done | ip -n "$ns" -force -batch - 2>/dev/null
	step=$due made=$due
	if [ $((step % 10)) -lt 2 ]; then
		kill -0 "$AGENT_PID" 2>/dev/null || { cat "$WORK/agent.log"; fail "agent died during the churn"; }
		r=$(rss)
		[ "$r" -gt "$rssmax" ] && rssmax=$r
		[ $step -le 21 ] && [ $step -ge 20 ] && rss0=$r # after 2 s of churn
		a=$(lab_metric fabmon_bpf_attached_interfaces)
		[ "${a:-0}" -gt "$seen_max" ] && seen_max=$a
	fi
	sleep 0.05
done
for i in $(seq 0 19); do ip -n "$ns" link del ch$i 2>/dev/null; done
kill -0 "$AGENT_PID" || { cat "$WORK/agent.log"; fail "agent died"; }
[ "$seen_max" -ge 5 ] || fail "the probe was on at most $seen_max interfaces during the churn"

# the deleted interfaces' series expire (2 s), the probe is on eth0 alone
for _ in $(seq 50); do
	n=$(lab_scrape | grep -c 'interface="ch[0-9]*"')
	[ "$n" = 0 ] && [ "$(lab_metric fabmon_bpf_attached_interfaces)" = 1 ] && break
	sleep 0.1
done
[ "$n" = 0 ] || fail "$n series of deleted interfaces still on /metrics"
[ "$(lab_metric fabmon_bpf_attached_interfaces)" = 1 ] ||
	fail "attached to $(lab_metric fabmon_bpf_attached_interfaces) interfaces, want 1 (eth0)"
[ "$(filters eth0 ingress)" = 1 ] && [ "$(filters eth0 egress)" = 1 ] ||
	fail "eth0 has $(filters eth0 ingress) ingress and $(filters eth0 egress) egress fabmon filters"
[ "$(progs)" = "$progs0" ] || fail "BPF programs of the agent: $progs0 at start, $(progs) now"
[ "$(links)" = "$links0" ] || fail "BPF links of the agent: $links0 at start, $(links) now"
rss1=$(rss)
# bounded: what the churn's first 2 s took, and no more than 4 MiB after
[ "$rssmax" -le $((rss0 + 4096)) ] || fail "RSS grew from $rss0 to $rssmax KiB during the churn"
kill "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null
[ "$(filters eth0 ingress)" = 0 ] || fail "filters left on eth0 after the agent stopped"
grep -c "" "$WORK/agent.log" >/dev/null
echo "$made interfaces made and deleted in ${secs}s (up to $seen_max attached at once):" \
	"no crash; after: attached to eth0 alone, $progs0 programs and $links0 links as at start," \
	"deleted interfaces' series expired; RSS ${rss0} KiB after 2 s, max ${rssmax}, end ${rss1}"
exit 0
