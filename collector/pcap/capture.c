/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector/pcap/capture.h"
#include "bpf/account.h"

struct capture {
	struct kmap *flows, *qps;
	struct kmap *paths; /* struct fm_path_key -> __u32, as the probe's fm_paths */
	__u32 pmtu_shift; /* of the configured path MTU */
	unsigned link_mbps; /* the link's speed, Mb/s; 0 unknown */
	struct capture_stats stats;
};

struct capture *capture_new(unsigned max_entries, unsigned roce_pmtu, unsigned link_mbps)
{
	struct capture *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->link_mbps = link_mbps;
	c->pmtu_shift = roce_pmtu_shift(roce_pmtu);
	c->flows = kmap_new(sizeof(struct fm_flow_key), sizeof(struct fm_flow_val), max_entries);
	c->qps = kmap_new(sizeof(struct fm_qp_key), sizeof(struct fm_qp_val), max_entries);
	c->paths = kmap_new(sizeof(struct fm_path_key), sizeof(__u32), max_entries);
	if (!c->pmtu_shift || !c->flows || !c->qps || !c->paths) {
		capture_free(c);
		return NULL;
	}
	return c;
}

void capture_free(struct capture *c)
{
	if (!c)
		return;
	kmap_free(c->flows);
	kmap_free(c->qps);
	kmap_free(c->paths);
	free(c);
}

/* log2 of the PMTU a READ request on QP key qk is counted by (fm_pmtu_shift()). */
static __u32 path_pmtu(const struct capture *c, const struct fm_qp_key *qk)
{
	struct fm_path_key pk;
	const __u32 *learnt;

	fm_path_key_of(&pk, qk, 0);
	learnt = kmap_get(c->paths, &pk);
	return fm_pmtu_shift(learnt ? *learnt : 0, c->pmtu_shift);
}

/* Keeps the largest PMTU the READ responses on QP key qk's path showed. */
static void path_learn(struct capture *c, const struct fm_qp_key *qk, __u32 shift)
{
	struct fm_path_key pk;
	__u32 *learnt;
	int created;

	fm_path_key_of(&pk, qk, 1);
	learnt = kmap_put(c->paths, &pk, &created);
	if (learnt && *learnt < shift)
		*learnt = shift;
}

static void count_qp(struct capture *c, const struct packet *pkt, uint32_t len, uint64_t ts_ns)
{
	struct fm_req rq = { .span = FM_SPAN_ONE };
	struct fm_qp_key key;
	struct fm_qp_val *v;
	int created;
	__u32 shift;

	memset(&key, 0, sizeof(key));
	memcpy(key.saddr, pkt->flow.saddr, sizeof(key.saddr));
	memcpy(key.daddr, pkt->flow.daddr, sizeof(key.daddr));
	key.ifindex = pkt->flow.ifindex;
	key.family = pkt->flow.family;
	key.dir = pkt->flow.dir;
	key.dest_qp = pkt->bth.dest_qp;
	v = kmap_put(c->qps, &key, &created);
	if (!v) {
		c->stats.qps_full++;
		return;
	}
	if (roce_classify(pkt->bth.opcode) == ROCE_CLASS_READ_REQUEST) {
		rq.span = pkt->has_reth ? FM_SPAN_READ : FM_SPAN_NONE;
		rq.read_len = pkt->read_len;
	} else {
		shift = roce_pmtu_shift_of(&pkt->bth, pkt->udp_len);
		if (shift)
			path_learn(c, &key, shift);
	}
	if (fm_qp_wants_pmtu(v, &pkt->bth))
		rq.pmtu_shift = path_pmtu(c, &key);
	fm_qp_add(v, &pkt->bth, &rq, pkt->ecn, len, ts_ns);
	if (pkt->has_aeth)
		fm_qp_aeth(v, pkt->aeth_syndrome);
}

/* A quantum is 512 bit times: at link_mbps Mb/s, 512000 / link_mbps ns. */
#define PAUSE_QUANTUM_BITS 512

void capture_pause_add(struct capture_pause *p, const struct packet *pkt, uint64_t ts_ns,
		       unsigned link_mbps)
{
	for (unsigned i = 0; i < PACKET_PAUSE_SLOTS; i++) {
		uint64_t at = ts_ns;

		if (!(pkt->pause_slots & 1u << i))
			continue;
		p->frames[i]++;
		p->quanta[i] += pkt->pause_quanta[i];
		if (!link_mbps)
			continue;
		if (p->timed >> i & 1) {
			if (at < p->last_ns[i])
				at = p->last_ns[i];
			p->paused_ns[i] = capture_pause_paused_ns(p, i, at);
		}
		p->timed |= 1ULL << i;
		p->last_ns[i] = at;
		p->until_ns[i] =
			at + (uint64_t)pkt->pause_quanta[i] * PAUSE_QUANTUM_BITS * 1000 / link_mbps;
	}
}

uint64_t capture_pause_paused_ns(const struct capture_pause *p, unsigned i, uint64_t now_ns)
{
	uint64_t end;

	if (i >= PACKET_PAUSE_SLOTS || !(p->timed >> i & 1))
		return 0;
	end = now_ns < p->until_ns[i] ? now_ns : p->until_ns[i];
	return p->paused_ns[i] + (end > p->last_ns[i] ? end - p->last_ns[i] : 0);
}

int capture_packet(struct capture *c, uint32_t ifindex, int linktype, const uint8_t *data,
		   size_t caplen, size_t len, uint64_t ts_ns, struct packet *ret_pkt,
		   const char **ret_why)
{
	/* a frame on the wire is at most 256 KiB here (libpcap's bound) */
	uint32_t wire = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
	struct fm_flow_val *v;
	int created, r;

	c->stats.packets++;
	c->stats.bytes += len;
	r = packet_parse(linktype, data, caplen, ret_pkt, ret_why);
	if (r < 0 || ret_pkt->kind == PACKET_OTHER) {
		c->stats.unparsed++;
		return r;
	}
	if (ret_pkt->kind == PACKET_LLDP) {
		c->stats.lldp++;
		return 0;
	}
	if (ret_pkt->kind == PACKET_PAUSE) {
		capture_pause_add(&c->stats.pause, ret_pkt, ts_ns, c->link_mbps);
		return 0;
	}
	if (ret_pkt->roce_unparsed && ret_pkt->kind == PACKET_ROCE) {
		c->stats.roce_cut_after_bth++;
		*ret_why = roce_classify(ret_pkt->bth.opcode) == ROCE_CLASS_READ_REQUEST
				   ? "RoCEv2 RETH cut short"
				   : "RoCEv2 AETH cut short";
	} else if (ret_pkt->roce_unparsed) {
		c->stats.roce_cut_bth++;
		*ret_why = "RoCEv2 BTH cut short";
	}
	ret_pkt->flow.ifindex = ifindex;
	ret_pkt->flow.dir = FM_DIR_EGRESS;
	v = kmap_put(c->flows, &ret_pkt->flow, &created);
	if (v)
		fm_flow_add(v, ret_pkt->ecn, ret_pkt->tcp_flags, wire, ts_ns);
	else
		c->stats.flows_full++;
	if (ret_pkt->kind == PACKET_ROCE) {
		c->stats.roce++;
		count_qp(c, ret_pkt, wire, ts_ns);
	}
	return 0;
}

const struct capture_stats *capture_stats(const struct capture *c)
{
	return &c->stats;
}

struct kmap *capture_flows(struct capture *c)
{
	return c->flows;
}

struct kmap *capture_qps(struct capture *c)
{
	return c->qps;
}
