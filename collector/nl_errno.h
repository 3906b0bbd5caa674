/* SPDX-License-Identifier: MIT */
#ifndef FABMON_NL_ERRNO_H
#define FABMON_NL_ERRNO_H

/* libnl returns its own -NLE_* codes; the agent speaks -errno. A kernel
 * without the netlink family asked for is -EOPNOTSUPP: the source is
 * absent, the agent is fine. */
int nl_errno_of(int nlerr);

#endif
