/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "agent/daemon/reload.h"

struct reload {
	const struct config_source *src;
	int efd; /* counts results ready: written by the thread, read by take */
	pthread_t thread;
	int running; /* a thread was started and is not joined yet */
	int again; /* asked again while it ran */
	/* the thread's result: the tick thread reads it after pthread_join */
	struct config cfg;
	int status;
	char err[1024];
};

static void *reload_thread(void *arg)
{
	struct reload *r = arg;
	const uint64_t one = 1;

	r->status = config_build(r->src, &r->cfg, r->err, sizeof(r->err));
	/* an eventfd write of 1 cannot fail short of overflow */
	(void)!write(r->efd, &one, sizeof(one));
	return NULL;
}

struct reload *reload_new(const struct config_source *src)
{
	struct reload *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->src = src;
	r->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (r->efd < 0) {
		free(r);
		return NULL;
	}
	return r;
}

int reload_fd(const struct reload *r)
{
	return r->efd;
}

void reload_request(struct reload *r)
{
	const uint64_t one = 1;
	int e;

	if (r->running) {
		r->again = 1;
		return;
	}
	e = pthread_create(&r->thread, NULL, reload_thread, r);
	if (e == 0) {
		r->running = 1;
		return;
	}
	/* said as the result of this read */
	r->status = -e;
	snprintf(r->err, sizeof(r->err), "unable to start a thread to read the config: %s",
		 strerror(e));
	(void)!write(r->efd, &one, sizeof(one));
}

int reload_take(struct reload *r, struct config *ret_cfg, char *err, size_t err_len)
{
	uint64_t n;

	if (read(r->efd, &n, sizeof(n)) != sizeof(n))
		return 0;
	if (r->running) {
		(void)pthread_join(r->thread, NULL);
		r->running = 0;
	}
	if (r->again) {
		r->again = 0;
		reload_request(r);
		return 0;
	}
	if (r->status < 0) {
		snprintf(err, err_len, "%s", r->err);
		return r->status;
	}
	*ret_cfg = r->cfg;
	return 1;
}

void reload_free(struct reload *r)
{
	if (!r)
		return;
	if (r->running)
		(void)pthread_join(r->thread, NULL);
	close(r->efd);
	free(r);
}
