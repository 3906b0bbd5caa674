/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../bpf/account.h"
#include "capture.h"

struct capture {
	struct kmap *flows, *qps;
	struct capture_stats stats;
};

struct capture *capture_new(unsigned max_entries)
{
	struct capture *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->flows = kmap_new(sizeof(struct fm_flow_key), sizeof(struct fm_flow_val), max_entries);
	c->qps = kmap_new(sizeof(struct fm_qp_key), sizeof(struct fm_qp_val), max_entries);
	if (!c->flows || !c->qps) {
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
	free(c);
}

static void count_qp(struct capture *c, const struct packet *pkt, uint32_t len, uint64_t ts_ns)
{
	struct fm_qp_key key;
	struct fm_qp_val *v;
	int created;

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
	fm_qp_add(v, &pkt->bth, pkt->ecn, len, ts_ns);
	if (pkt->has_aeth)
		fm_qp_aeth(v, pkt->aeth_syndrome);
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
	if (ret_pkt->roce_unparsed && ret_pkt->kind == PACKET_ROCE) {
		c->stats.roce_cut_aeth++;
		*ret_why = "RoCEv2 AETH cut short";
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
