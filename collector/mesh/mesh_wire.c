/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "collector/mesh/mesh_wire.h"

static const uint8_t mesh_magic[4] = { 'F', 'M', 'S', 'H' };

static void put_be(uint8_t *p, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
}

static uint64_t get_be(const uint8_t *p, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes; i++)
		v = v << 8 | p[i];
	return v;
}

void mesh_wire_encode(const struct mesh_msg *m, uint8_t *buf)
{
	memset(buf, 0, MESH_WIRE_LEN);
	memcpy(buf, mesh_magic, sizeof(mesh_magic));
	buf[4] = MESH_WIRE_VERSION;
	buf[5] = (uint8_t)m->type;
	buf[6] = m->flow;
	buf[7] = m->ttl;
	put_be(buf + 8, m->seq, 4);
	put_be(buf + 16, m->send_ns, 8);
	put_be(buf + 24, m->rx_ns, 8);
	put_be(buf + 32, m->tx_ns, 8);
}

int mesh_wire_decode(const uint8_t *buf, size_t len, struct mesh_msg *ret_msg)
{
	if (len != MESH_WIRE_LEN || memcmp(buf, mesh_magic, sizeof(mesh_magic)) != 0 ||
	    buf[4] != MESH_WIRE_VERSION || (buf[5] != MESH_PROBE && buf[5] != MESH_REPLY))
		return -EBADMSG;
	*ret_msg = (struct mesh_msg){
		.type = (enum mesh_wire_type)buf[5],
		.flow = buf[6],
		.ttl = buf[7],
		.seq = (uint32_t)get_be(buf + 8, 4),
		.send_ns = get_be(buf + 16, 8),
		.rx_ns = get_be(buf + 24, 8),
		.tx_ns = get_be(buf + 32, 8),
	};
	return 0;
}
