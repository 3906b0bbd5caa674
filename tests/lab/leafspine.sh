# SPDX-License-Identifier: MIT
# A routed leaf-spine fabric for the lab, sourced after tests/lib.sh and
# tests/lab/lab.sh (for lab_ns_del and LAB): leaves $LAB-l1..l2 and spines
# $LAB-s1..s2 are Linux routers, each leaf linked to each spine; hosts
# $LAB-h1..h8, four on each leaf's bridge. ECMP between the leaves hashes
# on the 5-tuple (fib_multipath_hash_policy=1), so UDP source ports spread
# over the spines. Every router answers TTL expiry as Linux does, from the
# address the packet came in on, without ICMP rate limits.
#
# Addresses, all in 198.18.0.0/15: hosts of leaf L are 198.18.L.11-14 behind
# 198.18.L.1; the link of leaf L and spine S is 198.19.LS.0/24, the leaf .1,
# the spine .2 (spine 1 seen from leaf 1's hosts is 198.19.11.2).
LS_HOSTS=8
LS_NS=""

# ls_host_addr I: host I's address (I from 1).
ls_host_addr() {
	echo "198.18.$((($1 - 1) / 4 + 1)).$((($1 - 1) % 4 + 11))"
}

ls_router() {
	ip netns add "$LAB-$1" || fail "unable to create namespace $LAB-$1"
	LS_NS="$LS_NS $LAB-$1"
	ip -n "$LAB-$1" link set lo up
	for k in net.ipv4.ip_forward=1 net.ipv4.fib_multipath_hash_policy=1 \
		net.ipv4.icmp_ratelimit=0 net.ipv4.icmp_errors_use_inbound_ifaddr=1 \
		net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0; do
		ip netns exec "$LAB-$1" sysctl -qw "$k" || fail "sysctl $k in $LAB-$1"
	done
}

# ls_up: builds the fabric; ls_down (registered) removes it.
ls_up() {
	on_exit ls_down
	for r in l1 l2 s1 s2; do ls_router $r; done
	for l in 1 2; do
		ip -n "$LAB-l$l" link add br0 type bridge || fail "bridge in leaf $l"
		ip -n "$LAB-l$l" addr add "198.18.$l.1/24" dev br0
		ip -n "$LAB-l$l" link set br0 up
		for s in 1 2; do
			ip link add "s$s" netns "$LAB-l$l" type veth peer name "l$l" netns "$LAB-s$s" ||
				fail "link leaf $l - spine $s"
			ip -n "$LAB-l$l" addr add "198.19.$l$s.1/24" dev "s$s"
			ip -n "$LAB-s$s" addr add "198.19.$l$s.2/24" dev "l$l"
			ip -n "$LAB-l$l" link set "s$s" up
			ip -n "$LAB-s$s" link set "l$l" up
			ip -n "$LAB-s$s" route add "198.18.$l.0/24" via "198.19.$l$s.1" ||
				fail "route from spine $s to leaf $l"
		done
	done
	for l in 1 2; do
		o=$((3 - l))
		ip -n "$LAB-l$l" route add "198.18.$o.0/24" \
			nexthop via "198.19.${l}1.2" dev s1 nexthop via "198.19.${l}2.2" dev s2 ||
			fail "ECMP route in leaf $l"
	done
	i=1
	while [ $i -le $LS_HOSTS ]; do
		l=$(((i - 1) / 4 + 1))
		ip netns add "$LAB-h$i" || fail "unable to create namespace $LAB-h$i"
		LS_NS="$LS_NS $LAB-h$i"
		ip -n "$LAB-h$i" link set lo up
		ip link add eth0 netns "$LAB-h$i" type veth peer name "h$i" netns "$LAB-l$l" ||
			fail "veth of host $i"
		ip -n "$LAB-l$l" link set "h$i" master br0 up
		ip -n "$LAB-h$i" addr add "$(ls_host_addr $i)/24" dev eth0
		ip -n "$LAB-h$i" link set eth0 up
		ip -n "$LAB-h$i" route add default via "198.18.$l.1"
		i=$((i + 1))
	done
}

ls_down() {
	for ns in $LS_NS; do lab_ns_del "$ns"; done
	LS_NS=""
}

# ls_loss SPINE LEAF PERCENT: drops PERCENT % of what spine SPINE forwards to
# leaf LEAF (nftables numgen: this kernel has no netem); "off" removes it.
ls_loss() {
	if [ "$3" = off ]; then
		ip netns exec "$LAB-s$1" nft delete table inet lab_loss || fail "unable to remove the loss"
		return 0
	fi
	ip netns exec "$LAB-s$1" nft -f - <<-NFT || fail "unable to add loss on spine $1 to leaf $2"
		table inet lab_loss {
			chain forward_loss {
				type filter hook forward priority 0;
				oifname "l$2" numgen random mod 100 < $3 drop
			}
		}
	NFT
}
