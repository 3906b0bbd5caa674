/* SPDX-License-Identifier: MIT */
#ifndef FABMON_DETECT_RECONCILE_H
#define FABMON_DETECT_RECONCILE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/detect/events.h"
#include "agent/detect/link.h"
#include "agent/detect/mesh.h"

/*
 * One fault shows as several verdicts: this host's own link down stalls
 * its TCP to every peer; a cut path stalls the TCP and silences the mesh.
 * Keeps the verdicts that name the cause and drops those it explains,
 * each judged against the tick's whole set (a dropped verdict still
 * explains others):
 *  - while this host is cut off (link_cut_off(): every link it used down,
 *    and as long again), any verdict naming a peer or this host itself:
 *    its connections wait on the cut, and on timers that backed off
 *    during it, whatever their applications do;
 *  - a network verdict naming a peer whose paths all cross this host's
 *    own link as the mesh names or awaits it (mesh_own_link_holds(), as
 *    of detect_mesh() at now_ms);
 *  - an unreachable peer that a stall names: a stopped host's kernel
 *    still acknowledges, so acknowledgements that stopped too say its path
 *    is cut, which the stall says;
 *  - a slow_handoff, straggler or incast naming a peer that a lossy_link
 *    names: loss on a path slows its TCP (retransmissions, a smaller
 *    window), and the lossy link is what to mend;
 *  - a host_stall (a peer's or this host's) while a stall over its bound
 *    (not one VERDICT_HOLD keeps open) is in the set:
 *    a cut path blocks the collective, whose other ranks then stop
 *    reading as they wait on it; a stopped application cuts no path.
 * Returns how many of out[0..n) are left, in their order.
 */
size_t reconcile(const struct link_history *kh, struct mesh_history *mh,
		 const struct mesh_gather *mg, struct event_verdict *out, size_t n, int64_t now_ms);

#endif
