/* SPDX-License-Identifier: MIT */
#ifndef FABMON_MESH_PEER_H
#define FABMON_MESH_PEER_H

#include <net/if.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/mesh/mesh_conf.h"
#include "collector/mesh/mesh_wire.h"

/*
 * What the sender knows of one peer: per flow (source port), the probes in
 * flight, what came back, and the hops the flow's path crosses. Pure state:
 * the engine does the I/O and calls these with its clock.
 */

#define MESH_INFLIGHT 8 /* probes a flow may have unanswered at once */
#define MESH_RECENT 8 /* answers a flow's recent network time is the least of */
/* TTLs a path trace tries: a 3-tier Clos is 6 hops host to host, and 8 flows'
 * traces at once stay within a responder's default 100 probes a second */
#define MESH_HOPS_MAX 8
/* histogram upper bounds, 10 us to 1 s (issue 33): a clean fabric's RTT is
 * tens of microseconds, a lost-and-late one is a second */
#define MESH_RTT_BUCKETS 16
extern const double mesh_rtt_bounds[MESH_RTT_BUCKETS];
/* the same bounds as the text format writes them ("%g"), and "+Inf" */
extern const char *const mesh_rtt_le[MESH_RTT_BUCKETS + 1];

struct mesh_inflight {
	uint32_t seq;
	int used;
	int64_t sent_ns;
};

struct mesh_path {
	uint32_t hop[MESH_HOPS_MAX]; /* hop[i] answered TTL i + 1; 0: unknown */
	uint32_t trace_hop[MESH_HOPS_MAX]; /* the trace in flight's, as hop */
	unsigned n; /* hops, the peer's own last; 0 until a trace ends */
	unsigned reached; /* during a trace: the smallest TTL the peer answered */
	uint32_t trace_seq; /* the sequence number every probe of the trace carries */
	uint32_t id; /* a hash of the hops: the flow's "path" label */
	int64_t trace_end_ns; /* a trace in flight ends then; 0: none */
	int64_t next_ns; /* the next trace starts then */
};

struct mesh_flow {
	uint32_t next_seq;
	struct mesh_inflight inflight[MESH_INFLIGHT];
	uint64_t sent, lost;
	uint64_t answered;
	/* network times (RTT less the responder's delay) of the last
	 * MESH_RECENT answers, seconds; their least is the flow's figure */
	float recent[MESH_RECENT];
	unsigned recent_next;
	double rtt_last; /* seconds, the last answer's whole round trip */
	int64_t last_loss_ns; /* 0: never lost */
	struct mesh_path path;
};

/* One way's queue: in a spike from over halfway between its least and its
 * most one-way time of the last MESH_SPIKE_WINDOW_NS or two
 * (MESH_SPIKE_FLOOR_NS at least), until under two thirds of that rise. The
 * least is a window's too: the two hosts' clocks drift apart (NTP slews
 * at up to 0.5 ms a second), and only the rise counts. */
struct mesh_spike {
	int64_t min_ns[2], max_ns[2], since_ns; /* this window's, and the last's */
	int seen, on;
};

struct mesh_peer {
	uint32_t addr; /* host byte order */
	char ifname[IF_NAMESIZE]; /* the local interface it is routed by; "": none */
	int64_t next_ns; /* the next round of probes is due then */
	int64_t round_ns; /* the last round was sent then */
	uint64_t sent, lost, answered;
	/* rounds (a probe on every flow, sent together) that lost one or more:
	 * a link that drops at random loses them one at a time, a queue that
	 * overflows or a host that stalls several of a round at once */
	uint64_t loss_rounds;
	uint64_t buckets[MESH_RTT_BUCKETS + 1]; /* not cumulative; the last is +Inf */
	uint64_t rtt_sum_ns, delay_sum_ns; /* round trips; the responder's share of them */
	int64_t last_answer_ns;
	/* its kernel (mesh_knock.h): the last knock sent, the last one its
	 * kernel answered, and the first it left unanswered since (0: none) */
	int64_t knock_ns, kernel_answer_ns, kernel_silent_ns;
	/* its queues, one each way, from its answers' one-way times (the
	 * clocks' offset cancels: only their rise counts), after the Spike
	 * scheme (Cen, Cosman and Voelker, "End-to-end differentiation of
	 * congestion and wireless losses", IEEE/ACM ToN 11(5), 2003): the path
	 * is in a spike while either way is and its network time stands
	 * MESH_SPIKE_FLOOR_NS over the least it ever showed (net_least_ns).
	 * Probes answered in a spike, and
	 * those lost in one while the peer went on answering, are counted
	 * apart (queued, lost_queued): a full queue drops only in a spike, a
	 * link that drops at random outside one as often. */
	struct mesh_spike way[2]; /* there, and back */
	int64_t net_least_ns;
	int spike;
	uint64_t queued, lost_queued;
	/* the flows, as many as the engine probes on (its own allocation: a
	 * thousand peers at 8 flows, not at MESH_FLOWS_MAX) */
	struct mesh_flow *flow;
};

/* Records a plain probe of flow f sent at now_ns; returns its sequence
 * number. A probe still unanswered in the slot it takes is lost. */
uint32_t mesh_peer_sent(struct mesh_peer *p, unsigned f, int64_t now_ns);

/*
 * Starts a path trace of flow f, to end at end_ns: the engine sends one
 * probe for each TTL 1..MESH_HOPS_MAX, all with the returned sequence number
 * and the flow's own 5-tuple (as paris-traceroute does, so that ECMP hashes
 * them onto the flow's path). The hops learnt so far stay until it ends.
 */
uint32_t mesh_peer_trace_start(struct mesh_peer *p, unsigned f, int64_t now_ns, int64_t end_ns);

/*
 * Takes reply m (decoded, of flow m->flow) received at rx_ns. Returns 0 if
 * it answers a probe in flight (a path probe's reply marks where the path
 * reached the peer), -ENOENT if not (a wrong or late sequence,
 * counted by the caller), -ERANGE for a flow out of range.
 */
int mesh_peer_reply(struct mesh_peer *p, const struct mesh_msg *m, unsigned flows, int64_t rx_ns);

/*
 * An ICMP time-exceeded from hop (host byte order) for the path probe
 * described by m (the probe's own payload, which the error quotes). Returns
 * 0, or -ENOENT if no such path probe is in flight.
 */
int mesh_peer_hop(struct mesh_peer *p, const struct mesh_msg *m, unsigned flows, uint32_t hop);

/*
 * Counts the plain probes unanswered after timeout_ns as lost (a flow that
 * starts losing has its path traced again at once), and ends the path traces
 * due: hops that never answered stay unknown. Returns the number lost now.
 * Called once a round, before the next is sent, it finds a round's probes
 * unanswered together: a call that loses any counts one loss round.
 */
unsigned mesh_peer_expire(struct mesh_peer *p, unsigned flows, int64_t now_ns, int64_t timeout_ns);

/* A peer that lost a probe this recently, on a flow, while it still answers
 * is probed faster: at the default 1 s a 2 % loss on half of 8 flows shows
 * about once in 12 s, and agent/detect/mesh.h judges loss over 10 s. */
#define MESH_SUSPECT_NS (10 * 1000000000LL)
/* A queue's rise under a millisecond is no spike: a responder's or a
 * path's own jitter (a switch buffer that overflows holds a millisecond
 * and more; the lab's tbf ports 50 ms). */
#define MESH_SPIKE_FLOOR_NS 1000000LL
#define MESH_SPIKE_WINDOW_NS (10 * 1000000000LL)
#define MESH_SUSPECT_SPEEDUP 8

/* True if a flow of p lost a probe since since_ns and p answered a probe
 * since answered_ns: a path losing, not a peer gone. */
int mesh_peer_suspect(const struct mesh_peer *p, unsigned flows, int64_t since_ns,
		      int64_t answered_ns);

/* True if the known path of flow fl crosses hop (host byte order). */
int mesh_flow_crosses(const struct mesh_flow *fl, uint32_t hop);

/* True if some flow of p whose path is known does not cross hop: a hop of
 * some paths to p, not one every path to it crosses (this host's leaf, the
 * peer itself), where a loss may lie that its other flows escape. */
int mesh_peer_hop_avoided(const struct mesh_peer *p, unsigned flows, uint32_t hop);

/* The distinct hops the known paths of p's flows cross past their first
 * (this host's link ends at the first; a peer on the same segment is the
 * one hop of its paths), max at most, into hops. Returns how many. */
size_t mesh_peer_hops(const struct mesh_peer *p, unsigned flows, uint32_t *hops, size_t max);

/* A flow's recent network time: the least of its last MESH_RECENT
 * answers, which a path slower for all of them raises and one late
 * answer (a sender descheduled between its clock and its send) does not.
 * 0 before MESH_RECENT answers: the least of fewer can be one early
 * answer, and a path's first pays for its routers' neighbour lookups. */
double mesh_flow_rtt(const struct mesh_flow *fl);

/* A flow slower than its siblings by less is noise: a sender's own
 * scheduling varies by this much on a busy host. */
#define MESH_SLOW_MARGIN 100e-6

/* The flows that stand out among their siblings (bit f for flow f): those
 * that lost a probe since since_ns, or whose recent network time is more
 * than twice the median of the flows that have one, and MESH_SLOW_MARGIN
 * over it. */
uint64_t mesh_peer_differing(const struct mesh_peer *p, unsigned flows, int64_t since_ns);

#endif
