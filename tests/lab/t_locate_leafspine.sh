#!/bin/bash
# SPDX-License-Identifier: MIT
# fabmon locate on the leaf-spine lab (tests/lab/locate_lab.sh): eight
# hosts, each agent counting its own namespace and probing the others,
# Prometheus scraping them each second with the cluster rules. Two cells
# of the fault matrix (tests/bench/locate_matrix.sh runs them all, a clean
# idle cell too): 3 % loss both ways on the link of leaf 1 and spine 2
# under a ring all-reduce is named top-1 (a hop or link of spine 2) at the
# cell's end, and no alert names anything else; every core saturated by
# stress-ng from host 3's namespace, beside an all-to-all, is named by
# nobody, as a network fault or otherwise (traffic without a fault).
. tests/lib.sh
# each cell holds its fault 12 s: the whole test in about 2.5 minutes
LOCATE_HOLD=12
. tests/lab/lab.sh
. tests/lab/leafspine.sh
. tests/lab/locate_lab.sh
need_root
command -v jq >/dev/null || fail "jq missing (make deps)"
locate_lab_up
echo "prometheus: $LS_HOSTS agents up"

locate_cell spine-loss loss l1s2 3 ring-allreduce
locate_cell cpu cpu h3 - all-to-all
# name fault link arg traffic top top1 top3 right_ms named alerts_ok alerts_bad
awk -F'\t' '
	$2 == "cpu" && $10 > 0 { print "FAIL: CPU-saturated host: " $10 " suspects, top " $6; bad = 1 }
	$2 == "loss" && !$7 { print "FAIL: lossy link " $3 ": top-1 is " $6; bad = 1 }
	$2 == "loss" && $12 > 0 { print "FAIL: lossy link " $3 ": " $12 " alerts name something else"; bad = 1 }
	$2 == "loss" && $7 { print "lossy link " $3 ": named top-1 after " $9 " ms (" $6 ")" }
	END { exit bad }' "$WORK/cells.tsv" >&2 || fail "locate on the leaf-spine lab"
exit 0
