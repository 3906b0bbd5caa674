/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the frame parse of the libpcap path: the first byte
 * picks the link type, the rest is the frame. Whatever the bytes, the parse
 * must return without reading outside them (AddressSanitizer watches) and
 * leave a kind or an error with a message.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "collector/pcap/lldp.h"
#include "collector/pcap/packet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int links[] = { PACKET_LINK_ETHERNET, PACKET_LINK_LINUX_SLL,
				     PACKET_LINK_LINUX_SLL2 };
	struct lldp_neighbor nb;
	struct packet pkt;
	const char *why;
	uint8_t *frame;
	int r;

	if (size < 1)
		return 0;
	/* a copy of exactly the frame's size, so that ASan sees any over-read */
	frame = malloc(size - 1 ? size - 1 : 1);
	if (!frame)
		return 0;
	for (size_t i = 1; i < size; i++)
		frame[i - 1] = data[i];
	r = packet_parse(links[data[0] % 3], frame, size - 1, &pkt, &why);
	if (r < 0 && !why[0])
		abort(); /* an error always says why */
	if (r == 0 && pkt.kind == PACKET_LLDP)
		(void)lldp_parse(pkt.lldp, pkt.lldp_len, &nb, &why);
	free(frame);
	return 0;
}
