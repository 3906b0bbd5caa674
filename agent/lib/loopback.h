/* SPDX-License-Identifier: MIT */
#ifndef FABMON_LIB_LOOPBACK_H
#define FABMON_LIB_LOOPBACK_H

/*
 * Whether an address is a loopback one: 127.0.0.0/8, ::1, or an IPv4 one
 * of those mapped into IPv6 (::ffff:127.0.0.1). A connection to one never
 * leaves the host, so it is no fabric's to judge.
 */

/* addr: family's binary address (struct in_addr, struct in6_addr), in
 * network order. Any family but AF_INET and AF_INET6 is not loopback. */
int loopback_addr(int family, const void *addr);

/* text: an address as inet_ntop() writes it; anything else is not loopback. */
int loopback_text(const char *text);

#endif
