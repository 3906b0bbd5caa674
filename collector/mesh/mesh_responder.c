/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "collector/mesh/mesh_responder.h"

/* Slots looked at for one source: a full neighbourhood gives its oldest up. */
#define RATE_PROBE 8

void mesh_responder_init(struct mesh_responder *r, unsigned source_pps)
{
	memset(r, 0, sizeof(*r));
	r->source_pps = source_pps ? source_pps : 1;
}

/* The source's slot, taken over from the least recently seen if needed. */
static struct mesh_rate_slot *rate_slot(struct mesh_responder *r, uint32_t src, int64_t now_ns)
{
	/* Knuth's multiplicative hash spreads neighbouring addresses */
	unsigned h = (src * 2654435761u) % MESH_RATE_SLOTS;
	struct mesh_rate_slot *oldest = &r->slots[h];

	for (unsigned i = 0; i < RATE_PROBE; i++) {
		struct mesh_rate_slot *s = &r->slots[(h + i) % MESH_RATE_SLOTS];

		if (s->addr == src)
			return s;
		if (s->addr == 0 || s->last_ns < oldest->last_ns)
			oldest = s;
		if (s->addr == 0)
			break;
	}
	*oldest =
		(struct mesh_rate_slot){ .addr = src, .tokens = r->source_pps, .last_ns = now_ns };
	return oldest;
}

int mesh_responder_admit(struct mesh_responder *r, uint32_t src, int allowed, const uint8_t *buf,
			 size_t len, int64_t now_ns, struct mesh_msg *ret_probe)
{
	struct mesh_rate_slot *s;
	struct mesh_msg m;

	if (mesh_wire_decode(buf, len, &m) < 0 || m.type != MESH_PROBE) {
		r->stats.refused_malformed++;
		return -EBADMSG;
	}
	if (!allowed) {
		r->stats.refused_source++;
		return -EACCES;
	}
	s = rate_slot(r, src, now_ns);
	if (now_ns > s->last_ns) {
		s->tokens += (double)(now_ns - s->last_ns) * 1e-9 * r->source_pps;
		if (s->tokens > r->source_pps)
			s->tokens = r->source_pps;
	}
	s->last_ns = now_ns;
	if (s->tokens < 1) {
		r->stats.rate_limited++;
		return -EBUSY;
	}
	s->tokens -= 1;
	r->stats.answered++;
	*ret_probe = m;
	return 0;
}
