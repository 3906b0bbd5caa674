/* SPDX-License-Identifier: MIT */
#ifndef FABMON_PRIVILEGE_H
#define FABMON_PRIVILEGE_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Least privilege for a root start (make run, a DaemonSet): once the probes
 * are loaded and the sockets and the database are open, the agent becomes an
 * ordinary user that keeps only the capabilities its collectors still use
 * (tc probes attach to interfaces that appear later, pcap opens mirror ports
 * on reload). The packaged systemd unit starts as that user already, with the
 * same capabilities given as ambient ones, and needs none of this.
 */

struct privilege_user {
	char name[64];
	uid_t uid;
	gid_t gid; /* the user's primary group */
};

/*
 * Resolves a user name (or a numeric uid) to its uid and primary group.
 * Returns 0, -ENOENT if there is no such user, or -errno; ret_user is written
 * only on success.
 */
int privilege_lookup(const char *name, struct privilege_user *ret_user);

/*
 * Whether user may access path as access(2)'s mode asks, as the agent will
 * once privilege_drop() made it that user: its uid and primary gid, no
 * supplementary groups, no capabilities. The caller that is not user checks
 * in a child process that becomes user, so that ACLs, read-only mounts and
 * every directory on the way count as they will. Needs root unless user is
 * the caller. Returns 0 if it may, or -errno (access(2)'s, or why the child
 * could not become user).
 */
int privilege_access(const struct privilege_user *user, const char *path, int mode);

/*
 * Gives the files in paths to the user (the database and its -wal and -shm,
 * which SQLite keeps writing), so that the agent still writes them after the
 * drop. A path that does not exist is skipped. Returns 0, or -errno with the
 * file named in err.
 */
int privilege_chown(const struct privilege_user *user, const char *const *paths, size_t n,
		    char *err, size_t err_len);

/*
 * Switches every thread to the user's uid and gid with no supplementary
 * groups. The calling thread keeps, effective and permitted, the
 * capabilities the enabled collectors (a comma-separated list) use:
 * CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN for bpf, CAP_NET_RAW for pcap;
 * the other threads keep none, and the bounding set is emptied. Needs root.
 * Returns 0, or -errno with the step that failed in err.
 */
int privilege_drop(const struct privilege_user *user, const char *collectors, char *err,
		   size_t err_len);

/*
 * Writes the calling thread's effective capabilities as text
 * ("cap_net_admin, cap_bpf", or "none") to buf.
 */
void privilege_describe(char *buf, size_t len);

#endif
