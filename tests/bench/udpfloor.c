/* SPDX-License-Identifier: MIT */
/*
 * udpfloor: the floor under the mesh benchmark. It sends the datagrams the
 * mesh engine sends at 1000 peers x 8 flows a second (a 40-byte probe to
 * each peer on each of 8 sockets, a fiftieth of the peers every 20 ms) and
 * reads the replies in recvmmsg() batches, with the same socket options and
 * nothing else: no schedule, no state, no registry. Its CPU is what the
 * kernel charges for those packets; the mesh thread's, less this, is
 * fabmon's own.
 *
 * Usage: udpfloor PEERS SECONDS BATCH
 * Probes 198.19.(i / 250).(i % 250 + 1):9479 for i < PEERS, as
 * tests/bench/mesh.sh lays them out. BATCH 1 sends with one sendmsg() a
 * datagram; more sends a slice's datagrams of one socket with sendmmsg(),
 * BATCH at a time. Prints "sent N replies N user_pct U sys_pct S" (CPU in
 * % of a core); exit status 1 if a socket could not be opened.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "collector/mesh/mesh_wire.h"

#define FLOWS 8
#define SLICES 50 /* the engine's ROUND_QUANTUM_DIV: 20 ms at 1 s */
#define BATCH_MAX 1024
#define READ_BATCH 64
#define PORT 9479

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A socket as mesh_engine.c's udp_open() makes a flow's. Returns fd or -1. */
static int flow_open(void)
{
	int one = 1, ts = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
	int rcvbuf = 1 << 20;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	(void)setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &ts, sizeof(ts));
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (setsockopt(fd, IPPROTO_IP, IP_RECVERR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Reads what fd holds, a batch at a time; returns how many. */
static unsigned drain(int fd)
{
	static uint8_t buf[READ_BATCH][MESH_WIRE_LEN + 1];
	static char ctl[READ_BATCH][256];
	static struct mmsghdr mm[READ_BATCH];
	static struct iovec iov[READ_BATCH];
	unsigned got = 0;
	int n;

	do {
		for (int i = 0; i < READ_BATCH; i++) {
			iov[i] = (struct iovec){ .iov_base = buf[i], .iov_len = sizeof(buf[i]) };
			mm[i].msg_hdr = (struct msghdr){ .msg_iov = &iov[i],
							 .msg_iovlen = 1,
							 .msg_control = ctl[i],
							 .msg_controllen = sizeof(ctl[i]) };
		}
		n = recvmmsg(fd, mm, READ_BATCH, MSG_DONTWAIT, NULL);
		got += n > 0 ? (unsigned)n : 0;
	} while (n == READ_BATCH);
	return got;
}

/* Sends the k datagrams of mm on fd, batch at a time (1: sendmsg()).
 * Returns how many went. */
static unsigned send_all(int fd, struct mmsghdr *mm, unsigned k, unsigned batch)
{
	unsigned sent = 0;

	for (unsigned i = 0; i < k; i += batch) {
		unsigned n = k - i < batch ? k - i : batch;
		int r = batch == 1 ? (sendmsg(fd, &mm[i].msg_hdr, MSG_DONTWAIT) >= 0)
				   : sendmmsg(fd, mm + i, n, MSG_DONTWAIT);

		sent += r > 0 ? (unsigned)r : 0;
	}
	return sent;
}

static double pct(struct timeval tv, double secs)
{
	return 100.0 * ((double)tv.tv_sec + (double)tv.tv_usec * 1e-6) / secs;
}

int main(int argc, char **argv)
{
	static uint8_t buf[BATCH_MAX][MESH_WIRE_LEN];
	static struct sockaddr_in to[BATCH_MAX];
	static struct mmsghdr mm[BATCH_MAX];
	static struct iovec iov[BATCH_MAX];
	unsigned peers, batch, secs, slice = 0;
	uint64_t sent = 0, replies = 0;
	int fd[FLOWS];
	struct pollfd pfd[FLOWS];
	struct rusage ru;
	int64_t start, next;

	if (argc != 4 || !(peers = (unsigned)atoi(argv[1])) || !(secs = (unsigned)atoi(argv[2])) ||
	    !(batch = (unsigned)atoi(argv[3])) || batch > BATCH_MAX) {
		fprintf(stderr, "usage: udpfloor PEERS SECONDS BATCH (1..%d)\n", BATCH_MAX);
		return 2;
	}
	for (unsigned f = 0; f < FLOWS; f++) {
		fd[f] = flow_open();
		if (fd[f] < 0) {
			fprintf(stderr, "udpfloor: unable to open a socket: %s\n", strerror(errno));
			return 1;
		}
		pfd[f] = (struct pollfd){ .fd = fd[f], .events = POLLIN };
	}
	start = next = now_ns();
	while (next - start < (int64_t)secs * 1000000000LL) {
		int64_t now = now_ns();
		/* this slice's peers: a fiftieth of them */
		unsigned lo = peers * slice / SLICES, hi = peers * (slice + 1) / SLICES;

		if (now < next) {
			if (poll(pfd, FLOWS, (int)((next - now + 999999) / 1000000)) > 0)
				for (unsigned f = 0; f < FLOWS; f++)
					if (pfd[f].revents & POLLIN)
						replies += drain(fd[f]);
			continue;
		}
		for (unsigned f = 0; f < FLOWS; f++) {
			unsigned k = 0;

			for (unsigned i = lo; i < hi && k < BATCH_MAX; i++, k++) {
				struct mesh_msg m = { .type = MESH_PROBE,
						      .flow = (uint8_t)f,
						      .seq = (uint32_t)(sent + k),
						      .send_ns = (uint64_t)now_ns() };

				mesh_wire_encode(&m, buf[k]);
				to[k] = (struct sockaddr_in){
					.sin_family = AF_INET,
					.sin_port = htons(PORT),
					.sin_addr.s_addr =
						htonl(0xc6130000u | (i / 250) << 8 | (i % 250 + 1)),
				};
				iov[k] = (struct iovec){ .iov_base = buf[k],
							 .iov_len = MESH_WIRE_LEN };
				mm[k].msg_hdr = (struct msghdr){ .msg_name = &to[k],
								 .msg_namelen = sizeof(to[k]),
								 .msg_iov = &iov[k],
								 .msg_iovlen = 1 };
			}
			sent += send_all(fd[f], mm, k, batch);
		}
		slice = (slice + 1) % SLICES;
		next += 1000000000LL / SLICES;
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("sent %llu replies %llu user_pct %.2f sys_pct %.2f\n", (unsigned long long)sent,
	       (unsigned long long)replies, pct(ru.ru_utime, secs), pct(ru.ru_stime, secs));
	for (unsigned f = 0; f < FLOWS; f++)
		close(fd[f]);
	return 0;
}
