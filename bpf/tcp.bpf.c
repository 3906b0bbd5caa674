/* SPDX-License-Identifier: (MIT OR GPL-2.0-only) */
/*
 * TCP health and kernel drops from raw tracepoints: retransmits, smoothed RTT,
 * congestion window, bytes in flight and the time of the last ack progress per
 * connection (fm_tcp), and freed-as-dropped packets by reason (fm_drops).
 * Everything is counted here and read by the bpf collector each tick; nothing
 * is sent to user space per event.
 *
 * Raw tracepoints rather than tracepoints: they attach by name without
 * tracefs. Their arguments come by position, which CO-RE cannot relocate, so
 * each program says which kernel first passed the arguments it reads.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "fabmon.h"

/* include/linux/socket.h; vmlinux.h has no macros */
#define AF_INET 2
#define AF_INET6 10

/* include/net/tcp_states.h */
#define FM_TCP_ESTABLISHED 1
#define FM_TCP_FIN_WAIT1 4
#define FM_TCP_CLOSE 7
#define FM_TCP_CLOSE_WAIT 8
#define FM_TCPHDR_ACK 0x10 /* include/net/tcp.h */

/* Default; the collector sets its own with bpf_map__set_max_entries() before load. */
#define FM_TCP_MAX_ENTRIES 16384

/* bpf_probe_read_kernel() is GPL-only; the dual licence makes it available. */
char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, FM_TCP_MAX_ENTRIES);
	__type(key, struct fm_tcp_key);
	__type(value, struct fm_tcp_val);
} fm_tcp SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FM_DROP_REASONS);
	__type(key, __u32);
	__type(value, __u64);
} fm_drops SEC(".maps");

/*
 * Set before load: 1 counts only connections in the network namespaces
 * whose inode numbers the collector put in fm_netns (bpf_netns); 0 counts
 * every namespace.
 */
const volatile __u32 fm_netns_filter = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FM_NETNS_MAX);
	__type(key, __u32);
	__type(value, __u8);
} fm_netns SEC(".maps");

/* RFC 1982 serial number arithmetic, as the kernel's after(): true if a is later than b. */
static __always_inline int seq_after(__u32 a, __u32 b)
{
	return (__s32)(a - b) > 0;
}

/*
 * Fills key from the socket's local side. Returns 0, or -1 for a family that
 * is neither IPv4 nor IPv6 (there are none on these tracepoints today).
 */
static __always_inline int tcp_key(const struct sock *sk, struct fm_tcp_key *key)
{
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);

	if (family == AF_INET) {
		__be32 saddr = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
		__be32 daddr = BPF_CORE_READ(sk, __sk_common.skc_daddr);

		__builtin_memcpy(key->saddr, &saddr, sizeof(saddr));
		__builtin_memcpy(key->daddr, &daddr, sizeof(daddr));
		key->family = FM_FAMILY_IPV4;
	} else if (family == AF_INET6) {
		BPF_CORE_READ_INTO(&key->saddr, sk, __sk_common.skc_v6_rcv_saddr);
		BPF_CORE_READ_INTO(&key->daddr, sk, __sk_common.skc_v6_daddr);
		key->family = FM_FAMILY_IPV6;
	} else {
		return -1;
	}
	/* inet_sport, not skc_num: a connection reset goes from ESTABLISHED
	 * straight to CLOSE, and tcp_set_state() releases the port
	 * (inet_put_port() zeroes skc_num) before the state tracepoint fires;
	 * inet_sport keeps it, so that close still finds the entry */
	key->sport = bpf_ntohs(BPF_CORE_READ((const struct inet_sock *)sk, inet_sport));
	key->dport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	/* Containers reuse addresses (loopback at least): the namespace tells them
	 * apart. It stays 0 on a kernel without network namespaces. */
	if (bpf_core_field_exists(sk->__sk_common.skc_net.net))
		key->netns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
	return 0;
}

/* The connection's entry, created zeroed on first sight; NULL if the map refuses it. */
static __always_inline struct fm_tcp_val *tcp_entry_key(const struct fm_tcp_key *key)
{
	struct fm_tcp_val zero = {};
	struct fm_tcp_val *val;

	if (fm_netns_filter && !bpf_map_lookup_elem(&fm_netns, &key->netns))
		return NULL;
	val = bpf_map_lookup_elem(&fm_tcp, key);
	if (val)
		return val;
	/* -EEXIST means another CPU created it first, which is as good. */
	(void)bpf_map_update_elem(&fm_tcp, key, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&fm_tcp, key);
}

static __always_inline struct fm_tcp_val *tcp_entry(const struct sock *sk)
{
	struct fm_tcp_key key = {};

	if (tcp_key(sk, &key) < 0)
		return NULL;
	return tcp_entry_key(&key);
}

/*
 * tcp:tcp_retransmit_skb(sk, skb) since 4.15, once per retransmitted skb
 * that went out (with TSO it may hold several segments). Newer kernels pass
 * err as well and fire for failed attempts too (the original still queued on
 * this host, a local qdisc drop, no route): those are not counted, so the
 * count means the same on every kernel, but they do refresh in_flight.
 */
SEC("raw_tp/tcp_retransmit_skb")
int BPF_PROG(fabmon_tcp_retransmit, const struct sock *sk)
{
	const struct tcp_sock *tp = (const struct tcp_sock *)sk;
	struct fm_tcp_val *val;

	/* a closing connection has left the map (fabmon_tcp_state): keep it out */
	if (BPF_CORE_READ(sk, __sk_common.skc_state) != FM_TCP_ESTABLISHED)
		return 0;
	val = tcp_entry(sk);
	if (!val)
		return 0;
	/*
	 * The event's err field came with the err argument. Without it the
	 * load of ctx[2] is dead code, which the verifier skips, so attaching
	 * still works where the tracepoint has two arguments.
	 */
	if (!bpf_core_field_exists(struct trace_event_raw_tcp_retransmit_skb, err) ||
	    (int)ctx[2] == 0)
		__sync_fetch_and_add(&val->retransmits, 1);
	/* A silent peer sends no ACKs, so no tcp_probe: only here does the data it
	 * leaves outstanding show. */
	val->in_flight = BPF_CORE_READ(tp, snd_nxt) - BPF_CORE_READ(tp, snd_una);
	val->unsent = BPF_CORE_READ(tp, write_seq) - BPF_CORE_READ(tp, snd_nxt);
	val->last_ns = bpf_ktime_get_ns();
	return 0;
}

/* What the tcp_probe programs read of the socket and segment. */
struct tcp_probe_in {
	__u32 snd_una, snd_nxt, srtt_us, cwnd, write_seq, snd_wnd;
	/* the last rate sample (tcp_rate_gen() on the previous ACK) */
	__u32 rate_delivered, rate_interval_us, mss;
	/* tcp_rate_skb_sent() sets it to a segment's send time (us, the
	 * monotonic clock bpf_ktime_get_ns() reads) when nothing was out:
	 * before the first ACK after idle is processed, when data became
	 * pending */
	__u64 first_tx_us;
	/*
	 * The segment's TCP control block (TCP_SKB_CB(skb), filled before
	 * tcp_rcv_established()): its ack_seq is the one tcp_ack() takes. Not
	 * the header's: ACKs that arrive while the socket is owned are merged
	 * in its backlog (tcp_add_backlog()), which advances the block's
	 * ack_seq and leaves the first segment's header as it was.
	 */
	const struct tcp_skb_cb *cb;
};

/* Everything sent was acknowledged: the busy period ends, and a bulk
 * transfer's duration is counted. */
static __always_inline void xfer_end(struct fm_tcp_val *val, __u64 now)
{
	__u64 d = now - val->xfer_start_ns;
	__u32 b;

	val->xfer_start_ns = 0;
	val->busy_ns += d;
	if (val->bytes_acked - val->xfer_acked0 < FM_XFER_MIN_BYTES)
		return;
	for (b = 0; b < FM_XFER_BUCKETS - 1; b++)
		if (d <= FM_XFER_BUCKET0_NS << b)
			break;
	val->xfers++;
	val->xfer_ns += d;
	val->xfer_bytes += val->bytes_acked - val->xfer_acked0;
	val->xfer_hist[b]++;
}

/*
 * tcp:tcp_probe(sk, skb) since 4.16: every segment tcp_rcv_established()
 * receives, before it is processed. Calls for one socket are serialised by
 * the socket lock, so the plain stores below do not race with each other.
 */
static __always_inline void tcp_probe_update(struct fm_tcp_val *val, struct tcp_probe_in *in)
{
	__u64 now = bpf_ktime_get_ns();
	/* snd_wnd is still the previous ACK's, so with the previous snd_una */
	__u32 una = in->snd_una, edge = una + in->snd_wnd;
	/* a local: BPF_CORE_READ relocates every access in its argument */
	const struct tcp_skb_cb *cb = in->cb;

	/*
	 * snd_una is from before this segment's ACK: apply the ACK as the kernel
	 * is about to (tcp_ack() takes it if snd_una < ack <= snd_nxt), or the
	 * last ACK of a transfer would leave its data looking outstanding and
	 * an idle connection would look stalled.
	 */
	if (BPF_CORE_READ(cb, tcp_flags) & FM_TCPHDR_ACK) {
		__u32 ack = BPF_CORE_READ(cb, ack_seq);

		if (seq_after(ack, in->snd_una) && !seq_after(ack, in->snd_nxt))
			in->snd_una = ack;
	}
	if (val->probes && seq_after(in->snd_una, val->snd_una)) {
		/* data pending after idle: a transfer began when its first
		 * segment went out; about an RTT ago if that time is not in
		 * the last second (a kernel without it, or a stale one). Not
		 * srtt alone: a queue that drained while the connection was
		 * idle inflates it, and busy periods then overlap. */
		if (!val->xfer_start_ns) {
			__u64 sent = in->first_tx_us * 1000;

			val->xfer_start_ns = sent <= now && now - sent < 1000000000ULL
						     ? sent
						     : now - (__u64)(in->srtt_us >> 3) * 1000;
			val->xfer_acked0 = val->bytes_acked;
		}
		val->bytes_acked += in->snd_una - val->snd_una;
		if (val->in_flight && now - val->progress_ns >= FM_ACK_WAIT_NS)
			val->resumed_ns = now;
	}
	if (val->probes == 0 || seq_after(in->snd_una, val->snd_una))
		val->progress_ns = now;
	if (val->probes == 0 || (seq_after(edge, val->read_edge) &&
				 edge - val->read_edge >= (una - val->read_una) / 2)) {
		val->read_ns = now;
		val->read_edge = edge;
		val->read_una = una;
	}
	val->snd_una = in->snd_una;
	val->in_flight = in->snd_nxt - in->snd_una;
	/* a receiver that stops reading closes its window: the data then waits
	 * here, unsent, and that is a stall as much as unacked data is */
	val->unsent = in->write_seq - in->snd_nxt;
	val->snd_wnd = in->snd_wnd;
	if (val->xfer_start_ns && !val->in_flight && !val->unsent)
		xfer_end(val, now);
	/* tcp_sock keeps 8 * srtt (the kernel's tcp_probe event shifts the same way) */
	val->srtt_us = in->srtt_us >> 3;
	val->snd_cwnd = in->cwnd;
	/* as tcp_compute_delivery_rate(): packets delivered in the interval times
	 * the MSS; the interval is 0 until a sample exists. tcp_rate_gen() has
	 * already chosen which sample stands (the last one that was not
	 * application-limited, or a higher one that was), so this is what ss shows. */
	if (in->rate_interval_us && in->rate_delivered)
		val->delivery_rate =
			(__u64)in->rate_delivered * in->mss * 1000000 / in->rate_interval_us;
	val->last_ns = now;
	__sync_fetch_and_add(&val->probes, 1);
}

/* The raw tracepoint: every field through a CO-RE read helper. */
SEC("raw_tp/tcp_probe")
int BPF_PROG(fabmon_tcp_probe, struct sock *sk, struct sk_buff *skb)
{
	const struct tcp_sock *tp = (const struct tcp_sock *)sk;
	struct fm_tcp_val *val = tcp_entry(sk);
	struct tcp_probe_in in;

	if (!val)
		return 0;
	in.snd_una = BPF_CORE_READ(tp, snd_una);
	in.snd_nxt = BPF_CORE_READ(tp, snd_nxt);
	in.srtt_us = BPF_CORE_READ(tp, srtt_us);
	in.cwnd = BPF_CORE_READ(tp, snd_cwnd);
	in.write_seq = BPF_CORE_READ(tp, write_seq);
	in.snd_wnd = BPF_CORE_READ(tp, snd_wnd);
	in.rate_delivered = BPF_CORE_READ(tp, rate_delivered);
	in.rate_interval_us = BPF_CORE_READ(tp, rate_interval_us);
	in.mss = BPF_CORE_READ(tp, mss_cache);
	in.first_tx_us =
		bpf_core_field_exists(tp->first_tx_mstamp) ? BPF_CORE_READ(tp, first_tx_mstamp) : 0;
	in.cb = (const struct tcp_skb_cb *)&skb->cb;
	tcp_probe_update(val, &in);
	return 0;
}

/*
 * The same through BTF (tp_btf, 5.5+): the arguments are typed, so fields
 * are plain loads instead of ~13 helper calls, which is most of this probe's
 * cost on every received segment (805 vs a few hundred ns, make bench). The
 * collector loads this one and falls back to the raw tracepoint where the
 * kernel refuses it.
 */
SEC("tp_btf/tcp_probe")
int BPF_PROG(fabmon_tcp_probe_btf, struct sock *sk, struct sk_buff *skb)
{
	/* the verifier lets BTF loads reach tcp_sock fields only through its
	 * own cast (one helper call; 5.9+) */
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	const struct sock_common *c = &sk->__sk_common;
	struct fm_tcp_key key = {};
	struct fm_tcp_val *val;
	struct tcp_probe_in in;

	if (c->skc_family == AF_INET) {
		__builtin_memcpy(key.saddr, &c->skc_rcv_saddr, 4);
		__builtin_memcpy(key.daddr, &c->skc_daddr, 4);
		key.family = FM_FAMILY_IPV4;
	} else if (c->skc_family == AF_INET6) {
		__builtin_memcpy(key.saddr, &c->skc_v6_rcv_saddr, 16);
		__builtin_memcpy(key.daddr, &c->skc_v6_daddr, 16);
		key.family = FM_FAMILY_IPV6;
	} else {
		return 0;
	}
	if (!tp)
		return 0;
	key.sport = bpf_ntohs(tp->inet_conn.icsk_inet.inet_sport); /* as tcp_key() */
	key.dport = bpf_ntohs(c->skc_dport);
	key.netns = c->skc_net.net->ns.inum;
	val = tcp_entry_key(&key);
	if (!val)
		return 0;
	in.snd_una = tp->snd_una;
	in.snd_nxt = tp->snd_nxt;
	in.srtt_us = tp->srtt_us;
	in.cwnd = tp->snd_cwnd;
	in.write_seq = tp->write_seq;
	in.snd_wnd = tp->snd_wnd;
	in.rate_delivered = tp->rate_delivered;
	in.rate_interval_us = tp->rate_interval_us;
	in.mss = tp->mss_cache;
	in.first_tx_us = tp->first_tx_mstamp;
	in.cb = (const struct tcp_skb_cb *)&skb->cb;
	tcp_probe_update(val, &in);
	return 0;
}

/*
 * sock:inet_sock_set_state(sk, oldstate, newstate) since 4.16: a connection
 * that starts to close is marked closed, with nothing pending, and the
 * collector removes it once it has counted its last deltas. Its last
 * readings (data in flight when it was reset, say) would otherwise look like
 * a stall until it went idle. FIN_WAIT1 and CLOSE_WAIT as well as CLOSE:
 * CLOSE alone comes after a reset (the key's port is inet_sport, which
 * tcp_set_state() leaves, tcp_key()).
 */
SEC("raw_tp/inet_sock_set_state")
int BPF_PROG(fabmon_tcp_state, const struct sock *sk, int oldstate, int newstate)
{
	struct fm_tcp_key key = {};
	struct fm_tcp_val *val;

	if ((newstate != FM_TCP_FIN_WAIT1 && newstate != FM_TCP_CLOSE_WAIT &&
	     newstate != FM_TCP_CLOSE) ||
	    BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP || tcp_key(sk, &key) < 0)
		return 0;
	val = bpf_map_lookup_elem(&fm_tcp, &key);
	if (!val)
		return 0;
	val->in_flight = 0;
	val->unsent = 0;
	val->closed = 1;
	val->last_ns = bpf_ktime_get_ns();
	return 0;
}

/*
 * skb:kfree_skb(skb, location, reason) since 5.17, where reason first came;
 * on older kernels the reason's position is past the arguments and attaching
 * fails (-EINVAL), so this probe needs 5.17 or later.
 */
SEC("raw_tp/kfree_skb")
int BPF_PROG(fabmon_kfree_skb, struct sk_buff *skb, void *location, enum skb_drop_reason reason)
{
	__u32 slot = reason < FM_DROP_REASONS ? reason : FM_DROP_REASONS - 1;
	__u64 *count;

	/* Not drops: 5.17 had neither (its 0 is NOT_SPECIFIED), hence the checks. */
	if (bpf_core_enum_value_exists(enum skb_drop_reason, SKB_NOT_DROPPED_YET) &&
	    reason == bpf_core_enum_value(enum skb_drop_reason, SKB_NOT_DROPPED_YET))
		return 0;
	if (bpf_core_enum_value_exists(enum skb_drop_reason, SKB_CONSUMED) &&
	    reason == bpf_core_enum_value(enum skb_drop_reason, SKB_CONSUMED))
		return 0;
	count = bpf_map_lookup_elem(&fm_drops, &slot);
	if (count)
		(*count)++;
	return 0;
}
