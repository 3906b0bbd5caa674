#!/bin/bash
# SPDX-License-Identifier: MIT
# Includes flow one way (docs/layout.md): a file under agent/ or collector/
# includes only its own folder and the layers below it. The ranks, lowest
# first; folders of one rank are siblings and do not include each other:
#   0 agent/lib, bpf            helpers and the probes' shared types
#   1 collector                 the collector interface and shared tables
#   2 collector/{bpf,pcap,mesh} sources beside each other
#   3 agent/config, agent/registry
#   4 agent/detect   5 agent/store   6 agent/http   7 agent/daemon
#   8 agent/cli      9 agent/main.c
set -u
cd "$(dirname "$0")/../.." || exit 1

# The folder a path belongs to, as the rank table names it.
unit() {
	case "$1" in
	agent/main.c) echo main ;;
	agent/config.[ch]) echo config ;;
	agent/*/*) echo "${1%/*}" ;;
	collector/*/*) echo "${1%/*}" ;;
	collector/*) echo collector ;;
	bpf/*) echo bpf ;;
	*) echo "?" ;;
	esac
}

rank() {
	case "$1" in
	agent/lib | bpf) echo 0 ;;
	collector) echo 1 ;;
	collector/*) echo 2 ;;
	config | agent/registry) echo 3 ;;
	agent/detect) echo 4 ;;
	agent/store) echo 5 ;;
	agent/http) echo 6 ;;
	agent/daemon) echo 7 ;;
	agent/cli) echo 8 ;;
	main) echo 9 ;;
	*) echo -1 ;;
	esac
}

bad=0 checked=0
for f in $(git ls-files 'agent/*.[ch]' 'collector/*.[ch]'); do
	from=$(unit "$f")
	rf=$(rank "$from")
	if [ "$rf" -lt 0 ]; then
		echo "FAIL: $f is in no layer of docs/layout.md"
		bad=1
		continue
	fi
	for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
		case "$inc" in
		*.skel.h) continue ;; # generated from bpf/, rank 0
		agent/* | collector/* | bpf/*) ;;
		*)
			echo "FAIL: $f includes \"$inc\": name it from the repository root"
			bad=1
			continue
			;;
		esac
		checked=$((checked + 1))
		to=$(unit "$inc")
		[ "$to" = "$from" ] && continue
		rt=$(rank "$to")
		if [ "$rt" -ge "$rf" ]; then
			echo "FAIL: $f ($from, rank $rf) includes $inc ($to, rank $rt): an include may only point down a layer"
			bad=1
		fi
	done
done
echo "$checked includes checked"
exit $bad
