/* SPDX-License-Identifier: MIT */
#ifndef FABMON_STORE_IDENT_H
#define FABMON_STORE_IDENT_H

#include <stddef.h>

/*
 * What a database file and the WAL beside it are, read from their bytes
 * before SQLite opens them: SQLite replays any WAL it finds at PATH-wal into
 * the file at PATH, whatever that file is, and at close copies it in.
 */

/*
 * Checks that the file open at fd (-1: absent) may be written as path's
 * fabmon database together with the WAL at path-wal. It may if the WAL holds
 * no committed transaction and the file is empty, fabmon's (its
 * application_id) or an SQLite database with no schema and no
 * application_id; or if the WAL holds some, the file is one of the last two,
 * the WAL's page size is the file's and the newest committed image of page 1
 * in the WAL is fabmon's (a fabmon file with no page 1 in its WAL passes on
 * the page size alone). Reads only. Returns 0, or -EMEDIUMTYPE with the
 * reason in err (or -errno if a file cannot be read).
 */
int store_ident_check(int fd, const char *path, char *err, size_t err_len);

/* Transactions committed in the WAL at path-wal that SQLite would replay:
 * 0 if it is absent or holds none, or -errno. */
long store_ident_wal_commits(const char *path);

#endif
