/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the agent's config file: the bytes are the file
 * (config_load reads it through the INI parser into a config), and each of
 * its lines is also given to the value parsers (durations, listen
 * addresses) and to config_set as "key = value". Whatever the bytes, the
 * parse returns 0 or an error with a message, and a config it accepts keeps
 * its strings terminated within their buffers.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent/config.h"
#include "agent/lib/timefmt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_strings(const struct config *cfg)
{
	/* every string field ends within its buffer */
	if (!memchr(cfg->listen, 0, sizeof(cfg->listen)) ||
	    !memchr(cfg->db_path, 0, sizeof(cfg->db_path)) ||
	    !memchr(cfg->interfaces, 0, sizeof(cfg->interfaces)) ||
	    !memchr(cfg->collectors, 0, sizeof(cfg->collectors)) ||
	    !memchr(cfg->bpf_netns, 0, sizeof(cfg->bpf_netns)))
		abort();
}

/* One line "key = value" (or any text) to the single-value parsers. */
static void parse_line(const char *line)
{
	struct config cfg;
	char key[64], host[256], err[512];
	const char *eq = strchr(line, '=');
	unsigned port;
	int64_t ms;

	(void)duration_parse(line, &ms);
	(void)config_parse_listen(line, host, sizeof(host), &port);
	if (!eq || (size_t)(eq - line) >= sizeof(key))
		return;
	memcpy(key, line, (size_t)(eq - line));
	key[eq - line] = '\0';
	config_defaults(&cfg);
	err[0] = '\0';
	if (config_set(&cfg, key, eq + 1, err, sizeof(err)) < 0 && !err[0])
		abort(); /* an error always says why */
	check_strings(&cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	static int fd = -1;
	struct config cfg;
	char err[1024];
	char *text;
	int r;

	if (fd < 0) {
		fd = memfd_create("fuzz_config", 0);
		if (fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	config_defaults(&cfg);
	err[0] = '\0';
	r = config_load(&cfg, path, err, sizeof(err));
	if (r < 0 && (!err[0] || r == -ENOENT))
		abort(); /* the file is there: an error is the content's, with a message */
	check_strings(&cfg);
	if (r == 0)
		(void)config_validate(&cfg, err, sizeof(err));

	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save))
		parse_line(l);
	free(text);
	return 0;
}
