/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/daemon/config_check.h"
#include "agent/daemon/privilege.h"

/* The directory a file path is in: "." for a bare name, "/" at the root. */
static void dir_of(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(dir, len, ".");
	else if (slash == path)
		snprintf(dir, len, "/");
	else
		snprintf(dir, len, "%.*s", (int)(slash - path), path);
}

/* 0 if path is a directory, or -errno (-ENOTDIR if it is something else). */
static int is_dir(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

int config_check_host(const struct config *cfg, char *err, size_t err_len)
{
	/* the trees collectors read under */
	const struct {
		const char *key, *path;
	} roots[] = { { "sysfs_root", cfg->sysfs_root }, { "procfs_root", cfg->procfs_root } };
	struct privilege_user user;
	char dir[PATH_MAX];
	int r = 0;

	if (cfg->user[0]) {
		r = privilege_lookup(cfg->user, &user);
		if (r < 0) {
			snprintf(err, err_len, "user '%s' (user): %s", cfg->user,
				 r == -ENOENT ? "no such user" : strerror(-r));
			return r;
		}
	}
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		r = is_dir(roots[i].path);
		if (r < 0) {
			snprintf(err, err_len, "%s '%s': %s", roots[i].key, roots[i].path,
				 strerror(-r));
			return r;
		}
	}
	dir_of(cfg->db_path, dir, sizeof(dir));
	r = is_dir(dir);
	if (r < 0) {
		snprintf(err, err_len, "db '%s': its directory '%s': %s", cfg->db_path, dir,
			 strerror(-r));
		return r;
	}
	/* SQLite makes the file, its -wal and -shm there */
	if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) < 0) {
		r = -errno;
		snprintf(err, err_len, "db '%s': its directory '%s' is not writable by uid %u: %s",
			 cfg->db_path, dir, (unsigned)geteuid(), strerror(-r));
		return r;
	}
	/* the user needs no more than to reach the files it is given: a
	 * directory it cannot write only keeps -wal and -shm after exit */
	if (cfg->user[0] && geteuid() == 0 && user.uid != 0) {
		r = privilege_access(&user, dir, X_OK);
		if (r < 0)
			snprintf(err, err_len,
				 "db '%s': user '%s' (user) cannot reach its directory '%s': %s",
				 cfg->db_path, cfg->user, dir, strerror(-r));
	}
	return r;
}
