/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/mesh/mesh_allow.h"

/* One "A.B.C.D[/N]" into *ret. Returns 0 or -EINVAL. */
static int cidr_parse(const char *item, struct mesh_cidr *ret)
{
	char addr[INET_ADDRSTRLEN];
	const char *slash = strchr(item, '/');
	size_t alen = slash ? (size_t)(slash - item) : strlen(item);
	unsigned long bits = 32;
	struct in_addr a;
	char *end;

	if (alen >= sizeof(addr))
		return -EINVAL;
	memcpy(addr, item, alen);
	addr[alen] = '\0';
	if (inet_pton(AF_INET, addr, &a) != 1)
		return -EINVAL;
	if (slash) {
		if (!isdigit((unsigned char)slash[1]))
			return -EINVAL;
		bits = strtoul(slash + 1, &end, 10);
		if (*end || bits > 32)
			return -EINVAL;
	}
	ret->mask = bits ? ~0u << (32 - bits) : 0;
	ret->net = ntohl(a.s_addr) & ret->mask;
	return 0;
}

int mesh_allow_parse(const char *text, struct mesh_cidr *out, size_t max, char *why, size_t why_len)
{
	char buf[1024], *save = NULL;
	int n = 0;

	if (snprintf(buf, sizeof(buf), "%s", text) >= (int)sizeof(buf))
		return -E2BIG;
	for (char *it = strtok_r(buf, ", ", &save); it; it = strtok_r(NULL, ", ", &save)) {
		if ((size_t)n == max)
			return -E2BIG;
		if (cidr_parse(it, &out[n]) < 0) {
			snprintf(why, why_len, "'%.40s' is not an IPv4 address or CIDR", it);
			return -EINVAL;
		}
		n++;
	}
	return n;
}

int mesh_allow_match(const struct mesh_cidr *cidrs, size_t n, uint32_t addr)
{
	for (size_t i = 0; i < n; i++)
		if ((addr & cidrs[i].mask) == cidrs[i].net)
			return 1;
	return 0;
}
