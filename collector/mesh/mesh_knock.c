/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "collector/mesh/mesh_knock.h"

/* Closed with a reset, not a FIN: a port that did accept keeps no
 * TIME_WAIT here, and its application sees no connection worth reading. */
static void knock_end(struct mesh_knocks *ks, size_t i)
{
	struct linger lg = { 1, 0 };

	(void)setsockopt(ks->k[i].fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(ks->k[i].fd);
	ks->k[i] = ks->k[--ks->n];
}

int mesh_knock_start(struct mesh_knocks *ks, uint32_t addr, unsigned port, int64_t now_ns)
{
	struct sockaddr_in to = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(addr),
				  .sin_port = htons((uint16_t)port) };
	int fd;

	if (ks->n == MESH_KNOCKS_MAX)
		return -EBUSY;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&to, sizeof(to)) < 0 && errno != EINPROGRESS &&
	    errno != ECONNREFUSED) {
		int r = -errno;

		close(fd);
		return r;
	}
	ks->k[ks->n].fd = fd;
	ks->k[ks->n].addr = addr;
	ks->k[ks->n].sent_ns = now_ns;
	ks->n++;
	return 0;
}

void mesh_knocks_poll(const struct mesh_knocks *ks, struct pollfd *pfd)
{
	for (size_t i = 0; i < ks->n; i++)
		pfd[i] = (struct pollfd){ .fd = ks->k[i].fd, .events = POLLOUT };
}

/* True if knock fd's kernel answered: connected, or refused by a reset.
 * An ICMP error (host or network unreachable from a router on the way)
 * is the path's answer, not the host's. */
static int kernel_answered(int fd)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		return 0;
	return err == 0 || err == ECONNREFUSED;
}

size_t mesh_knocks_reap(struct mesh_knocks *ks, const struct pollfd *pfd, size_t npfd,
			int64_t now_ns, int64_t timeout_ns, struct mesh_knock_end *ends)
{
	size_t n = 0;

	/* backwards: knock_end() moves the last knock into the slot it frees */
	for (size_t i = ks->n; i-- > 0;) {
		int done = i < npfd && pfd[i].fd == ks->k[i].fd &&
			   (pfd[i].revents & (POLLOUT | POLLERR | POLLHUP));

		if (!done && now_ns - ks->k[i].sent_ns < timeout_ns)
			continue;
		ends[n++] = (struct mesh_knock_end){ ks->k[i].addr,
						     done && kernel_answered(ks->k[i].fd),
						     ks->k[i].sent_ns };
		knock_end(ks, i);
	}
	return n;
}

void mesh_knocks_close(struct mesh_knocks *ks)
{
	while (ks->n)
		knock_end(ks, ks->n - 1);
}
