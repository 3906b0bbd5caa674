/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "agent/detect/reconcile.h"

static const char *peer_of(const struct event_verdict *v)
{
	return strncmp(v->subject, "peer=", 5) == 0 ? v->subject + 5 : NULL;
}

/* True if v names peer (its address: a lossy_link's hops may follow). */
static int names_peer(const struct event_verdict *v, const char *peer)
{
	const char *p = peer_of(v);
	size_t len = strcspn(peer, ",");

	return p && strncmp(p, peer, len) == 0 && (p[len] == 0 || p[len] == ',');
}

/* The kind whose verdict on the same peer (any subject, for a host_stall)
 * explains one of kind (reconcile.h); EVENT_KINDS: none does. */
static enum event_kind explainer(enum event_kind kind)
{
	switch (kind) {
	case EVENT_UNREACHABLE:
	case EVENT_HOST_STALL:
		return EVENT_STALL;
	case EVENT_SLOW_HANDOFF:
	case EVENT_STRAGGLER:
	case EVENT_INCAST:
		return EVENT_LOSSY_LINK;
	default:
		return EVENT_KINDS;
	}
}

/* True if a verdict among out[0..n) of the kind that explains v's names
 * v's peer too, or, v a host_stall, is a stall over its bound (not one
 * only held: a connection's short wait on a timer cuts nothing). */
static int explained(const struct event_verdict *out, size_t n, const struct event_verdict *v)
{
	enum event_kind by = explainer(v->kind);
	const char *peer = peer_of(v);

	for (size_t i = 0; i < n && by != EVENT_KINDS; i++)
		if (out[i].kind == by &&
		    (v->kind == EVENT_HOST_STALL ? out[i].weight != VERDICT_HOLD
						 : peer && names_peer(&out[i], peer)))
			return 1;
	return 0;
}

/* True if this host's own link explains v (reconcile.h). */
static int own_link_explains(int cut_off, struct mesh_history *mh, const struct mesh_gather *mg,
			     const struct event_verdict *v, int64_t now_ms)
{
	const char *peer = peer_of(v);

	if (cut_off)
		return peer || strncmp(v->subject, "host=", 5) == 0;
	return peer && event_kind_cause(v->kind) == EVENT_CAUSE_NETWORK &&
	       mesh_own_link_holds(mh, mg, peer, now_ms);
}

size_t reconcile(const struct link_history *kh, struct mesh_history *mh,
		 const struct mesh_gather *mg, struct event_verdict *out, size_t n, int64_t now_ms)
{
	int cut_off = link_cut_off(kh, now_ms);
	size_t k = 0;

	/* the stalls and lossy links stay in this pass: out[0..k) kept,
	 * out(i..n) to come */
	for (size_t i = 0; i < n; i++)
		if (!explained(out, k, &out[i]) && !explained(out + i + 1, n - i - 1, &out[i]))
			out[k++] = out[i];
	n = k;
	k = 0;
	for (size_t i = 0; i < n; i++)
		if (!own_link_explains(cut_off, mh, mg, &out[i], now_ms))
			out[k++] = out[i];
	return k;
}
