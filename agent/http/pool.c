/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "agent/http/pool.h"

/* Below the tick thread and libmicrohttpd's (nice 0): a query waits for the
 * CPU they leave, they never wait for it. */
#define HTTP_POOL_NICE 10

struct http_pool {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct http_job *head, *tail; /* waiting */
	unsigned waiting, running, workers;
	int stopping;
	pthread_t *threads;
	unsigned nthreads; /* started */
};

static void *worker(void *arg)
{
	struct http_pool *p = arg;

	struct sched_param none = { 0 };

	/* SCHED_IDLE: a query runs only on CPU nothing else wants, and a
	 * scrape's thread that wakes preempts it at once; where the kernel
	 * refuses it, nice 10 (Linux gives each thread a nice value of its own) */
	if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &none) != 0)
		(void)setpriority(PRIO_PROCESS, (id_t)gettid(), HTTP_POOL_NICE);
	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct http_job *job = p->head;
		int stopping = p->stopping;

		if (!job && stopping)
			break;
		if (!job) {
			pthread_cond_wait(&p->wake, &p->lock);
			continue;
		}
		p->head = job->next;
		if (!p->head)
			p->tail = NULL;
		p->waiting--;
		p->running++;
		pthread_mutex_unlock(&p->lock);
		job->run(job, stopping);
		pthread_mutex_lock(&p->lock);
		p->running--;
		pthread_mutex_unlock(&p->lock);
		job->done(job);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

struct http_pool *http_pool_new(unsigned workers)
{
	struct http_pool *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	p->workers = workers;
	p->threads = calloc(workers, sizeof(*p->threads));
	if (!p->threads)
		goto fail;
	for (; p->nthreads < workers; p->nthreads++) {
		int r = pthread_create(&p->threads[p->nthreads], NULL, worker, p);

		if (r) {
			errno = r;
			goto fail;
		}
	}
	return p;
fail:
	http_pool_free(p);
	return NULL;
}

int http_pool_submit(struct http_pool *p, struct http_job *job)
{
	int r = 0;

	pthread_mutex_lock(&p->lock);
	if (p->stopping)
		r = -ESHUTDOWN;
	else if (p->running + p->waiting >= 2 * p->workers)
		r = -EBUSY;
	if (!r) {
		job->next = NULL;
		if (p->tail)
			p->tail->next = job;
		else
			p->head = job;
		p->tail = job;
		p->waiting++;
		pthread_cond_signal(&p->wake);
	}
	pthread_mutex_unlock(&p->lock);
	return r;
}

void http_pool_stop(struct http_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = 1;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
	for (; p->nthreads; p->nthreads--)
		pthread_join(p->threads[p->nthreads - 1], NULL);
}

void http_pool_free(struct http_pool *p)
{
	if (!p)
		return;
	http_pool_stop(p);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	free(p->threads);
	free(p);
}
