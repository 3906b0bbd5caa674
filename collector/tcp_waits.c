/* SPDX-License-Identifier: MIT */
#include "tcp_waits.h"

/* Whether v, waiting since progress_ns, has gone away unseen
 * (TCP_ORPHAN_QUIET_NS). Only where retransmissions are seen: without that
 * probe a live connection's RTOs leave last_ns alone too. */
static int tcp_orphaned(const struct fm_tcp_val *v, int64_t now_ns, int retransmits_seen)
{
	int64_t quiet = now_ns - (int64_t)v->last_ns, waited = now_ns - (int64_t)v->progress_ns;

	return retransmits_seen && v->progress_ns && quiet >= TCP_ORPHAN_QUIET_NS &&
	       10 * quiet >= 9 * waited;
}

int tcp_waits(const struct fm_tcp_val *v, int64_t now_ns, int retransmits_seen, double *waited,
	      double *unread)
{
	/* the peer's kernel went on taking data well after its application's
	 * last read, or closed its window: it is alive and not reading. A dead
	 * path stops acks within the gap between two reads of a stream. Acks
	 * count from the end of the connection's last wait for them too,
	 * where that is later: a retransmission that fills a hole is acked
	 * before the application can read past it, so that ACK leaves the
	 * edge where it stood (a clean all-to-all raised a 0.30 s read stall
	 * on such an ACK, at the end of a 0.2 s wait). Not another
	 * connection's, though a rank that waits on one sender's loss leaves
	 * the others' next chunks unread too: with every connection's losses
	 * to the peer counted, one t_incast bench run in 3, and one fault in
	 * 24 of a long incast, named a neighbour of the hot receiver beside
	 * it. A neighbour waits on its connection with the hot receiver, whose
	 * ACKs that port drops, and while its read stall stood its path was
	 * not judged. */
	uint64_t since = v->resumed_ns > v->read_ns ? v->resumed_ns : v->read_ns;
	int unread_seen =
		v->progress_ns >= since + TCP_READ_PROOF_NS || (v->unsent && v->snd_wnd == 0);

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
