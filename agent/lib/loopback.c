/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "agent/lib/loopback.h"

int loopback_addr(int family, const void *addr)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (family == AF_INET) {
		memcpy(&a4, addr, sizeof(a4));
		return ntohl(a4.s_addr) >> 24 == 127;
	}
	if (family != AF_INET6)
		return 0;
	memcpy(&a6, addr, sizeof(a6));
	return IN6_IS_ADDR_LOOPBACK(&a6) || (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
}

int loopback_text(const char *text)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (inet_pton(AF_INET, text, &a4) == 1)
		return loopback_addr(AF_INET, &a4);
	return inet_pton(AF_INET6, text, &a6) == 1 && loopback_addr(AF_INET6, &a6);
}
