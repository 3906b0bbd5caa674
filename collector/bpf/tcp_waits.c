/* SPDX-License-Identifier: MIT */
#include "collector/bpf/tcp_waits.h"

/* Whether v, waiting since progress_ns, has gone away unseen
 * (TCP_ORPHAN_QUIET_NS). Only where retransmissions are seen: without that
 * probe a live connection's RTOs leave last_ns alone too. */
static int tcp_orphaned(const struct fm_tcp_val *v, int64_t now_ns, int retransmits_seen)
{
	int64_t quiet = now_ns - (int64_t)v->last_ns, waited = now_ns - (int64_t)v->progress_ns;

	return retransmits_seen && v->progress_ns && quiet >= TCP_ORPHAN_QUIET_NS &&
	       10 * quiet >= 9 * waited;
}

int64_t tcp_loss_ns(const struct fm_tcp_val *v, int64_t now_ns, int retransmits_seen)
{
	if (tcp_orphaned(v, now_ns, retransmits_seen))
		return 0;
	if (v->in_flight && v->progress_ns &&
	    now_ns - (int64_t)v->progress_ns >= (int64_t)FM_ACK_WAIT_NS)
		return now_ns;
	return (int64_t)v->resumed_ns;
}

int tcp_waits(const struct fm_tcp_val *v, int64_t now_ns, int retransmits_seen, int64_t loss_ns,
	      double *waited, double *unread)
{
	/* the peer's kernel went on taking data well after its application's
	 * last read, or closed its window: it is alive and not reading. A dead
	 * path stops acks within the gap between two reads of a stream. Acks
	 * count from the end of the last loss on the peer's connections too,
	 * where that is later: its application reads a stream in order, so it
	 * waits on the retransmission, and a collective's rank reads one
	 * peer's next chunk only once the chunk the loss holds up is in (the
	 * lab's all-to-all leaves the others' data unread so, as NCCL's fixed
	 * buffers do). The ACK of that retransmission, too, comes before the
	 * application can read past it, and leaves the edge where it stood: a
	 * clean all-to-all raised a 0.30 s read stall on such an ACK, at the
	 * end of a 0.2 s wait. */
	int64_t since = loss_ns > (int64_t)v->read_ns ? loss_ns : (int64_t)v->read_ns;
	int unread_seen = (int64_t)v->progress_ns >= since + TCP_READ_PROOF_NS ||
			  (v->unsent && v->snd_wnd == 0);

	if (tcp_orphaned(v, now_ns, retransmits_seen))
		return 0;
	/* no ack progress: how long it has waited */
	*waited = v->progress_ns && now_ns > (int64_t)v->progress_ns
			  ? (double)(now_ns - (int64_t)v->progress_ns) / 1e9
			  : 0;
	*unread = unread_seen && v->read_ns && now_ns > (int64_t)v->read_ns
			  ? (double)(now_ns - (int64_t)v->read_ns) / 1e9
			  : 0;
	return 1;
}
