/* SPDX-License-Identifier: MIT */
/*
 * roce_gen: sends RoCEv2-shaped UDP datagrams (BTH + payload + ICRC space) to
 * a lab address, with PSN gaps on purpose, so the probes' per-QP accounting
 * can be checked against a known truth. Not an RDMA stack: no ACKs, no
 * retransmission; the receiver need not listen.
 *
 * usage: roce_gen ADDR COUNT [GAP_EVERY [QP [FIRST_PSN]]]
 *   sends COUNT RC SEND-only packets to ADDR:4791; every GAP_EVERY-th packet
 *   skips one PSN (0: no gaps); prints "sent N gaps G missing M last_psn P".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bpf/roce.h"

#define PAYLOAD 256

int main(int argc, char **argv)
{
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(ROCE_UDP_PORT) };
	unsigned long count, gap_every = 0, qp = 0x11, psn = 0;
	unsigned long gaps = 0, missing = 0;
	unsigned char pkt[ROCE_BTH_LEN + PAYLOAD + ROCE_ICRC_LEN];
	int fd;

	if (argc < 3 || inet_pton(AF_INET, argv[1], &dst.sin_addr) != 1) {
		fprintf(stderr, "usage: roce_gen ADDR COUNT [GAP_EVERY [QP [FIRST_PSN]]]\n");
		return 2;
	}
	count = strtoul(argv[2], NULL, 0);
	if (argc > 3)
		gap_every = strtoul(argv[3], NULL, 0);
	if (argc > 4)
		qp = strtoul(argv[4], NULL, 0) & 0xffffff;
	if (argc > 5)
		psn = strtoul(argv[5], NULL, 0) & ROCE_PSN_MASK;
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("roce_gen: socket");
		return 1;
	}
	memset(pkt, 0xab, sizeof(pkt));
	for (unsigned long i = 0; i < count; i++) {
		/* IBTA 9.2: opcode RC SEND only (0x04), P_Key 0xffff, dest QP, A bit, PSN */
		pkt[0] = 0x04;
		pkt[1] = 0;
		pkt[2] = pkt[3] = 0xff;
		pkt[4] = 0;
		pkt[5] = (unsigned char)(qp >> 16);
		pkt[6] = (unsigned char)(qp >> 8);
		pkt[7] = (unsigned char)qp;
		pkt[8] = 0x80;
		pkt[9] = (unsigned char)(psn >> 16);
		pkt[10] = (unsigned char)(psn >> 8);
		pkt[11] = (unsigned char)psn;
		if (sendto(fd, pkt, sizeof(pkt), 0, (struct sockaddr *)&dst, sizeof(dst)) < 0) {
			perror("roce_gen: sendto");
			return 1;
		}
		psn = (psn + 1) & ROCE_PSN_MASK;
		if (gap_every && (i + 1) % gap_every == 0 && i + 1 < count) {
			psn = (psn + 1) & ROCE_PSN_MASK; /* skip one PSN */
			gaps++;
			missing++;
		}
		/* pace so a veth and the receiver's socket buffer never drop one */
		if (i % 64 == 63)
			usleep(1000);
	}
	printf("sent %lu gaps %lu missing %lu last_psn %lu\n", count, gaps, missing,
	       (psn - 1) & ROCE_PSN_MASK);
	close(fd);
	return 0;
}
