/* SPDX-License-Identifier: MIT */
#ifndef FABMON_CLI_LOCATE_SCORE_H
#define FABMON_CLI_LOCATE_SCORE_H

#include <stdint.h>

/*
 * fabmon locate's arithmetic: from what many nodes reported over a window,
 * a ranked list of suspects. Pure: no I/O, no state, so that it is tested
 * from tables (tests/unit/test_locate_score.c).
 *
 *  - host: a peer that events on at least LOCATE_MIN_REPORTERS other nodes
 *    name (subject peer=ADDR; the caller passes events of cause host
 *    only, and nodes that find its kernel silent), or that its own node
 *    names (host=ADDR: its own word needs no second). Score: the share of the other nodes that name it, its own
 *    counted as one.
 *  - port: an interface whose own node's error counters rose. Score:
 *    errors / (errors + LOCATE_PORT_ERRORS_HALF), so a handful of errors
 *    ranks below a host many nodes blame, a steady stream above it. A
 *    port takes its host's path score (host, access links), which are
 *    then dropped: the port is where on that host its paths lose.
 *  - hop, link: a mesh hop address, or the link between two consecutive
 *    hops, crossed by lossy paths of at least LOCATE_MIN_REPORTERS nodes,
 *    more than half the nodes whose paths cross it (a fault shows on most
 *    of them; a busy host's late answers on a few; a node's own start is
 *    counted by others' paths only), and by more lossy paths than clean
 *    ones (the tomography of Pingmesh and 007: a faulty element loses on
 *    most paths across it, yet at a loss of 1 % some of them lose nothing
 *    for seconds). Score: the share
 *    of all lossy paths that cross it, times the share of lossy ones among
 *    the lossy and clean paths across it, times LOCATE_UNTESTED_SHARE
 *    when none of those paths has a clean sibling (a flow to the same peer
 *    from the same node that lost nothing): a peer lost on every flow says
 *    the fault is somewhere on its paths, not which element, so direct
 *    evidence (events, port counters) ranks first.
 *    A path's start (its node's host) and last hop (its peer) are hosts;
 *    every sibling shares them and the links to them, so the want of a
 *    clean sibling does not lower those. The stronger of a host's two
 *    scores (events, paths) stands.
 * Suspects whose score and evidence are the same (the same reporters, the
 * same paths) cannot be told apart by this data: they share a tie group.
 */

#define LOCATE_MIN_REPORTERS 2
#define LOCATE_PORT_ERRORS_HALF 10.0
#define LOCATE_UNTESTED_SHARE 0.5
#define LOCATE_REPORTERS_LEN 256
/* A hop that did not answer its trace: no element of a path. */
#define LOCATE_HOP_UNKNOWN "?"

enum locate_kind { LOCATE_HOST, LOCATE_PORT, LOCATE_HOP, LOCATE_LINK };

/* "host", "port", "hop", "link". */
extern const char *const locate_kind_names[];

/* A node's event that names a peer. */
struct locate_blame {
	const char *reporter; /* the node (its instance label) */
	const char *host; /* the peer address the event names */
	int64_t first_ms; /* when the node first had it open in the window */
	int self; /* the node names itself (host=ADDR) */
};

/* An interface whose counters show errors over the window. */
struct locate_port {
	const char *node, *interface;
	const char *neighbor; /* "SWITCH port PORT" from LLDP, or NULL */
	double errors;
	int64_t first_ms;
};

/* One probed path (mesh): a node to a peer along hops. */
struct locate_path {
	const char *reporter, *peer;
	const char *const *hops; /* LOCATE_HOP_UNKNOWN for one that did not answer */
	int nhops;
	int lossy; /* 1 lossy, 0 clean (lost nothing), -1 lost under the bound: neither */
	int sibling_clean; /* another flow from its node to its peer lost nothing */
	int64_t first_ms; /* when its loss was first seen (lossy paths) */
};

struct locate_input {
	const struct locate_blame *blames;
	int nblames;
	const struct locate_port *ports;
	int nports;
	const struct locate_path *paths;
	int npaths;
	int nodes; /* the nodes reporting at all (agents up) */
};

struct locate_suspect {
	enum locate_kind kind;
	char name[256];
	double score; /* 0..1 */
	int by_paths; /* the evidence is paths (failing of lossy ones), not nodes */
	int failing, of; /* reporting nodes or lossy paths that implicate it, of how many */
	int clean; /* paths: the clean ones across it */
	double errors; /* ports: errors counted */
	char reporters[LOCATE_REPORTERS_LEN]; /* comma-separated, "..." when cut */
	int64_t first_ms;
	int tie; /* > 0: not separable from the others with this number */
	int self; /* hosts: named by its own node */
};

/*
 * Scores in: *ret is an array of *ret_n suspects (caller frees), best first
 * (score, then evidence, then name). Returns 0 or -ENOMEM.
 */
int locate_score(const struct locate_input *in, struct locate_suspect **ret, int *ret_n);

/* "198.18.0.2" for an instance "198.18.0.2:9478" or "[::1]:9478": the host
 * part, to tell a node from the peer it names. */
void locate_instance_host(const char *instance, char *buf, size_t len);

#endif
