# SPDX-License-Identifier: MIT
# fabmon locate scored on the leaf-spine lab, sourced after tests/lib.sh,
# tests/lab/lab.sh and tests/lab/leafspine.sh by the lab test
# (t_locate_leafspine.sh) and the fault matrix (tests/bench/locate_matrix.sh).
# locate_lab_up builds the fabric, its management network, an agent on
# every host and Prometheus with the cluster rules; locate_cell runs one
# cell of the matrix: traffic, a fault at the onset, `fabmon locate --json`
# polled every 2 s, the fault undone, and one line of figures.
LOCATE_HOLD=${LOCATE_HOLD:-20}
LOCATE_POLL=2

# locate_lab_up: the lab, every agent up in Prometheus.
locate_lab_up() {
	command -v prometheus >/dev/null || skip "no prometheus (make deps)"
	command -v nft >/dev/null || skip "no nft (nftables)"
	command -v stress-ng >/dev/null || skip "no stress-ng (make deps)"
	[ -x "${LAB_BIN:-$PWD/build/lab}/loadgen" ] || fail "no loadgen in ${LAB_BIN:-build/lab}"
	ls_up
	ls_mgmt_up
	for i in $(seq $LS_HOSTS); do
		# as scenarios/t_pause_rank.sh: a stopped receiver backs its
		# senders up within a second, not after a deep buffer fills
		ip netns exec "$LAB-h$i" sysctl -qw net.ipv4.tcp_rmem="4096 131072 1048576" ||
			fail "unable to set tcp_rmem"
	done
	started=$(date +%s)
	ls_agents
	# the alerts' for: shortened to the lab's scale (a cell holds its
	# fault 20 s)
	sed -e 's/^\( *for:\).*/\1 2s/' dashboards/prometheus/fabmon-cluster.rules.yml \
		>"$WORK/cluster.yml"
	ls_prometheus "$WORK/cluster.yml"
	# the first probes went to agents not started yet: out of the agents'
	# loss window (10 s) before the first cell
	d=$((started + 12 - $(date +%s)))
	[ $d -le 0 ] || sleep $d
	locate_settle
	: >"$WORK/cells.tsv"
}

# locate_want FAULT LINK: the suspects ("KIND NAME", an ERE) that are right
# for the fault: a host's access link cannot be told from the host by
# paths (every path to one crosses the other), so either is; a leaf-spine
# link's paths are every path through its spine on a fabric of two leaves,
# so any hop or link of that spine is. Nothing is right for a clean run.
locate_want() {
	case "$1-$2" in
	clean-* | cpu-*) echo '^$' ;;
	paused-h*) echo "^host $(ls_host_addr "${2#h}" | sed 's/\./\\./g')\$" ;;
	*-h*)
		a=$(ls_host_addr "${2#h}" | sed 's/\./\\./g')
		echo "^(host|hop) $a\$|^link ($a - .*|.* - $a)\$"
		;;
	*-l[12]s[12])
		a="198\\.19\\.[12]${2:3:1}\\.[0-9]+"
		echo "^(hop|link) (.* - )?$a( - .*)?\$"
		;;
	esac
}

# locate_cell NAME FAULT LINK ARG TRAFFIC: one cell. FAULT is loss,
# throttle or down on LINK (ls_fault) with ARG; paused (host LINK's loadgen
# stopped) or cpu (stress-ng on every core from host LINK's namespace, which
# must not read as a network fault); or clean. TRAFFIC is idle (probes
# only), ring-allreduce or all-to-all (from 5 s before the onset). Appends
# to $WORK/cells.tsv: name, fault, link, arg, traffic, the final top-1,
# top-1 right, top-3 right, onset -> first right top-1 in ms (-1: never),
# distinct suspects named, alerts fired right and wrong.
locate_cell() {
	name=$1 fault=$2 link=$3 arg=$4 traffic=$5
	want=$(locate_want "$fault" "$link")
	stress=""
	if [ "$traffic" != idle ]; then
		ls_loadgen "$traffic" $((LOCATE_HOLD + 10))
		sleep 5
	fi
	t0=$(date +%s%3N)
	case $fault in
	loss | throttle | down) ls_fault "$link" "$fault" "$arg" ;;
	paused) pkill -STOP -P "$(echo $LS_LOADGEN | cut -d' ' -f"${link#h}")" ||
		fail "no loadgen rank on $link to stop" ;;
	cpu)
		ip netns exec "$LAB-${link}" timeout -k 1 $((LOCATE_HOLD + 5)) stress-ng --quiet \
			--cpu "$(nproc)" &
		stress=$!
		on_exit "kill -9 $stress"
		;;
	esac
	: >"$WORK/cell.suspects"
	: >"$WORK/cell.alerts"
	: >"$WORK/cell.list"
	right=-1 n=0
	while [ $(($(date +%s%3N) - t0)) -lt $((LOCATE_HOLD * 1000)) ] && [ $n -lt 60 ]; do
		n=$((n + 1))
		d=$((t0 + n * LOCATE_POLL * 1000 - $(date +%s%3N)))
		[ $d -le 0 ] || sleep "$((d / 1000)).$(printf %03d $((d % 1000)))"
		ls_mgmt "$FABMON" locate --prometheus http://127.0.0.1:9090 --since $((t0 / 1000)) \
			--json >"$WORK/cell.json" 2>"$WORK/cell.err" || { cat "$WORK/cell.err"; continue; }
		took=$(($(date +%s%3N) - t0))
		jq -r '.suspects[] | "\(.kind) \(.suspect)"' "$WORK/cell.json" >"$WORK/cell.list"
		cat "$WORK/cell.list" >>"$WORK/cell.suspects"
		[ $right -lt 0 ] && head -n 1 "$WORK/cell.list" | grep -Eq "$want" && right=$took
		ls_api alerts | jq -r --argjson t0 $((t0 / 1000)) '.data.alerts[] |
			select(.state == "firing" and
				(.activeAt | sub("\\.[0-9]+"; "") | fromdateiso8601) >= $t0) |
			"\(.labels.suspect_kind) \(.labels.suspect)"' >>"$WORK/cell.alerts"
	done
	top=$(head -n 1 "$WORK/cell.list")
	top1=0 top3=0
	[ -n "$top" ] && echo "$top" | grep -Eq "$want" && top1=1
	head -n 3 "$WORK/cell.list" | grep -Eq "$want" && top3=1
	named=$(sort -u "$WORK/cell.suspects" | grep -c .)
	alerts_ok=$(sort -u "$WORK/cell.alerts" | grep -Ec "$want")
	alerts_bad=$(sort -u "$WORK/cell.alerts" | grep -Evc "$want")
	case $fault in
	loss | throttle | down) ls_fault "$link" "$fault" off ;;
	cpu) kill "$stress" 2>/dev/null ;;
	esac
	[ "$traffic" = idle ] || ls_loadgen_stop
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n' "$name" "$fault" "$link" \
		"${arg:--}" "$traffic" "${top:-none}" $top1 $top3 $right "$named" "$alerts_ok" \
		"$alerts_bad" | tee -a "$WORK/cells.tsv" | tr '\t' ' '
	# what was named wrongly, for a reader to see why
	{
		head -n 3 "$WORK/cell.list" | grep -Ev "$want" | sed 's/^/  named: /'
		sort -u "$WORK/cell.alerts" | grep -Ev "$want" | head -n 3 | sed 's/^/  alert: /'
	} | sort -u
	locate_settle
}

# locate_settle: waits 5 s, then until no agent has had an event open for
# 10 s (30 s at most), so that one cell's fault does not run into the next. With
# LOCATE_SETTLE_ALERTS=1, then until no alert is pending or firing and no
# mesh flow lost within the rules' minute (90 s at most): an alert that
# outlives its cell would be counted as the next cell's, and wrong.
locate_settle() {
	sleep 5
	# none open in the last 10 s: locate's first steps look back that far
	# (LOCATE_REACH_S), and would count the last cell's closing events
	for _ in $(seq 60); do
		[ "$(ls_api query --data-urlencode \
			'query=count(max_over_time(fabmon_event_active[10s]))' |
			jq -r '.data.result[0].value[1] // 0')" = 0 ] && break
		sleep 0.5
	done
	[ "${LOCATE_SETTLE_ALERTS:-0}" = 1 ] || return 0
	for _ in $(seq 180); do
		[ "$(ls_api query --data-urlencode \
			'query=count(ALERTS) or count(address:fabmon_mesh_losing_flows:count)' |
			jq -r '.data.result[0].value[1] // 0')" = 0 ] && return 0
		sleep 0.5
	done
}
