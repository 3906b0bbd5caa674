/* SPDX-License-Identifier: MIT */
#ifndef FABMON_BPF_TC_H
#define FABMON_BPF_TC_H

#include "collector/collector.h"

/*
 * Attaches the tc probe (bpf/flow.bpf.c) to clsact ingress and egress of the
 * interfaces the agent selects, in the network namespace of the caller, and
 * detaches it again. Every fabmon filter sits at one fixed handle and
 * priority (collector/bpf/tc.c says which and why), so that a fabmon that was killed
 * before it could detach leaves filters the next one can find.
 */
struct bpf_tc;

/*
 * Makes an empty attachment set for the loaded programs ingress_fd and
 * egress_fd (borrowed: they must outlive the set). NULL on allocation failure.
 */
struct bpf_tc *bpf_tc_new(int ingress_fd, int egress_fd);

/*
 * Attaches to every interface of this network namespace that passes
 * collector_want_interface(env, name) and is not attached yet (creating its
 * clsact qdisc if there is none); forgets interfaces that vanished, and
 * detaches from those that no longer pass. Looks whether the interfaces it
 * attached to still have its filters: an interface that lost one (someone
 * ran tc filter del) is lost, with nothing of ours left on it, until a sync
 * env->retry_ms or more later attaches it again. Returns the number of
 * interfaces attached now, or -errno if there was an interface to attach
 * and none is. An interface that could not be attached is tried again by
 * the next sync; bpf_tc_why() says why it failed.
 */
int bpf_tc_sync(struct bpf_tc *tc, const struct collector_env *env);

/*
 * Removes the filters an earlier fabmon left (killed before it could detach)
 * from every interface of this network namespace: a filter at fabmon's handle
 * and priority whose program's name starts with "fabmon_". Any other filter
 * is left alone. Only the holder of the namespace's lock (collector/bpf/tc_lock.h) may
 * call this: another agent's filters look the same. Returns how many were
 * removed, or -errno if the interfaces could not be listed.
 */
int bpf_tc_remove_stale(void);

/*
 * Tells, changing nothing, which interfaces of this network namespace a
 * sync would attach to (", "-separated names, into would) and which hooks
 * have a fabmon filter now, whoever attached it ("IFNAME ingress" items
 * joined by ", ", into found). Returns the number of hooks found, or -errno
 * (-EPERM: telling fabmon's programs from others needs CAP_SYS_ADMIN).
 */
int bpf_tc_survey(const struct collector_env *env, char *would, size_t would_len, char *found,
		  size_t found_len);

/* What is wrong since the last sync: interfaces that failed to attach or
 * lost their filters, as "IFNAME: reason" items joined by "; "; "" if
 * nothing is. Valid until the next sync. */
const char *bpf_tc_why(const struct bpf_tc *tc);

/* What the last sync found changed, to be said once: filters found gone,
 * filters put back ("; "-separated); "" if nothing. Valid until the next
 * sync. */
const char *bpf_tc_news(const struct bpf_tc *tc);

/* The number of interfaces attached (ingress and egress both). */
unsigned bpf_tc_count(const struct bpf_tc *tc);

/* The number of interfaces whose filters were found gone and are not back. */
unsigned bpf_tc_lost(const struct bpf_tc *tc);

/*
 * Detaches every filter this set attached that is still there and still its
 * program, and frees the set. clsact qdiscs stay: other tools' filters may
 * hang off them. Accepts NULL.
 */
void bpf_tc_free(struct bpf_tc *tc);

#endif
