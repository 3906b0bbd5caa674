/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/lib/file_read.h"

int file_read(const char *path, char **ret, size_t *ret_len)
{
	struct stat st;
	size_t len = 0, cap;
	char *buf = NULL;
	ssize_t n = 1;
	int fd, r = 0;

	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > FILE_READ_MAX) {
		r = S_ISREG(st.st_mode) ? -EFBIG : -EINVAL;
		goto out;
	}
	/* to the end, not to st_size: the file may grow meanwhile, and a
	 * /proc file says 0; one byte past the bound tells it is over */
	cap = (size_t)st.st_size + 1;
	buf = malloc(cap + 1);
	while (buf && n > 0 && len <= FILE_READ_MAX) {
		if (len == cap) {
			char *grown;

			cap = cap * 2 > FILE_READ_MAX + 1 ? FILE_READ_MAX + 1 : cap * 2;
			grown = realloc(buf, cap + 1);
			if (!grown)
				break;
			buf = grown;
		}
		n = read(fd, buf + len, cap - len);
		if (n > 0)
			len += (size_t)n;
		else if (n < 0 && errno == EINTR)
			n = 1;
	}
	if (!buf || n > 0)
		r = (!buf || len <= FILE_READ_MAX) ? -ENOMEM : -EFBIG;
	else if (n < 0)
		r = -errno;
	if (r < 0)
		goto out;
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return r;
}

const char *file_read_strerror(int r)
{
	if (r == -EINVAL)
		return "not a regular file";
	if (r == -EFBIG)
		return "over 1 MiB";
	return strerror(-r);
}
