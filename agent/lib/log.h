/* SPDX-License-Identifier: MIT */
#ifndef FABMON_LOG_H
#define FABMON_LOG_H

/*
 * A tiny logger in the manner of OpenBSD ntpd's log.h. Messages go to stderr
 * (journald adds its own timestamps under systemd). Only the agent's top level
 * logs errors; library-like code returns -errno and lets the caller say it.
 */

enum log_level { LOG_LEVEL_ERROR, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

/* Sets the most verbose level that is printed (default LOG_LEVEL_INFO). */
void log_set_level(enum log_level level);

/* log_warn() appends ": strerror(errno)"; log_warnx() does not. */
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints the message with "error: " and -err's strerror if err < 0. */
void log_error(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
