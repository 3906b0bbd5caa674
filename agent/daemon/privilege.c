/* SPDX-License-Identifier: MIT */
#include <cap-ng.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/daemon/privilege.h"

/*
 * What each collector still needs once it runs as an ordinary user: the bpf
 * collector attaches its tc probe to interfaces that appear later and
 * reloads its probes on SIGHUP (capabilities(7): CAP_BPF with CAP_PERFMON
 * for tracing programs, with CAP_NET_ADMIN for tc), and pcap opens packet
 * sockets on reload (CAP_NET_RAW). netdev, ethtool, rdma and qdisc read
 * sysfs, SIOCETHTOOL's get commands and rtnetlink dumps, which need none.
 */
static const struct {
	const char *collector;
	int caps[3];
	unsigned ncaps;
} privilege_needs[] = {
	{ "bpf", { CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN }, 3 },
	{ "pcap", { CAP_NET_RAW }, 1 },
};

int privilege_lookup(const char *name, struct privilege_user *ret_user)
{
	struct passwd pw, *found = NULL;
	char buf[4096], *end;
	int r;

	if (strlen(name) >= sizeof(ret_user->name))
		return -ENAMETOOLONG;
	r = getpwnam_r(name, &pw, buf, sizeof(buf), &found);
	if (r == 0 && !found && isdigit((unsigned char)name[0])) {
		unsigned long uid;

		errno = 0;
		uid = strtoul(name, &end, 10);
		if (!errno && !*end && uid < (uid_t)-1)
			r = getpwuid_r((uid_t)uid, &pw, buf, sizeof(buf), &found);
	}
	if (r > 0)
		return -r;
	if (!found)
		return -ENOENT;
	snprintf(ret_user->name, sizeof(ret_user->name), "%s", name);
	ret_user->uid = pw.pw_uid;
	ret_user->gid = pw.pw_gid;
	return 0;
}

int privilege_access(const struct privilege_user *user, const char *path, int mode)
{
	pid_t pid;
	int status;

	/* AT_EACCESS: access(2) alone checks the real uid, not the one the
	 * agent will open files with */
	if (user->uid == geteuid())
		return faccessat(AT_FDCWD, path, mode, AT_EACCESS) < 0 ? -errno : 0;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(user->gid) < 0 || setuid(user->uid) < 0 ||
		    faccessat(AT_FDCWD, path, mode, AT_EACCESS) < 0)
			_exit(errno & 0xff);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) ? -WEXITSTATUS(status) : -ECHILD;
}

int privilege_chown(const struct privilege_user *user, const char *const *paths, size_t n,
		    char *err, size_t err_len)
{
	for (size_t i = 0; i < n; i++) {
		int r;

		if (chown(paths[i], user->uid, user->gid) == 0 || errno == ENOENT)
			continue;
		r = -errno;
		snprintf(err, err_len, "unable to give '%s' to user '%s'", paths[i], user->name);
		return r;
	}
	return 0;
}

/* Is name one of the comma-separated collectors? */
static int privilege_enabled(const char *collectors, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = collectors; *p;) {
		size_t n = strcspn(p, ", ");

		if (n == len && strncmp(p, name, len) == 0)
			return 1;
		p += n;
		p += strspn(p, ", ");
	}
	return 0;
}

int privilege_drop(const struct privilege_user *user, const char *collectors, char *err,
		   size_t err_len)
{
	/* capng_change_id(3)'s failures, in the order of its steps */
	static const char *const steps[] = {
		"libcap-ng was not initialised",
		"unable to keep capabilities across the uid change",
		"unable to apply the intermediate capabilities",
		"unable to change the gid",
		"unable to drop the supplementary groups",
		"unable to change the uid",
		"unable to stop keeping capabilities",
		"unable to clear the bounding set",
		"unable to drop CAP_SETPCAP or the ambient capabilities",
		"unable to initialise the supplementary groups",
	};
	int r;

	if (geteuid() != 0) {
		snprintf(err, err_len, "switching to user '%s' needs root (running as uid %u)",
			 user->name, (unsigned)geteuid());
		return -EPERM;
	}
	capng_clear(CAPNG_SELECT_BOTH);
	for (size_t i = 0; i < sizeof(privilege_needs) / sizeof(privilege_needs[0]); i++) {
		if (!privilege_enabled(collectors, privilege_needs[i].collector))
			continue;
		for (unsigned c = 0; c < privilege_needs[i].ncaps; c++)
			if (capng_update(CAPNG_ADD, CAPNG_EFFECTIVE | CAPNG_PERMITTED,
					 (unsigned)privilege_needs[i].caps[c]) < 0) {
				snprintf(err, err_len, "capability %d unknown to libcap-ng",
					 privilege_needs[i].caps[c]);
				return -EINVAL;
			}
	}
	/* setresuid() and setgroups() reach every thread through glibc; the
	 * threads that did not ask to keep their capabilities (all but this
	 * one) lose them all with uid 0 (capabilities(7)) */
	r = capng_change_id((int)user->uid, (int)user->gid,
			    CAPNG_DROP_SUPP_GRP | CAPNG_CLEAR_BOUNDING);
	if (r < 0) {
		size_t step = (size_t)-r - 1;

		snprintf(err, err_len, "unable to switch to user '%s': %s", user->name,
			 step < sizeof(steps) / sizeof(steps[0]) ? steps[step]
								 : "libcap-ng failed");
		return -EPERM;
	}
	return 0;
}

void privilege_describe(char *buf, size_t len)
{
	char *text = NULL;

	if (capng_get_caps_process() == 0)
		text = capng_print_caps_text(CAPNG_PRINT_BUFFER, CAPNG_EFFECTIVE);
	snprintf(buf, len, "%s", text && *text ? text : "none");
	free(text);
}
