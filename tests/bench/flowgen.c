/* SPDX-License-Identifier: MIT */
/*
 * flowgen: many live UDP flows at a low rate each, the load of the
 * "agent CPU with 10k flows" benchmark. Flow i is SRC:(FLOWGEN_SPORT_BASE + i)
 * -> DST:PORT; every flow sends one small datagram each FLOWGEN_PERIOD_MS,
 * the flows spread evenly over the period, so the probe's flow map holds
 * FLOWS entries that all change every agent tick.
 *
 *   flowgen send SRC DST PORT FLOWS SECONDS
 *   flowgen recv PORT SECONDS
 *
 * The sender uses one raw IPPROTO_UDP socket (the kernel adds the IP
 * header), so FLOWS source ports cost neither FLOWS sockets nor FLOWS
 * system calls a period: a slot's datagrams go out in sendmmsg() batches.
 * Needs CAP_NET_RAW. The receiver drains the port so that no datagram is
 * dropped at a full socket (which the drop probe would count, and which
 * would make ICMP the agent does not need to see) and counts the distinct
 * source ports it saw. Each side stops after SECONDS or at SIGTERM/SIGINT,
 * prints one line of key=value pairs, exits 1 if it could not run.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "benchutil.h"

/* Well under the agent's 1 s tick: each flow moves every tick and is far
 * from any idle timeout. */
#define FLOWGEN_PERIOD_MS 500
/* The period is cut into slots; each slot sends its share of the flows. */
#define FLOWGEN_SLOT_MS 10
#define FLOWGEN_SLOTS (FLOWGEN_PERIOD_MS / FLOWGEN_SLOT_MS)
#define FLOWGEN_SPORT_BASE 10000
#define FLOWGEN_MAX_FLOWS (65535 - FLOWGEN_SPORT_BASE)
#define FLOWGEN_MAX_S 3600
#define FLOWGEN_BATCH 64
/* UDP header + payload: a small datagram, 60 bytes on the wire with IPv4
 * and Ethernet headers. */
#define FLOWGEN_PAYLOAD 18
#define FLOWGEN_DGRAM (sizeof(struct udphdr) + FLOWGEN_PAYLOAD)
#define FLOWGEN_RCVBUF (4 * 1024 * 1024)

struct flowgen_dgram {
	struct udphdr uh;
	char payload[FLOWGEN_PAYLOAD];
};

static volatile sig_atomic_t flowgen_stop;

static void on_signal(int sig)
{
	(void)sig;
	flowgen_stop = 1;
}

/* Advances an absolute CLOCK_MONOTONIC deadline by ms. */
static void timespec_add_ms(struct timespec *ts, unsigned ms)
{
	ts->tv_nsec += (long)ms * 1000000L;
	while (ts->tv_nsec >= 1000000000L) {
		ts->tv_nsec -= 1000000000L;
		ts->tv_sec++;
	}
}

/* Sends flows [first, last) once, in batches. Returns the datagrams the
 * kernel took; *errors counts the rest. */
static unsigned send_slot(int fd, const struct sockaddr_in *dst, struct flowgen_dgram *dgrams,
			  unsigned first, unsigned last, unsigned *errors)
{
	struct mmsghdr msgs[FLOWGEN_BATCH];
	struct iovec iov[FLOWGEN_BATCH];
	unsigned sent = 0;

	while (first < last) {
		unsigned n = last - first < FLOWGEN_BATCH ? last - first : FLOWGEN_BATCH;
		int r;

		memset(msgs, 0, sizeof(msgs[0]) * n);
		for (unsigned i = 0; i < n; i++) {
			iov[i].iov_base = &dgrams[first + i];
			iov[i].iov_len = FLOWGEN_DGRAM;
			msgs[i].msg_hdr.msg_name = (void *)dst;
			msgs[i].msg_hdr.msg_namelen = sizeof(*dst);
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
		}
		r = sendmmsg(fd, msgs, n, 0);
		if (r < 0) {
			/* a full queue (ENOBUFS) drops this batch, not the run */
			*errors += n;
			r = (int)n;
		} else {
			sent += (unsigned)r;
			*errors += n - (unsigned)r;
		}
		first += n;
	}
	return sent;
}

static int flowgen_send(const char *src, const char *dst_s, unsigned port, unsigned flows,
			unsigned seconds)
{
	struct sockaddr_in saddr = { .sin_family = AF_INET }, daddr = { .sin_family = AF_INET };
	struct flowgen_dgram *dgrams = NULL;
	unsigned slot = 0, errors = 0;
	uint64_t sent = 0;
	struct timespec next;
	double t0, end, elapsed;
	int fd = -1, r = 0;

	if (inet_pton(AF_INET, src, &saddr.sin_addr) != 1 ||
	    inet_pton(AF_INET, dst_s, &daddr.sin_addr) != 1)
		return -EINVAL;
	dgrams = calloc(flows, sizeof(*dgrams));
	if (!dgrams)
		return -ENOMEM;
	for (unsigned i = 0; i < flows; i++) {
		dgrams[i].uh.source = htons((uint16_t)(FLOWGEN_SPORT_BASE + i));
		dgrams[i].uh.dest = htons((uint16_t)port);
		dgrams[i].uh.len = htons((uint16_t)FLOWGEN_DGRAM);
		/* RFC 768: a zero checksum means none was computed (IPv4 only) */
		dgrams[i].uh.check = 0;
		memcpy(dgrams[i].payload, "fabmon-flowgen", sizeof("fabmon-flowgen"));
	}
	fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_UDP);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	/* a raw socket's bound address is the source of what it sends */
	if (bind(fd, (struct sockaddr *)&saddr, sizeof(saddr)) < 0) {
		r = -errno;
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &next);
	t0 = clock_mono_s();
	end = t0 + seconds;
	while (!flowgen_stop && clock_mono_s() < end) {
		/* flows are spread by index: slot s sends [s*F/S, (s+1)*F/S) */
		unsigned first = (unsigned)((uint64_t)flows * slot / FLOWGEN_SLOTS);
		unsigned last = (unsigned)((uint64_t)flows * (slot + 1) / FLOWGEN_SLOTS);

		sent += send_slot(fd, &daddr, dgrams, first, last, &errors);
		slot = (slot + 1) % FLOWGEN_SLOTS;
		timespec_add_ms(&next, FLOWGEN_SLOT_MS);
		(void)clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	elapsed = clock_mono_s() - t0;
	printf("send flows=%u packets=%llu errors=%u seconds=%.1f pps=%.0f\n", flows,
	       (unsigned long long)sent, errors, elapsed, (double)sent / elapsed);
out:
	if (fd >= 0)
		close(fd);
	free(dgrams);
	return r;
}

static int flowgen_recv(unsigned port, unsigned seconds)
{
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct sockaddr_in from[FLOWGEN_BATCH];
	char bufs[FLOWGEN_BATCH][64];
	struct mmsghdr msgs[FLOWGEN_BATCH];
	struct iovec iov[FLOWGEN_BATCH];
	struct timeval tv = { .tv_sec = 1 };
	uint8_t seen[65536 / 8] = { 0 };
	unsigned flows = 0;
	uint64_t packets = 0;
	int size = FLOWGEN_RCVBUF, fd, r = 0;
	double t0, end;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	/* a bounded wait, so the deadline is checked without traffic */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		r = -errno;
		goto out;
	}
	t0 = clock_mono_s();
	end = t0 + seconds;
	while (!flowgen_stop && clock_mono_s() < end) {
		int n;

		memset(msgs, 0, sizeof(msgs));
		for (unsigned i = 0; i < FLOWGEN_BATCH; i++) {
			iov[i].iov_base = bufs[i];
			iov[i].iov_len = sizeof(bufs[i]);
			msgs[i].msg_hdr.msg_name = &from[i];
			msgs[i].msg_hdr.msg_namelen = sizeof(from[i]);
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
		}
		n = recvmmsg(fd, msgs, FLOWGEN_BATCH, MSG_WAITFORONE, NULL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			r = -errno;
			goto out;
		}
		for (int i = 0; i < n; i++) {
			uint16_t sport = ntohs(from[i].sin_port);

			if (!(seen[sport / 8] & (1u << (sport % 8)))) {
				seen[sport / 8] |= (uint8_t)(1u << (sport % 8));
				flows++;
			}
		}
		packets += (uint64_t)n;
	}
	printf("recv flows=%u packets=%llu seconds=%.1f\n", flows, (unsigned long long)packets,
	       clock_mono_s() - t0);
out:
	close(fd);
	return r;
}

int main(int argc, char **argv)
{
	/* no SA_RESTART: a signal ends the sleep or the receive at once */
	struct sigaction sa = { .sa_handler = on_signal };
	unsigned port, flows, seconds;
	int r;

	(void)sigaction(SIGTERM, &sa, NULL);
	(void)sigaction(SIGINT, &sa, NULL);
	if (argc == 7 && !strcmp(argv[1], "send") && parse_uint(argv[4], 65535, &port) == 0 &&
	    parse_uint(argv[5], FLOWGEN_MAX_FLOWS, &flows) == 0 &&
	    parse_uint(argv[6], FLOWGEN_MAX_S, &seconds) == 0) {
		r = flowgen_send(argv[2], argv[3], port, flows, seconds);
	} else if (argc == 4 && !strcmp(argv[1], "recv") &&
		   parse_uint(argv[2], 65535, &port) == 0 &&
		   parse_uint(argv[3], FLOWGEN_MAX_S, &seconds) == 0) {
		r = flowgen_recv(port, seconds);
	} else {
		fprintf(stderr, "usage: flowgen send SRC DST PORT FLOWS SECONDS\n"
				"       flowgen recv PORT SECONDS\n");
		return 2;
	}
	if (r < 0)
		fprintf(stderr, "flowgen: %s: %s\n", argv[1], strerror(-r));
	return r < 0;
}
