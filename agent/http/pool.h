/* SPDX-License-Identifier: MIT */
#ifndef FABMON_HTTP_POOL_H
#define FABMON_HTTP_POOL_H

/*
 * The threads that run API queries, apart from libmicrohttpd's: those only
 * parse requests and send answers, so /metrics, /healthz and /readyz are
 * answered at once whatever the queries cost. At most `workers` jobs run at
 * once and as many again wait their turn; beyond that a job is refused, for
 * a 503 the client may retry. The threads run as SCHED_IDLE (nice 10 where
 * that is refused), so that queries take only the CPU the tick and the
 * scrapes leave, and a scrape that wakes preempts them at once: on a host
 * whose CPUs are all busy a query may then end in api_timeout's 503.
 */

struct http_pool;

struct http_job {
	/* called once on a pool thread; stopping: the pool is being stopped,
	 * answer without doing the work */
	void (*run)(struct http_job *job, int stopping);
	/* then, once the job no longer counts against the limit: a client
	 * told of its answer here finds its turn free for the next query */
	void (*done)(struct http_job *job);
	struct http_job *next; /* the pool's */
};

/* A pool of `workers` threads. NULL on failure (errno says why). */
struct http_pool *http_pool_new(unsigned workers);

/*
 * Queues job; its run and done are called once on a pool thread. Returns
 * 0, -EBUSY (workers jobs run and as many wait) or -ESHUTDOWN (being
 * stopped), after which they are never called. The job must live until
 * done is called, and the pool no longer touches it then.
 */
int http_pool_submit(struct http_pool *p, struct http_job *job);

/*
 * Refuses new jobs, runs the waiting ones with stopping set, waits for the
 * running ones and joins the threads. The pool stays valid (submit returns
 * -ESHUTDOWN) until http_pool_free. Accepts NULL.
 */
void http_pool_stop(struct http_pool *p);

/* Stops the pool if need be and frees it. Accepts NULL. */
void http_pool_free(struct http_pool *p);

#endif
