/* SPDX-License-Identifier: MIT */
/*
 * flowflood: one UDP datagram for each of FLOWS distinct flows, as fast as
 * it can, to fill the tc probe's flow map past its max_entries (the flow
 * explosion of tests/robustness/t_flow_explosion.sh).
 *
 *   flowflood DST FLOWS SECONDS
 *
 * Flow i comes from 198.18.128.0 + i % 4096 (198.18.128.0-198.18.143.255,
 * inside the benchmarking range 198.18.0.0/15) and source port
 * 1024 + i / 4096, to DST port 9 (discard): every flow a distinct 5-tuple,
 * up to 4096 x 64512. The IPv4 header is the tool's own (IP_HDRINCL on a raw
 * socket: needs CAP_NET_RAW), the datagrams go in sendmmsg() batches; a full
 * device queue is waited out, not skipped, so that each flow is sent once.
 * Stops after FLOWS datagrams or SECONDS, and prints
 * "flows=N seconds=S": the distinct flows sent. Exit 0, 1 if it could not
 * send, 2 on a usage error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "labtool.h"

#define FF_BATCH 256
#define FF_SRC_BASE 0xc6128000u /* 198.18.128.0 */
#define FF_SRC_SPAN 4096u
#define FF_SPORT_BASE 1024u
#define FF_FLOWS_MAX ((uint64_t)FF_SRC_SPAN * (65536u - FF_SPORT_BASE))
#define FF_PAYLOAD 18 /* a 60-byte Ethernet frame: the minimum */

struct ff_pkt {
	struct iphdr ip;
	struct udphdr udp;
	uint8_t payload[FF_PAYLOAD];
} __attribute__((packed));

static double ff_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* RFC 791's header checksum: the ones' complement of the ones' complement
 * sum of the header's 16-bit words. */
static uint16_t ff_ip_checksum(const void *hdr, size_t len)
{
	const uint8_t *p = hdr;
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((uint16_t)~sum);
}

static void ff_fill(struct ff_pkt *p, uint32_t dst, uint64_t i)
{
	memset(p, 0, sizeof(*p));
	p->ip.version = 4;
	p->ip.ihl = 5;
	p->ip.tot_len = htons(sizeof(*p));
	p->ip.ttl = 64;
	p->ip.protocol = IPPROTO_UDP;
	p->ip.saddr = htonl(FF_SRC_BASE + (uint32_t)(i % FF_SRC_SPAN));
	p->ip.daddr = dst;
	p->ip.check = ff_ip_checksum(&p->ip, sizeof(p->ip));
	p->udp.source = htons((uint16_t)(FF_SPORT_BASE + i / FF_SRC_SPAN));
	p->udp.dest = htons(9);
	p->udp.len = htons(sizeof(p->udp) + FF_PAYLOAD);
	/* UDP checksum 0: none (RFC 768) */
}

int main(int argc, char **argv)
{
	static struct ff_pkt pkts[FF_BATCH];
	struct mmsghdr mm[FF_BATCH];
	struct iovec iov[FF_BATCH];
	struct sockaddr_in to = { .sin_family = AF_INET };
	uint64_t flows, sent = 0;
	double secs, t0, t;
	int fd, one = 1;
	char *end;

	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		printf("usage: flowflood DST FLOWS SECONDS\n"
		       "One UDP datagram for each of FLOWS distinct flows (sources in\n"
		       "198.18.128.0/20, ports from 1024) to DST port 9, for at most SECONDS.\n");
		return 0;
	}
	if (argc != 4 || inet_pton(AF_INET, argv[1], &to.sin_addr) != 1)
		return labtool_usage_error("flowflood", "expected DST FLOWS SECONDS") ? 2 : 0;
	flows = strtoull(argv[2], &end, 10);
	if (*end || flows == 0 || flows > FF_FLOWS_MAX)
		return labtool_usage_error("flowflood", "FLOWS: 1 to %llu",
					   (unsigned long long)FF_FLOWS_MAX)
			       ? 2
			       : 0;
	secs = strtod(argv[3], &end);
	if (*end || secs <= 0 || secs > 3600)
		return labtool_usage_error("flowflood", "SECONDS: more than 0, at most 3600") ? 2
											      : 0;
	fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (fd < 0 || setsockopt(fd, IPPROTO_IP, IP_HDRINCL, &one, sizeof(one)) < 0) {
		perror("flowflood: raw socket");
		return 1;
	}
	for (int k = 0; k < FF_BATCH; k++) {
		iov[k].iov_base = &pkts[k];
		iov[k].iov_len = sizeof(pkts[k]);
		memset(&mm[k], 0, sizeof(mm[k]));
		mm[k].msg_hdr.msg_iov = &iov[k];
		mm[k].msg_hdr.msg_iovlen = 1;
		mm[k].msg_hdr.msg_name = &to;
		mm[k].msg_hdr.msg_namelen = sizeof(to);
	}
	t0 = ff_now();
	while (sent < flows && (t = ff_now()) - t0 < secs) {
		unsigned n = flows - sent < FF_BATCH ? (unsigned)(flows - sent) : FF_BATCH;
		int r;

		for (unsigned k = 0; k < n; k++)
			ff_fill(&pkts[k], to.sin_addr.s_addr, sent + k);
		r = sendmmsg(fd, mm, n, 0);
		if (r < 0 && (errno == ENOBUFS || errno == EAGAIN || errno == EINTR)) {
			/* the queue is full: wait for room, send the same flows again */
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };

			(void)poll(&pfd, 1, 10);
			continue;
		}
		if (r < 0) {
			perror("flowflood: sendmmsg");
			close(fd);
			return 1;
		}
		sent += (uint64_t)r;
	}
	printf("flows=%llu seconds=%.3f\n", (unsigned long long)sent, ff_now() - t0);
	close(fd);
	return 0;
}
