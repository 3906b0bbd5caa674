/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "agent/store/checkpoint.h"

/* SQLite's own default for its automatic checkpoint
 * (https://www.sqlite.org/pragma.html#pragma_wal_autocheckpoint). */
#define WAL_PAGES 1000
/* A writer that commits back to back (replay --db, a bulk load) leaves the
 * thread no gap to finish a checkpoint in, and the WAL only starts over
 * after a finished one: past this size the writer checkpoints itself. */
#define WAL_PAGES_MAX (8 * WAL_PAGES)

struct store_checkpointer {
	sqlite3 *db;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int due, stop;
};

/* After each commit of the writer, in its thread: a nudge, no I/O, unless
 * the WAL has outgrown what the thread keeps up with. */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
	struct store_checkpointer *c = arg;

	if (pages >= WAL_PAGES_MAX) {
		/* a reader's snapshot may hold it back: tried at the next commit */
		(void)sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
		return SQLITE_OK;
	}
	if (pages >= WAL_PAGES) {
		pthread_mutex_lock(&c->lock);
		c->due = 1;
		pthread_cond_signal(&c->wake);
		pthread_mutex_unlock(&c->lock);
	}
	return SQLITE_OK;
}

static void *run(void *arg)
{
	struct store_checkpointer *c = arg;

	pthread_mutex_lock(&c->lock);
	for (;;) {
		while (!c->due && !c->stop)
			pthread_cond_wait(&c->wake, &c->lock);
		if (c->stop)
			break;
		c->due = 0;
		pthread_mutex_unlock(&c->lock);
		/* what it cannot copy now (a reader's snapshot, a full disk)
		 * it copies at the next nudge */
		(void)sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
		pthread_mutex_lock(&c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

int store_checkpointer_start(sqlite3 *writer, const char *path, struct store_checkpointer **ret)
{
	struct store_checkpointer *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->wake, NULL);
	if (sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		r = -EIO;
		goto fail;
	}
	(void)sqlite3_busy_timeout(c->db, 1000);
	/* a connection opens the WAL at its first read: before it, a checkpoint
	 * finds no WAL and returns SQLITE_OK having copied nothing (pnLog -1) */
	if (sqlite3_exec(c->db, "SELECT count(*) FROM sqlite_schema", NULL, NULL, NULL) !=
	    SQLITE_OK) {
		r = -EIO;
		goto fail;
	}
	r = -pthread_create(&c->thread, NULL, run, c);
	if (r < 0)
		goto fail;
	(void)sqlite3_wal_hook(writer, wal_hook, c);
	*ret = c;
	return 0;
fail:
	sqlite3_close(c->db);
	pthread_cond_destroy(&c->wake);
	pthread_mutex_destroy(&c->lock);
	free(c);
	return r;
}

void store_checkpointer_stop(struct store_checkpointer *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->stop = 1;
	pthread_cond_signal(&c->wake);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	sqlite3_close(c->db);
	pthread_cond_destroy(&c->wake);
	pthread_mutex_destroy(&c->lock);
	free(c);
}
