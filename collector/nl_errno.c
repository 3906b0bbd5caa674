/* SPDX-License-Identifier: MIT */
#include <errno.h>

#include <netlink/errno.h>

#include "collector/nl_errno.h"

int nl_errno_of(int nlerr)
{
	switch (-nlerr) {
	case NLE_NOMEM:
		return -ENOMEM;
	case NLE_PERM:
		return -EPERM;
	case NLE_NOACCESS:
		return -EACCES;
	case NLE_OPNOTSUPP:
	case NLE_AF_NOSUPPORT:
	case NLE_PROTO_MISMATCH:
		return -EOPNOTSUPP;
	default:
		return -EIO;
	}
}
