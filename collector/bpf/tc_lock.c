/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/bpf/tc_lock.h"

/* A holder that stops removes its file, which another agent may have open
 * by then: it opens the new one, this many times at most. */
#define LOCK_TRIES 4
#define LOCK_NOTE_MAX 1024

struct bpf_tc_lock {
	int fd; /* -1 until taken */
	int path_err; /* -errno: the network namespace could not be found */
	pid_t rival;
	char dir[PATH_MAX];
	char path[PATH_MAX];
	char note[LOCK_NOTE_MAX]; /* the line the file holds now */
};

struct bpf_tc_lock *bpf_tc_lock_new(const char *dir)
{
	struct bpf_tc_lock *lock = calloc(1, sizeof(*lock));
	struct stat ns;

	if (!lock)
		return NULL;
	lock->fd = -1;
	snprintf(lock->dir, sizeof(lock->dir), "%s", dir);
	/* a network namespace's inode number names it while it lives, as
	 * ip-netns(8) and lsns(8) show it */
	if (stat("/proc/self/ns/net", &ns) < 0)
		lock->path_err = -errno;
	else
		snprintf(lock->path, sizeof(lock->path), "%s/tc-%lu.lock", dir,
			 (unsigned long)ns.st_ino);
	return lock;
}

/* True if fd is still the file at lock->path, not one removed since. */
static int lock_is_named(const struct bpf_tc_lock *lock, int fd)
{
	struct stat opened, named;

	return fstat(fd, &opened) == 0 && stat(lock->path, &named) == 0 &&
	       opened.st_dev == named.st_dev && opened.st_ino == named.st_ino;
}

/* Reads who holds the lock on the file open at fd, as bpf_tc_lock_holder()
 * tells it. Returns 0 or -errno. */
static int lock_read(int fd, pid_t *ret_pid, char *note, size_t len)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char text[32 + LOCK_NOTE_MAX], *end;
	ssize_t n;
	long pid;

	if (fcntl(fd, F_OFD_GETLK, &fl) < 0)
		return -errno;
	snprintf(note, len, "%s", "");
	if (fl.l_type == F_UNLCK) {
		/* what the file says is a dead holder's */
		*ret_pid = 0;
		return 0;
	}
	n = pread(fd, text, sizeof(text) - 1, 0);
	text[n > 0 ? n : 0] = '\0';
	pid = strtol(text, &end, 10);
	*ret_pid = end != text && *end == '\n' && pid > 0 && pid <= INT_MAX ? (pid_t)pid : -1;
	if (*ret_pid > 0)
		snprintf(note, len, "%.*s", (int)strcspn(end + 1, "\n"), end + 1);
	return 0;
}

/* Writes our pid and lock->note into the file we hold. */
static void lock_write(const struct bpf_tc_lock *lock)
{
	char text[32 + LOCK_NOTE_MAX];
	int n = snprintf(text, sizeof(text), "%d\n%s\n", (int)getpid(), lock->note);

	if (n >= (int)sizeof(text))
		n = (int)sizeof(text) - 1;
	/* doctor reads at any time: the new line first, then the old tail goes */
	if (pwrite(lock->fd, text, (size_t)n, 0) == n)
		(void)ftruncate(lock->fd, n);
}

/* One try at the lock: 0 (held now), -EAGAIN (the file changed hands as we
 * looked: try again), -EBUSY (lock->rival holds it) or -errno. */
static int lock_try(struct bpf_tc_lock *lock)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int fd = open(lock->path, O_RDWR | O_CREAT | O_CLOEXEC, 0644), r;
	char none[1];

	if (fd < 0)
		return -errno;
	if (fcntl(fd, F_OFD_SETLK, &fl) == 0) {
		if (lock_is_named(lock, fd)) {
			lock->fd = fd;
			lock_write(lock);
			return 0;
		}
		r = -EAGAIN;
	} else if (errno == EAGAIN || errno == EACCES) {
		r = lock_read(fd, &lock->rival, none, sizeof(none));
		r = r == 0 && lock->rival ? -EBUSY : -EAGAIN;
	} else {
		r = -errno;
	}
	close(fd);
	return r;
}

int bpf_tc_lock_take(struct bpf_tc_lock *lock, char *err, size_t err_len)
{
	int r = -EAGAIN;

	lock->rival = 0;
	if (lock->fd >= 0)
		return 0;
	if (lock->path_err) {
		snprintf(err, err_len, "unable to find this network namespace (/proc/self/ns/net)");
		return lock->path_err;
	}
	if (mkdir(lock->dir, 0755) < 0 && errno != EEXIST) {
		r = -errno;
		snprintf(err, err_len, "unable to make '%s'", lock->dir);
		return r;
	}
	for (int i = 0; i < LOCK_TRIES && r == -EAGAIN; i++)
		r = lock_try(lock);
	if (r == -EBUSY && lock->rival > 0)
		snprintf(err, err_len, "fabmon agent pid %d holds '%s'", (int)lock->rival,
			 lock->path);
	else if (r == -EBUSY)
		snprintf(err, err_len, "another fabmon agent holds '%s'", lock->path);
	else if (r < 0)
		snprintf(err, err_len, "unable to lock '%s'", lock->path);
	return r;
}

pid_t bpf_tc_lock_rival(const struct bpf_tc_lock *lock)
{
	return lock->rival;
}

const char *bpf_tc_lock_path(const struct bpf_tc_lock *lock)
{
	return lock->path;
}

void bpf_tc_lock_note(struct bpf_tc_lock *lock, const char *note)
{
	if (lock->fd < 0 || strcmp(lock->note, note) == 0)
		return;
	snprintf(lock->note, sizeof(lock->note), "%s", note);
	lock_write(lock);
}

int bpf_tc_lock_holder(const struct bpf_tc_lock *lock, pid_t *ret_pid, char *note, size_t len)
{
	int fd, r;

	if (lock->path_err)
		return lock->path_err;
	fd = open(lock->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = lock_read(fd, ret_pid, note, len);
	close(fd);
	return r;
}

void bpf_tc_lock_free(struct bpf_tc_lock *lock)
{
	if (!lock)
		return;
	if (lock->fd >= 0) {
		/* removed while still held, so that no one locks the old file */
		if (lock_is_named(lock, lock->fd))
			(void)unlink(lock->path);
		close(lock->fd);
	}
	free(lock);
}
