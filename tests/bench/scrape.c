/* SPDX-License-Identifier: MIT */
/*
 * scrape: N sequential HTTP/1.1 GETs of one path on a loopback port, each on
 * a fresh connection read to the end, and the latency distribution. It is the
 * measuring side of the /metrics benchmark, so it does as little as it can
 * between the clock reads: no parsing beyond the status line and the end of
 * the headers, no allocation per request.
 *
 * Usage: scrape [-h HOST] [-p PORT] [-P PATH] [-n COUNT] [-w WARMUP] [-g GAP_MS]
 *               [-t MAX_SECONDS] [-l LABEL]
 * Prints one line of key=value pairs; exits 1 only when no scrape succeeded.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "benchutil.h"

/* A /metrics body of 10k series is a few MB at most; reading in big chunks
 * keeps the number of read() calls (and so our own cost) small. */
#define SCRAPE_CHUNK (256 * 1024)
/* A scrape slower than this is counted as an error, not waited for. */
#define SCRAPE_TIMEOUT_S 10

struct scrape_opts {
	const char *host;
	unsigned port;
	const char *path;
	unsigned count;
	unsigned warmup;
	unsigned gap_ms;
	double max_s;
	const char *label;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted v[0..n-1], n > 0. */
static double percentile(const double *v, unsigned n, double p)
{
	unsigned rank = (unsigned)(p / 100.0 * n + 0.999999);

	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}

/*
 * Does one GET and reads the response to EOF. Returns the body length, or
 * -errno (-EPROTO for a response that is not "HTTP/1.x 200").
 */
static long scrape_once(const struct sockaddr_in *addr, const char *req, size_t req_len, char *buf,
			size_t buf_len)
{
	struct timeval tv = { .tv_sec = SCRAPE_TIMEOUT_S };
	size_t total = 0, head_len = 0, sent = 0;
	int one = 1, fd, r = 0;
	char head[4096];
	ssize_t n;
	char *eoh;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) < 0) {
		r = -errno;
		goto out;
	}
	while (sent < req_len) {
		n = write(fd, req + sent, req_len - sent);
		if (n < 0) {
			r = -errno;
			goto out;
		}
		sent += (size_t)n;
	}
	/* The first bytes are kept apart so the status line and the header end
	 * can be found without copying the body. */
	while ((n = read(fd, total < sizeof(head) - 1 ? head + total : buf,
			 total < sizeof(head) - 1 ? sizeof(head) - 1 - total : buf_len)) > 0) {
		if (total < sizeof(head) - 1) {
			head[total + (size_t)n] = '\0';
			if (!head_len && (eoh = strstr(head, "\r\n\r\n")))
				head_len = (size_t)(eoh - head) + 4;
		}
		total += (size_t)n;
	}
	if (n < 0) {
		r = errno == EAGAIN ? -ETIMEDOUT : -errno;
		goto out;
	}
	if (!head_len || strncmp(head, "HTTP/1.", 7) != 0 || strncmp(head + 8, " 200", 4) != 0)
		r = -EPROTO;
out:
	close(fd);
	return r < 0 ? r : (long)(total - head_len);
}

static int parse_args(int argc, char **argv, struct scrape_opts *o)
{
	int c;

	while ((c = getopt(argc, argv, "h:p:P:n:w:g:t:l:")) != -1) {
		switch (c) {
		case 'h':
			o->host = optarg;
			break;
		case 'p':
			o->port = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'P':
			o->path = optarg;
			break;
		case 'n':
			o->count = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'w':
			o->warmup = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'g':
			o->gap_ms = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 't':
			o->max_s = strtod(optarg, NULL);
			break;
		case 'l':
			o->label = optarg;
			break;
		default:
			return -EINVAL;
		}
	}
	if (o->port == 0 || o->port > 65535 || o->count == 0 || o->max_s <= 0)
		return -EINVAL;
	return 0;
}

int main(int argc, char **argv)
{
	struct scrape_opts o = { .host = "127.0.0.1",
				 .path = "/metrics",
				 .count = 500,
				 .warmup = 20,
				 .max_s = 60,
				 .label = "scrape" };
	struct sockaddr_in addr = { .sin_family = AF_INET };
	struct timespec gap;
	unsigned done = 0, errors = 0, i;
	double *lat = NULL, start, t0, t1;
	long body = 0, n;
	char req[1024];
	char *buf = NULL;
	int req_len, status = 1, last_err = 0;

	if (parse_args(argc, argv, &o) < 0) {
		fprintf(stderr,
			"usage: scrape [-h HOST] [-p PORT] [-P PATH] [-n COUNT] [-w WARMUP] "
			"[-g GAP_MS] [-t MAX_SECONDS] [-l LABEL]\n");
		return 2;
	}
	addr.sin_port = htons((uint16_t)o.port);
	if (inet_pton(AF_INET, o.host, &addr.sin_addr) != 1) {
		fprintf(stderr, "scrape: bad IPv4 address '%s'\n", o.host);
		return 2;
	}
	/* No Accept-Encoding: both servers then send plain text, so the
	 * comparison is of serving the same format, not of gzip. */
	req_len = snprintf(req, sizeof(req),
			   "GET %s HTTP/1.1\r\nHost: %s:%u\r\nUser-Agent: fabmon-bench\r\n"
			   "Accept: text/plain\r\nConnection: close\r\n\r\n",
			   o.path, o.host, o.port);
	lat = calloc(o.count, sizeof(*lat));
	buf = malloc(SCRAPE_CHUNK);
	if (!lat || !buf || req_len < 0 || (size_t)req_len >= sizeof(req)) {
		fprintf(stderr, "scrape: out of memory\n");
		goto out;
	}
	gap.tv_sec = o.gap_ms / 1000;
	gap.tv_nsec = (long)(o.gap_ms % 1000) * 1000000L;
	start = clock_mono_s();
	for (i = 0; i < o.warmup && clock_mono_s() - start < o.max_s; i++)
		(void)scrape_once(&addr, req, (size_t)req_len, buf, SCRAPE_CHUNK);
	/* The bound holds for the whole run, warm-up included: a server that
	 * crawls yields fewer samples, which the output says, not a hang. */
	for (i = 0; i < o.count && clock_mono_s() - start < o.max_s; i++) {
		t0 = clock_mono_s();
		n = scrape_once(&addr, req, (size_t)req_len, buf, SCRAPE_CHUNK);
		t1 = clock_mono_s();
		if (n < 0) {
			errors++;
			last_err = (int)-n;
		} else {
			lat[done++] = (t1 - t0) * 1000.0;
			body = n;
		}
		/* A gap spreads the scrapes over several of the server's own
		 * ticks, so a scrape that lands on a tick is in the sample. */
		if (o.gap_ms)
			(void)nanosleep(&gap, NULL);
	}
	if (done == 0) {
		fprintf(stderr,
			"scrape: %s: no successful scrape of %s:%u%s (%u errors, last: %s)\n",
			o.label, o.host, o.port, o.path, errors, strerror(last_err));
		goto out;
	}
	qsort(lat, done, sizeof(*lat), cmp_double);
	printf("%s n=%u errors=%u p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f bytes=%ld "
	       "elapsed_s=%.1f\n",
	       o.label, done, errors, percentile(lat, done, 50), percentile(lat, done, 90),
	       percentile(lat, done, 99), lat[done - 1], body, clock_mono_s() - start);
	status = 0;
out:
	free(lat);
	free(buf);
	return status;
}
