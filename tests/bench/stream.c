/* SPDX-License-Identifier: MIT */
/*
 * stream: one TCP bulk stream of fixed duration, the saturating load of the
 * probe-cost and throughput benchmarks (an iperf3 of the few lines needed).
 *
 *   stream recv PORT                  accepts connections one after another and
 *                                     reads each to EOF; exits after
 *                                     STREAM_IDLE_S without a connection
 *   stream send ADDR PORT SECONDS     writes for SECONDS, then waits for the
 *                                     receiver to have read everything
 *
 * The sender's figure counts only bytes the receiver has read: after the last
 * write it half-closes and waits for the receiver's close, which comes after
 * the receiver's read of EOF, so nothing still queued in a socket buffer is
 * counted as delivered. Each side prints one line of key=value pairs;
 * exit status 1 if the stream could not be run.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "benchutil.h"

/* Large writes and reads keep the system-call count, and so this tool's own
 * share of the two cores, small next to the kernel's per-byte work. */
#define STREAM_BUF (256 * 1024)
/* The receiver gives up after this long with no connection (a bound should
 * the script that started it go away); the sender waits this long at most
 * for the receiver to drain. */
#define STREAM_IDLE_S 30
#define STREAM_MAX_S 3600

static void set_timeouts(int fd, int seconds)
{
	struct timeval tv = { .tv_sec = seconds };

	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static void print_figures(const char *side, uint64_t bytes, double seconds)
{
	printf("%s bytes=%llu seconds=%.3f gbit_s=%.3f\n", side, (unsigned long long)bytes, seconds,
	       seconds > 0 ? (double)bytes * 8 / seconds / 1e9 : 0.0);
	fflush(stdout);
}

/* Serves connections one at a time until none comes for STREAM_IDLE_S.
 * Returns 0, or -errno if the port could not be listened on. */
static int stream_recv(unsigned port, char *buf)
{
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int one = 1, lfd, fd, r = 0;

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return -errno;
	(void)setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* accept() honours SO_RCVTIMEO: that is the idle bound */
	set_timeouts(lfd, STREAM_IDLE_S);
	if (bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(lfd, 4) < 0) {
		r = -errno;
		goto out;
	}
	while ((fd = accept(lfd, NULL, NULL)) >= 0) {
		uint64_t bytes = 0;
		double t0 = clock_mono_s();
		ssize_t n;

		set_timeouts(fd, STREAM_IDLE_S);
		while ((n = read(fd, buf, STREAM_BUF)) > 0)
			bytes += (uint64_t)n;
		if (n < 0)
			fprintf(stderr, "stream: read: %s\n", strerror(errno));
		close(fd);
		print_figures("recv", bytes, clock_mono_s() - t0);
	}
out:
	close(lfd);
	return r;
}

/* Writes for seconds, then waits for the receiver to close. Returns 0, or
 * -errno if the connection failed before the end. */
static int stream_send(const char *host, unsigned port, double seconds, char *buf)
{
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	uint64_t bytes = 0;
	double t0, end;
	ssize_t n;
	int fd, r = 0;

	if (inet_pton(AF_INET, host, &addr.sin_addr) != 1)
		return -EINVAL;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	set_timeouts(fd, STREAM_IDLE_S);
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		r = -errno;
		goto out;
	}
	memset(buf, 0x5a, STREAM_BUF);
	t0 = clock_mono_s();
	end = t0 + seconds;
	/* one clock read per 256 KB write: the deadline is overshot by one
	 * write at most, and the time is taken after the drain anyway */
	while (clock_mono_s() < end) {
		n = write(fd, buf, STREAM_BUF);
		if (n < 0) {
			r = -errno;
			goto out;
		}
		bytes += (uint64_t)n;
	}
	if (shutdown(fd, SHUT_WR) < 0) {
		r = -errno;
		goto out;
	}
	while ((n = read(fd, buf, STREAM_BUF)) > 0)
		;
	if (n < 0) {
		r = errno == EAGAIN ? -ETIMEDOUT : -errno;
		goto out;
	}
	print_figures("send", bytes, clock_mono_s() - t0);
out:
	close(fd);
	return r;
}

int main(int argc, char **argv)
{
	unsigned port, seconds;
	char *buf = NULL;
	int r = -EINVAL;

	if (argc == 3 && !strcmp(argv[1], "recv") && parse_uint(argv[2], 65535, &port) == 0) {
		buf = malloc(STREAM_BUF);
		r = buf ? stream_recv(port, buf) : -ENOMEM;
	} else if (argc == 5 && !strcmp(argv[1], "send") &&
		   parse_uint(argv[3], 65535, &port) == 0 &&
		   parse_uint(argv[4], STREAM_MAX_S, &seconds) == 0) {
		buf = malloc(STREAM_BUF);
		r = buf ? stream_send(argv[2], port, seconds, buf) : -ENOMEM;
	} else {
		fprintf(stderr, "usage: stream recv PORT\n"
				"       stream send ADDR PORT SECONDS\n");
		return 2;
	}
	if (r < 0)
		fprintf(stderr, "stream: %s: %s\n", argv[1], strerror(-r));
	free(buf);
	return r < 0;
}
