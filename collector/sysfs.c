/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/sysfs.h"

int sysfs_read(const char *root, const char *path, char *buf, size_t len)
{
	char full[PATH_MAX];
	ssize_t n;
	int fd, r;

	if (len < 2)
		return -EINVAL;
	r = snprintf(full, sizeof(full), "%s/%s", root, path);
	if (r < 0 || (size_t)r >= sizeof(full))
		return -ENAMETOOLONG;
	fd = open(full, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	do
		n = read(fd, buf, len - 1);
	while (n < 0 && errno == EINTR);
	r = n < 0 ? -errno : 0;
	(void)close(fd);
	if (r < 0)
		return r;
	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		n--;
	buf[n] = '\0';
	if (n == 0 || memchr(buf, '\0', (size_t)n))
		return -EINVAL;
	return (int)n;
}

int sysfs_parse_u64(const char *text, uint64_t *ret)
{
	unsigned long long v;
	char *end;

	while (isspace((unsigned char)*text))
		text++;
	/* strtoull accepts a sign; a counter never has one */
	if (!isdigit((unsigned char)*text))
		return -EINVAL;
	errno = 0;
	v = strtoull(text, &end, 0);
	if (errno == ERANGE)
		return -ERANGE;
	while (isspace((unsigned char)*end))
		end++;
	if (*end != '\0')
		return -EINVAL;
	*ret = v;
	return 0;
}

int sysfs_read_u64(const char *root, const char *path, uint64_t *ret)
{
	char buf[64];
	int r = sysfs_read(root, path, buf, sizeof(buf));

	if (r < 0)
		return r;
	return sysfs_parse_u64(buf, ret);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * True if the entry is a directory or a link to one. sysfs fills d_type: a
 * class's devices are links (DT_LNK), which need a stat to follow; a tree of
 * copied files may say DT_UNKNOWN.
 */
static int entry_is_dir(DIR *dir, const struct dirent *de)
{
	struct stat st;

	if (de->d_type == DT_DIR)
		return 1;
	if (de->d_type != DT_LNK && de->d_type != DT_UNKNOWN)
		return 0;
	return fstatat(dirfd(dir), de->d_name, &st, 0) == 0 && S_ISDIR(st.st_mode);
}

static int list_entries(const char *root, const char *path, int dirs_only,
			int (*fn)(const char *name, void *arg), void *arg)
{
	char full[PATH_MAX];
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *dir;
	int r;

	r = snprintf(full, sizeof(full), "%s/%s", root, path);
	if (r < 0 || (size_t)r >= sizeof(full))
		return -ENAMETOOLONG;
	dir = opendir(full);
	if (!dir)
		return -errno;
	r = 0;
	while ((de = readdir(dir))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    (dirs_only && !entry_is_dir(dir, de)))
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			char **nn = realloc(names, ncap * sizeof(*nn));

			if (!nn) {
				r = -ENOMEM;
				goto out;
			}
			names = nn;
			cap = ncap;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			r = -ENOMEM;
			goto out;
		}
		n++;
	}
	if (n)
		qsort(names, n, sizeof(*names), name_cmp);
	for (size_t i = 0; i < n && r == 0; i++)
		r = fn(names[i], arg);
out:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	(void)closedir(dir);
	return r;
}

int sysfs_list(const char *root, const char *path, int (*fn)(const char *name, void *arg),
	       void *arg)
{
	return list_entries(root, path, 0, fn, arg);
}

int sysfs_list_dirs(const char *root, const char *path, int (*fn)(const char *name, void *arg),
		    void *arg)
{
	return list_entries(root, path, 1, fn, arg);
}
