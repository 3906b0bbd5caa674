/* SPDX-License-Identifier: MIT */
#ifndef FABMON_DETECT_MESH_H
#define FABMON_DETECT_MESH_H

#include <stddef.h>
#include <stdint.h>

#include "agent/detect/events.h"
#include "agent/registry/registry.h"

/*
 * What the mesh collector's probes say about each peer's paths (collector/mesh):
 * a peer that stops answering on every flow at once is unreachable; one
 * whose probes are lost on some flows only has a lossy link on those flows'
 * path; one whose flows are slow on some paths only has a path_latency.
 * Where the failing flows share hops that other flows avoid, the subject
 * names them: that is where the fault sits.
 */

/* every peer of a thousand-node cluster (MESH_ADDRS_MAX is the targets'
 * bound); about 1.5 KB each once seen at 1 s ticks, 5 KB at 100 ms */
#define MESH_DETECT_PEERS 1024
#define MESH_DETECT_FLOWS 64 /* MESH_FLOWS_MAX */
/* flows whose hops are compared: the default 8 and then some */
#define MESH_DETECT_HOP_FLOWS 16
#define MESH_DETECT_HOPS 8 /* MESH_HOPS_MAX */
/* Loss is judged over the last 10 s: the bound on naming a lossy
 * link. */
#define MESH_LOSS_WINDOW_MS 10000
/* A path losing at most one probe in 10000 is clean: a fabric's links lose
 * far less, and an event for such a path would be noise. The losses of the
 * window are a lossy link once a path that clean would lose as many less
 * than once in 1000 windows (the binomial tail): one loss in the 80 probes
 * of 10 s at the defaults is chance, two are not, and a peer the collector
 * probes faster since its first loss needs three past 450 probes. */
#define MESH_CLEAN_LOSS 1e-4
#define MESH_LOSS_ALPHA 1e-3
/* Hops a tick's losing flows cross that are judged over every peer's
 * flows across them: a path's switches and links, for a few losing peers */
#define MESH_POOL_HOPS 16
/* Every flow unanswered for 3 s: a peer gone, not a path losing. */
#define MESH_UNREACHABLE_MS 3000
/* Every peer a local interface carries failing (losing probes in the loss
 * window, or gone), three at least: the interface's own link, which every
 * path crosses. Two failing peers can be two faults; a fabric link fails
 * the paths that cross it, and leaves the others (a leaf-mate's) clean. */
#define MESH_OWN_LINK_PEERS 3
/* While an interface's peers' failures may be its own link's, their
 * lossy_link verdicts wait this long for it to be named: while more than
 * 3/4 of them (3 at least) fail, and not yet all; or while two peers or
 * more lost whose paths cross no hop in common past this host's first (no
 * fabric link or switch explains them all). An own link that
 * loses 3 % fails its peers a second or two apart, and was named peer by
 * peer first. A fabric link fails the paths across it, which share it; a
 * leaf's uplink in a fabric of many leaves may fail over 3/4 of the peers,
 * which wait this long, then speak. Once the interface is named, they wait
 * while most still fail: a peer whose window came out clean for a moment
 * does not make the rest its own. */
#define MESH_OWN_LINK_WAIT_MS 3000
/* One peer losing alone is its path's, not this host's link's, once the
 * interface's other peers answered so many probes since its first loss
 * that the same loss rate would have cost them one but for this chance:
 * a link that fails one peer first fails the rest within a few of its
 * losses. */
#define MESH_SIBLINGS_ALPHA 0.05
/* The hops of the first losing peer's paths that the others' are met with:
 * 8 flows over 2-4 spines cross 10 or so */
#define MESH_SHARED_HOPS 32
#define MESH_IFACES_MAX 32
/* A flow's network time this far over its peer's average, and twice it,
 * is a slow path (collector/mesh's MESH_SLOW_MARGIN: under it, a busy
 * sender's own scheduling) */
#define MESH_SLOW_MARGIN_S 100e-6

/* A peer's flows this tick, from their own series: the collector shows
 * them only for peers one of whose flows stands out, so most peers have
 * none, and at a thousand peers these 768 bytes each are not held for
 * them. */
struct mesh_obs_flows {
	float rtt[MESH_DETECT_FLOWS]; /* shown flows' recent RTT, seconds; 0: not shown */
	uint32_t hop[MESH_DETECT_HOP_FLOWS][MESH_DETECT_HOPS]; /* 0: none or unknown */
};

/* One peer this tick, from its series. Rates are per second. */
struct mesh_obs {
	char peer[48];
	uint32_t addr; /* peer, IPv4, host byte order; 0: not IPv4 */
	char ifname[16]; /* the local interface it is routed by; "": not known */
	double sent, lost; /* fabmon_mesh_probes_{sent,lost}_total */
	/* fabmon_mesh_probes_{queued,lost_queued}_total: sent and lost while
	 * the path's queue stood in a spike */
	double sent_queued, lost_queued;
	int64_t last_answer_ms; /* fabmon_mesh_last_answer_timestamp_seconds; 0: none */
	double kernel_silent_s; /* fabmon_mesh_kernel_silent_seconds; 0: not shown */
	double rtt_sum, rtt_count; /* fabmon_mesh_rtt_seconds_{sum,count} */
	double delay_sum; /* fabmon_mesh_responder_delay_seconds_total */
	uint64_t lost_flows; /* flows whose own lost series rose (bit = flow) */
	uint64_t known_flows; /* flows whose hops are known */
	struct mesh_obs_flows *flows; /* NULL: no flow of it shows */
};

/* This tick's observations, filled from the registry's series. */
struct mesh_gather {
	struct mesh_obs obs[MESH_DETECT_PEERS];
	size_t n;
	size_t hint; /* name_find()'s */
	/* the obs' flows, n_flows of them taken this tick (pages never
	 * taken are never touched) */
	struct mesh_obs_flows flows[MESH_DETECT_PEERS];
	size_t n_flows;
};

/* Clears g for a new tick. */
void mesh_gather_begin(struct mesh_gather *g);

/* The flows of o, one of g's observations: zeroed the first time in a
 * tick. */
struct mesh_obs_flows *mesh_obs_flows(struct mesh_gather *g, struct mesh_obs *o);

/* True if name is a family mesh_gather_series() reads. */
int mesh_gather_wants(const char *name);

/* Takes one series of the mesh collector's; others are ignored. Peers past
 * MESH_DETECT_PEERS are ignored. */
void mesh_gather_series(struct mesh_gather *g, const struct series *s);

/* One tick of a peer's probes, counted over the tick (floats: a tick's
 * counts and seconds need no more). */
struct mesh_tick {
	int64_t ms;
	float sent, lost;
	float sent_queued, lost_queued; /* of sent and lost, those in a queue's spike */
	float rtt_n; /* the tick's answers */
	uint64_t lost_flows;
};

struct mesh_history_peer {
	char peer[48];
	int64_t last_ms; /* the tick it was last in */
	size_t obs; /* its observation in that tick's gather */
	int64_t answer_ms; /* the last tick some probe was answered; 0: never */
	int64_t last_answer_ms; /* when one last was, as the collector saw it; 0: never */
	double kernel_silent_s; /* as its last tick showed it */
	int64_t silent_ms; /* the last tick it lost every probe of a second; 0: never */
	unsigned next, count; /* its ring of ticks: the next slot, and the slots used */
};

struct mesh_history {
	struct mesh_history_peer peers[MESH_DETECT_PEERS];
	size_t n;
	unsigned flows; /* probed per peer (mesh_flows): a round's probes; the caller's to set */
	int64_t answer_wait_ms; /* mesh_answer_wait_ms() of mesh_interval; the caller's to set */
	/* each peer's ring of ticks, peer i's from tick + i * ring: as long as
	 * the loss window holds ticks (it grows to that), so that a 1 s tick
	 * keeps 16 and a 100 ms tick 128 */
	struct mesh_tick *tick;
	unsigned ring;
	size_t hint; /* name_find()'s */
	/* interfaces whose peers' failures may be their own link's
	 * (MESH_OWN_LINK_WAIT_MS): since when, the last tick they were, and
	 * when the interface itself was last named (0: not yet) */
	struct mesh_own_suspect {
		char ifname[16];
		int64_t since_ms, last_ms, named_ms;
	} own_suspect[MESH_IFACES_MAX];
	size_t n_own_suspect;
};

/* Adds this tick's observations to h (zeroed before first use): each rate
 * times the time since the peer's last tick. Peers absent for the loss
 * window are forgotten. A ring that cannot grow (no memory) keeps its
 * newest ticks. */
void mesh_history_update(struct mesh_history *h, const struct mesh_gather *g, int64_t now_ms);
/* Frees h's rings: h is then as if zeroed. */
void mesh_history_free(struct mesh_history *h);

/* True if peer answered a probe after since_ms: its paths delivered since
 * (to the millisecond, whatever the tick). False for a peer h does not
 * probe. */
int mesh_answered_since(struct mesh_history *h, const char *peer, int64_t since_ms);

/* True if a probe to peer was lost outside a queue's spike (at random, as a
 * lossy link drops) in a tick after since_ms. False for a peer h does not
 * probe. */
int mesh_lost_since(struct mesh_history *h, const char *peer, int64_t since_ms);

/*
 * The verdicts: unreachable (every probe lost for MESH_UNREACHABLE_MS, at
 * once, of a peer that answered before); else, unless every probe of the
 * last second was lost (a peer going), lossy_link (more probes lost over
 * MESH_LOSS_WINDOW_MS than a clean path would lose by chance,
 * MESH_CLEAN_LOSS and MESH_LOSS_ALPHA, on 2 ticks or more, while other
 * flows answered, outside a queue's spike (the collector's), and the peer was
 * not silent within the window (an outage's losses: every probe of a
 * second lost, or half a tick's on every flow); at once: the window was
 * the persistence);
 * path_latency (a flow's network time, the responder's delay taken out,
 * over twice its peer's and MESH_SLOW_MARGIN_S over it, a tick over, where
 * a hop the slow flows cross separates them from another: through the same
 * hops, or hops unknown, a slow flow is its hosts').
 * Subjects "peer=A.B.C.D" with ",hops=H1+H2": the hops every failing flow
 * crosses and some other flow avoids. While every peer an interface carries
 * fails (MESH_OWN_LINK_PEERS), their verdicts give way to one naming
 * "interface=IF": stall once every one is unreachable; lossy_link once
 * their window's losses together (of those no queue explains) are beyond
 * chance, on 2 ticks or more, and some of them answered in the last
 * second (a cut is not lossy).
 * More than 3/4 of them failing is enough where the paths of those that
 * lost share no hop past this host's first. While more than 3/4 fail, or
 * those that lost share no such hop, their lossy_link verdicts wait up to
 * MESH_OWN_LINK_WAIT_MS for the interface, and after it is named (h keeps
 * both times).
 * g is the tick's gather h was last updated with. Pure: no I/O. Returns
 * how many were written.
 */
size_t detect_mesh(struct mesh_history *h, const struct mesh_gather *g, int64_t now_ms,
		   struct event_verdict *out, size_t max);

/* True if, as of detect_mesh() at now_ms, peer's failures look like this
 * host's own link's (its interface named, or awaited as lossy_link
 * verdicts on its peers are): a TCP path to the peer that slows or stalls
 * crosses that link, and says nothing of the peer. False for a peer h
 * does not probe or had no reading of at now_ms. */
int mesh_own_link_holds(struct mesh_history *h, const struct mesh_gather *g, const char *peer,
			int64_t now_ms);

#endif
