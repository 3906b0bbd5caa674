/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "agent/detect/reconcile.h"

static const char *peer_of(const struct event_verdict *v)
{
	return strncmp(v->subject, "peer=", 5) == 0 ? v->subject + 5 : NULL;
}

/* True if a stall among out[0..n) names peer. */
static int stall_names(const struct event_verdict *out, size_t n, const char *peer)
{
	for (size_t i = 0; i < n; i++)
		if (out[i].kind == EVENT_STALL && peer_of(&out[i]) &&
		    strcmp(peer_of(&out[i]), peer) == 0)
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

	/* the stalls stay in this pass: out[0..k) kept, out(i..n) to come */
	for (size_t i = 0; i < n; i++) {
		const char *peer = peer_of(&out[i]);

		if (out[i].kind != EVENT_UNREACHABLE || !peer ||
		    (!stall_names(out, k, peer) && !stall_names(out + i + 1, n - i - 1, peer)))
			out[k++] = out[i];
	}
	n = k;
	k = 0;
	for (size_t i = 0; i < n; i++)
		if (!own_link_explains(cut_off, mh, mg, &out[i], now_ms))
			out[k++] = out[i];
	return k;
}
