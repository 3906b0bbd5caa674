/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for sysfs values: the bytes are an attribute file's
 * content, parsed as text (sysfs_parse_u64) and read back through the file
 * path (sysfs_read, sysfs_read_u64) the way the collectors read counters.
 * Whatever the bytes: no read outside them, a result or -errno, and a text
 * read that is NUL-terminated with no trailing whitespace. The file lives
 * in a directory made under $TMPDIR (default /tmp); tests/fuzz/run.sh
 * points that at one it removes, crash or not.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/sysfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char root[4096];
	static int ready;
	char path[sizeof(root) + 8], buf[64];
	uint64_t v, w;
	char *text;
	int fd, r, r2;

	if (!ready) {
		const char *tmp = getenv("TMPDIR");

		if (snprintf(root, sizeof(root), "%s/fabmon-fuzz-sysfs-XXXXXX",
			     tmp && *tmp ? tmp : "/tmp") >= (int)sizeof(root) ||
		    !mkdtemp(root))
			abort();
		ready = 1;
	}
	/* as text, exactly its bytes */
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	r = sysfs_parse_u64(text, &v);
	if (r != 0 && r != -EINVAL && r != -ERANGE)
		abort();
	free(text);

	/* through a file, as a collector reads it */
	snprintf(path, sizeof(path), "%s/attr", root);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		abort();
	if (write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
	r = sysfs_read(root, "attr", buf, sizeof(buf));
	if (r >= 0) {
		if ((size_t)r >= sizeof(buf) || buf[r] != '\0' || strlen(buf) != (size_t)r ||
		    (r > 0 && isspace((unsigned char)buf[r - 1])))
			abort();
	}
	r2 = sysfs_read_u64(root, "attr", &w);
	/* a value read from the file is the one its text parses to */
	if (r2 == 0 && r >= 0 && (sysfs_parse_u64(buf, &v) != 0 || v != w))
		abort();
	return 0;
}
