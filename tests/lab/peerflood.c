/* SPDX-License-Identifier: MIT */
/*
 * peerflood: all-to-all without a collective's lockstep. One thread per peer
 * writes WRITE_BYTES buffers (default 64 KiB) over one TCP connection as fast
 * as the host lets it, and one thread per incoming connection reads as fast
 * as it can; nothing waits for anyone. It is the scenario matrix's generator
 * whose pattern differs from loadgen's on purpose: no iterations, no steps,
 * so a rank that the busy host does not schedule simply sends and reads less
 * (tests/bench/matrix.sh). With a small WRITE_BYTES it makes many small
 * writes instead.
 *
 *   peerflood ME PEERS PORT SECONDS [WRITE_BYTES]
 *
 * ME is this rank's address (it listens on ME:PORT), PEERS a comma-separated
 * list of addresses (ME among them is skipped), each listening on PORT.
 * Every address must be in 198.18.0.0/15 or loopback. Stops after SECONDS and
 * prints "peer ADDR bytes N" for each peer and "total bytes N". Exit 0, 1 if
 * it reached no peer, 2 on a usage error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "labtool.h"

#define PF_MAX_PEERS 64
#define PF_MAX_WRITE (1u << 20)
/* A blocked write or read gives up after this, to look at the deadline:
 * a peer that stops reading must not hold a thread past SECONDS. */
#define PF_IO_TIMEOUT_MS 200

struct pf_peer {
	struct sockaddr_in addr;
	const char *name;
	uint64_t bytes;
	pthread_t thread;
};

static double pf_deadline;
static size_t pf_write_bytes = 64 * 1024;

static double pf_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void pf_io_timeout(int fd)
{
	struct timeval tv = { 0, PF_IO_TIMEOUT_MS * 1000 };

	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

/* Connects to the peer (again every 100 ms until it listens, to the
 * deadline), then writes until the deadline. */
static void *pf_writer(void *arg)
{
	struct pf_peer *p = arg;
	char *buf = calloc(1, pf_write_bytes);
	int fd = -1;

	while (buf && pf_now() < pf_deadline) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&p->addr, sizeof(p->addr)) == 0)
			break;
		close(fd);
		fd = -1;
		usleep(100 * 1000);
	}
	if (fd >= 0)
		pf_io_timeout(fd);
	while (fd >= 0 && pf_now() < pf_deadline) {
		ssize_t n = write(fd, buf, pf_write_bytes);

		if (n > 0)
			p->bytes += (uint64_t)n;
		else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			break;
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

static void *pf_reader(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char *buf = malloc(PF_MAX_WRITE);

	pf_io_timeout(fd);
	while (buf && pf_now() < pf_deadline) {
		ssize_t n = read(fd, buf, PF_MAX_WRITE);

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			break;
	}
	close(fd);
	free(buf);
	return NULL;
}

/* Accepts until the deadline; each connection gets a detached reader. */
static void *pf_listener(void *arg)
{
	int lfd = (int)(intptr_t)arg;

	while (pf_now() < pf_deadline) {
		struct pollfd pfd = { lfd, POLLIN, 0 };
		pthread_t t;
		int fd;

		if (poll(&pfd, 1, PF_IO_TIMEOUT_MS) <= 0)
			continue;
		fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			continue;
		if (pthread_create(&t, NULL, pf_reader, (void *)(intptr_t)fd) == 0)
			pthread_detach(t);
		else
			close(fd);
	}
	return NULL;
}

/* Only the lab's benchmarking range and loopback: a flood pointed at a
 * production network by mistake would do harm. */
static int pf_addr(const char *s, uint16_t port, struct sockaddr_in *ret)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	uint32_t h;

	if (inet_pton(AF_INET, s, &a.sin_addr) != 1)
		return labtool_usage_error("peerflood", "'%s' is not an IPv4 address", s);
	h = ntohl(a.sin_addr.s_addr);
	if ((h & 0xfffe0000u) != 0xc6120000u && (h >> 24) != 127)
		return labtool_usage_error("peerflood", "'%s' is not a lab (198.18.0.0/15) address",
					   s);
	*ret = a;
	return 0;
}

static int pf_usage(const char *what)
{
	(void)labtool_usage_error("peerflood", "%s", what);
	return 2;
}

int main(int argc, char **argv)
{
	static struct pf_peer peers[PF_MAX_PEERS];
	struct sockaddr_in me;
	char *list, *tok, *save = NULL;
	int n = 0, lfd = -1, one = 1, reached = 0;
	uint64_t total = 0;
	pthread_t listener;
	double secs;
	long port;

	if (argc == 2 && !strcmp(argv[1], "--help")) {
		printf("usage: peerflood ME PEERS PORT SECONDS [WRITE_BYTES]\n"
		       "One thread per peer writes WRITE_BYTES (default 65536) buffers to it as\n"
		       "fast as it can for SECONDS; every connection in is read as fast. Lab\n"
		       "(198.18.0.0/15) and loopback addresses only.\n");
		return 0;
	}
	if (argc < 5 || argc > 6)
		return pf_usage("want ME PEERS PORT SECONDS [WRITE_BYTES]");
	port = strtol(argv[3], NULL, 10);
	secs = strtod(argv[4], NULL);
	if (argc == 6)
		pf_write_bytes = strtoul(argv[5], NULL, 10);
	if (port < 1 || port > 65535 || !(secs > 0 && secs <= 3600) || pf_write_bytes < 1 ||
	    pf_write_bytes > PF_MAX_WRITE)
		return pf_usage("PORT 1..65535, SECONDS 0..3600, WRITE_BYTES 1..1048576");
	if (pf_addr(argv[1], (uint16_t)port, &me))
		return 2;
	list = argv[2];
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == PF_MAX_PEERS)
			return pf_usage("at most 64 peers");
		if (pf_addr(tok, (uint16_t)port, &peers[n].addr))
			return 2;
		if (peers[n].addr.sin_addr.s_addr == me.sin_addr.s_addr)
			continue;
		peers[n++].name = tok;
	}

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	(void)setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&me, sizeof(me)) || listen(lfd, PF_MAX_PEERS)) {
		fprintf(stderr, "peerflood: unable to listen on %s:%ld: %s\n", argv[1], port,
			strerror(errno));
		return 1;
	}
	pf_deadline = pf_now() + secs;
	if (pthread_create(&listener, NULL, pf_listener, (void *)(intptr_t)lfd)) {
		fprintf(stderr, "peerflood: unable to start the listener\n");
		return 1;
	}
	for (int i = 0; i < n; i++)
		if (pthread_create(&peers[i].thread, NULL, pf_writer, &peers[i]))
			peers[i].name = NULL;
	for (int i = 0; i < n; i++) {
		if (!peers[i].name)
			continue;
		pthread_join(peers[i].thread, NULL);
		printf("peer %s bytes %llu\n", peers[i].name, (unsigned long long)peers[i].bytes);
		total += peers[i].bytes;
		reached += peers[i].bytes > 0;
	}
	pthread_join(listener, NULL);
	printf("total bytes %llu\n", (unsigned long long)total);
	close(lfd);
	return reached ? 0 : 1;
}
