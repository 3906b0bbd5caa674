/* SPDX-License-Identifier: MIT */
#ifndef FABMON_BPF_TC_LOCK_H
#define FABMON_BPF_TC_LOCK_H

#include <stddef.h>
#include <sys/types.h>

/*
 * One agent per network namespace. tc filters belong to a network namespace
 * and every fabmon filter sits at one handle and priority (collector/bpf/tc.h), so an
 * agent that took another live agent's filters for stale ones would remove
 * them. The agent that attaches the tc probe holds a write lock on
 * DIR/tc-INODE.lock, INODE being its network namespace's, for as long as it
 * runs: only the holder attaches, and only the holder removes stale filters.
 * The file holds the holder's pid and a line on how its filters are doing,
 * which `fabmon doctor` reads without taking the lock. The lock is an open
 * file description lock (F_OFD_SETLK): only a user that may write the file
 * can take it, and the kernel lets go of it when the holder dies.
 */
#define BPF_TC_LOCK_DIR "/run/fabmon"

struct bpf_tc_lock;

/*
 * A handle on the lock of the caller's network namespace under dir (copied),
 * not taken yet. NULL on allocation failure.
 */
struct bpf_tc_lock *bpf_tc_lock_new(const char *dir);

/*
 * Takes the lock, unless this handle holds it already, making dir (0755)
 * if it is missing. Returns 0; -EBUSY if another process holds it
 * (bpf_tc_lock_rival() names it); or -errno. err says what failed, naming
 * the file.
 */
int bpf_tc_lock_take(struct bpf_tc_lock *lock, char *err, size_t err_len);

/*
 * The process that held the lock when bpf_tc_lock_take() last returned
 * -EBUSY: its pid as it wrote it, -1 if it had written none yet; 0 if the
 * last take did not return -EBUSY.
 */
pid_t bpf_tc_lock_rival(const struct bpf_tc_lock *lock);

/* The lock file's path ("" if the network namespace could not be found). */
const char *bpf_tc_lock_path(const struct bpf_tc_lock *lock);

/*
 * Makes note (one line) the holder's line in the lock file, if it is not
 * already; does nothing if this handle does not hold the lock.
 */
void bpf_tc_lock_note(struct bpf_tc_lock *lock, const char *note);

/*
 * Tells, without taking the lock, who holds it: the holder's pid in
 * *ret_pid (-1 if it wrote none yet), 0 if nobody holds it; the holder's
 * line in note ("" if none). Returns 0, or -errno (-ENOENT: there is no lock
 * file, so no agent holds it).
 */
int bpf_tc_lock_holder(const struct bpf_tc_lock *lock, pid_t *ret_pid, char *note, size_t len);

/*
 * Lets go of the lock, removing the file first if it is still the one
 * locked (the next agent makes a new one), and frees the handle. Accepts
 * NULL.
 */
void bpf_tc_lock_free(struct bpf_tc_lock *lock);

#endif
