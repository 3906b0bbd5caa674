/* SPDX-License-Identifier: MIT */
#ifndef FABMON_CONFIG_CHECK_H
#define FABMON_CONFIG_CHECK_H

#include <stddef.h>

#include "agent/config.h"

/*
 * What --check-config checks beyond the file's form, so that a start does
 * not fail where the check said OK: the user exists, sysfs_root is a
 * directory, the database's directory exists and is writable by whoever
 * runs the check (the agent opens the database before it drops to user),
 * and, if user is set and the check runs as root, the user can reach it
 * (the API opens the database by its path once the agent is that user).
 * Run it as the agent is started. Returns 0 or -errno with the setting and
 * the reason in err.
 */
int config_check_host(const struct config *cfg, char *err, size_t err_len);

#endif
