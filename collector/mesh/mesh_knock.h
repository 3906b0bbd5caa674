/* SPDX-License-Identifier: MIT */
#ifndef FABMON_MESH_KNOCK_H
#define FABMON_MESH_KNOCK_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Knocks: a TCP connection attempt to a peer's mesh port, which the peer's
 * kernel answers whatever its applications do (a SYN-ACK, or a reset from a
 * port nothing listens on): a peer whose agent stopped still answers one,
 * a peer whose host is down or whose path is cut does not. No privilege is
 * needed, and nothing is sent once the kernel answers.
 */
#define MESH_KNOCKS_MAX 32 /* in flight at once */
/* A knock unanswered this long is not answered: a kernel answers a SYN in
 * its round trip, busy or not, and sends it once in it (the first retry
 * comes after 1 s). The agent's detector and `fabmon locate` take a peer's
 * kernel silent (fabmon_mesh_kernel_silent_seconds) this long as silent. */
#define MESH_KNOCK_TIMEOUT_S 0.5

struct mesh_knocks {
	struct {
		int fd;
		uint32_t addr; /* host byte order */
		int64_t sent_ns;
	} k[MESH_KNOCKS_MAX];
	size_t n;
};

/* Starts a knock on addr:port (host byte order) at now_ns. Returns 0,
 * -EBUSY while MESH_KNOCKS_MAX are in flight, or -errno. */
int mesh_knock_start(struct mesh_knocks *ks, uint32_t addr, unsigned port, int64_t now_ns);

/* Sets pfd[0..ks->n) to wait for the knocks' outcomes. */
void mesh_knocks_poll(const struct mesh_knocks *ks, struct pollfd *pfd);

/* How a knock ended. */
struct mesh_knock_end {
	uint32_t addr;
	int answered; /* by the peer's kernel; 0: timed out, or the path refused it */
	int64_t sent_ns;
};

/*
 * Ends the knocks that pfd[0..npfd) (from mesh_knocks_poll(), polled) shows
 * done, and those sent timeout_ns or more before now_ns, into ends (room
 * for MESH_KNOCKS_MAX). Returns how many ended.
 */
size_t mesh_knocks_reap(struct mesh_knocks *ks, const struct pollfd *pfd, size_t npfd,
			int64_t now_ns, int64_t timeout_ns, struct mesh_knock_end *ends);

/* Ends every knock. */
void mesh_knocks_close(struct mesh_knocks *ks);

#endif
