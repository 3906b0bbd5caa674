#!/bin/bash
# SPDX-License-Identifier: MIT
# fabmon locate's fault matrix on the leaf-spine lab (tests/lab/locate_lab.sh:
# 8 hosts on 2 leaves and 2 spines, an agent on each counting its own
# namespace and probing the others, Prometheus scraping them each second
# with the cluster rules). LOCATE_MATRIX_CELLS cells (default 18, about 25
# minutes), one fault at a time, in turn: loss, throttle and down on a
# host's access link, the same on a leaf-spine link, a paused host (its
# loadgen rank stopped), a CPU-saturated host (stress-ng on every core),
# a clean run. LOCATE_MATRIX_SEED (default 1) picks each cell's link, its
# loss (1-5 %) or rate (5-30 Mbit/s) and its traffic (idle, probes only; a
# ring all-reduce; an all-to-all; a throttle is only felt under an
# all-to-all, a paused rank only by its all-to-all peers), so that a run
# repeats. Each cell holds its fault LOCATE_HOLD s (default 20) and polls
# `fabmon locate --json` every 2 s from the onset. Prints each cell, then
# top-1 and top-3 accuracy at the fault's end, onset -> right top-1 (p50,
# p90), suspects named in clean and CPU-saturated runs and the alerts
# fired, beside the goals. Between cells it waits until no alert
# is pending or firing (LOCATE_SETTLE_ALERTS, up to 90 s a cell: the rules
# read a minute of loss), so that each cell's alerts are its own. Exits
# non-zero only when the lab could not run. LOCATE_MATRIX_KEEP=DIR keeps
# the agents' databases there, for fabmon events and history.
. tests/lib.sh
. tests/lab/lab.sh
. tests/lab/leafspine.sh
. tests/lab/locate_lab.sh
FABMON=${FABMON:-$PWD/build/fabmon}
need_root
command -v jq >/dev/null || skip "no jq (make deps)"
cells=${LOCATE_MATRIX_CELLS:-18}
export LOCATE_SETTLE_ALERTS=${LOCATE_SETTLE_ALERTS:-1}
seed=${LOCATE_MATRIX_SEED:-1}
RANDOM=$seed

t=$(date +%s)
locate_lab_up
echo "lab up in $(($(date +%s) - t)) s: $LS_HOSTS hosts, seed $seed, $cells cells of ${LOCATE_HOLD} s"
echo "cell fault link arg traffic | final top-1 | top-1 top-3 right_ms named alerts_right alerts_wrong"
kinds="loss-h loss-l throttle-h throttle-l down-h down-l paused cpu clean"
for n in $(seq "$cells"); do
	k=$(echo $kinds | cut -d' ' -f$(((n - 1) % 9 + 1)))
	host=h$((RANDOM % LS_HOSTS + 1))
	link=$host
	case $k in *-l) link=l$((RANDOM % 2 + 1))s$((RANDOM % 2 + 1)) ;; esac
	traffic=$(echo idle ring-allreduce all-to-all | cut -d' ' -f$((RANDOM % 3 + 1)))
	arg=-
	case $k in
	loss-*) x=$((RANDOM % 41 + 10)) arg=$((x / 10)).$((x % 10)) ;;
	throttle-*) arg=$((RANDOM % 26 + 5))mbit traffic=all-to-all ;;
	paused) traffic=all-to-all ;;
	esac
	case $k in clean) link=- ;; esac
	locate_cell "$n" "${k%-*}" "$link" "$arg" "$traffic"
done

# name fault link arg traffic top top1 top3 right_ms named alerts_ok alerts_bad
awk -F'\t' -v hold="$LOCATE_HOLD" '
	# nearest rank: a cell never right among the last tenth is the p90
	function pct(p, i) {
		i = int(p * nt)
		if (i < p * nt)
			i++
		if (i > nt)
			return "-"
		return t[i] < 0 ? "> " hold * 1000 : t[i]
	}
	$2 == "clean" || $2 == "cpu" {
		nc++
		named += $10
		wrong += $12
		next
	}
	{
		nf++
		top1 += $7
		top3 += $8
		byk[$2] += $7
		ofk[$2]++
		alerted += ($11 > 0)
		wrong += $12
		# a cell never right sorts last: its time is over the hold
		t[++nt] = $9 < 0 ? 1e12 : $9
	}
	END {
		# insertion sort: a few dozen cells
		for (i = 2; i <= nt; i++)
			for (j = i; j > 1 && (t[j - 1] > t[j]); j--) {
				x = t[j]
				t[j] = t[j - 1]
				t[j - 1] = x
			}
		for (i = 1; i <= nt; i++)
			if (t[i] == 1e12)
				t[i] = -1
		printf "\nfault cells %d (top-1 by fault:", nf
		for (k in byk) printf " %s %d/%d", k, byk[k], ofk[k]
		printf "), clean and CPU-saturated cells %d\n", nc
		a1 = nf ? top1 / nf : 0
		a3 = nf ? top3 / nf : 0
		p50 = pct(0.5)
		p90 = pct(0.9)
		printf "| figure | goal | measured | |\n|---|---|---|---|\n"
		printf "| top-1 right, fault cells | >= 0.97 | %.2f (%d of %d) | %s |\n", a1, top1, nf,
			(a1 >= 0.97) ? "met" : "NOT MET"
		printf "| top-3 right | >= 0.99 | %.2f (%d of %d) | %s |\n", a3, top3, nf,
			(a3 >= 0.99) ? "met" : "NOT MET"
		printf "| onset -> right top-1, p90 (p50) | <= 10000 ms | %s ms (%s ms) | %s |\n", p90, p50,
			(p90 != "-" && p90 !~ />/ && p90 + 0 <= 10000) ? "met" : "NOT MET"
		printf "| suspects named in clean runs, incl. CPU-saturated host | 0 | %d in %d cells | %s |\n",
			named, nc, (named == 0) ? "met" : "NOT MET"
		printf "| alerts: fault cells with a right one; wrong ones in all cells | - | %d of %d; %d wrong | |\n",
			alerted, nf, wrong
	}' "$WORK/cells.tsv"
if [ -n "${LOCATE_MATRIX_KEEP:-}" ]; then
	mkdir -p "$LOCATE_MATRIX_KEEP" && cp "$WORK"/h*.db* "$LOCATE_MATRIX_KEEP"/ &&
		echo "databases kept in $LOCATE_MATRIX_KEEP"
fi
