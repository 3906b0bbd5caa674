/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/store/ident.h"
#include "agent/store/store.h"

/* SQLite's file format (https://www.sqlite.org/fileformat.html): 1.3 the
 * 100-byte database header, 1.6 the b-tree page header that follows it on
 * page 1 (the schema table's root), 4.1 the WAL header and 4.2 its frames. */
#define DB_HEADER 100
#define DB_LEAF_TABLE 0x0d
#define WAL_HEADER 32
#define WAL_FRAME_HEADER 24
#define WAL_MAGIC 0x377f0682 /* | 1: checksums of big-endian words */
#define WAL_VERSION 3007000

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint32_t word(const uint8_t *p, int big)
{
	return big ? be32(p)
		   : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

/* The WAL's running checksum over n bytes (a multiple of 8), section 4.2. */
static void wal_sum(const uint8_t *p, size_t n, int big, uint32_t s[2])
{
	for (size_t i = 0; i < n; i += 8) {
		s[0] += word(p + i, big) + s[1];
		s[1] += word(p + i + 4, big) + s[0];
	}
}

/* What SQLite would replay from a WAL. */
struct wal_view {
	long commits;
	uint32_t page_size;
	int page1; /* the newest committed image of page 1: -1 none, 1 fabmon's, 0 not */
};

/* Reads the frames after the header h, as SQLite's recovery does: each
 * must carry the header's salts and continue its checksum; those up to the
 * last commit frame are the WAL's content. */
static int wal_frames(int fd, const uint8_t *h, struct wal_view *v)
{
	size_t len = WAL_FRAME_HEADER + v->page_size;
	uint8_t *f = malloc(len);
	uint32_t s[2] = { be32(h + 24), be32(h + 28) };
	int big = be32(h) & 1, page1 = -1, r = 0;
	ssize_t n;

	if (!f)
		return -ENOMEM;
	for (off_t off = WAL_HEADER;; off += (off_t)len) {
		n = pread(fd, f, len, off);
		if (n < 0)
			r = -errno;
		if (n != (ssize_t)len || memcmp(f + 8, h + 16, 8) != 0)
			break;
		wal_sum(f, 8, big, s);
		wal_sum(f + WAL_FRAME_HEADER, v->page_size, big, s);
		if (s[0] != be32(f + 16) || s[1] != be32(f + 20))
			break;
		if (be32(f) == 1)
			page1 = be32(f + WAL_FRAME_HEADER + 68) == STORE_APPLICATION_ID;
		/* a commit frame names the database's size in pages */
		if (be32(f + 4)) {
			v->commits++;
			v->page1 = page1;
		}
	}
	free(f);
	return r;
}

/* Reads the WAL at path-wal into v (all zero and page1 -1 if there is none). */
static int wal_view(const char *path, struct wal_view *v)
{
	char wal[PATH_MAX];
	uint8_t h[WAL_HEADER];
	uint32_t s[2] = { 0, 0 };
	int fd, r = 0;

	*v = (struct wal_view){ .page1 = -1 };
	if (snprintf(wal, sizeof(wal), "%s-wal", path) >= (int)sizeof(wal))
		return -ENAMETOOLONG;
	fd = open(wal, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (pread(fd, h, sizeof(h), 0) == (ssize_t)sizeof(h) && (be32(h) | 1) == (WAL_MAGIC | 1) &&
	    be32(h + 4) == WAL_VERSION) {
		v->page_size = be32(h + 8);
		wal_sum(h, 24, be32(h) & 1, s);
		/* SQLite ignores a WAL whose header does not add up */
		if (s[0] == be32(h + 24) && s[1] == be32(h + 28) && v->page_size >= 512 &&
		    v->page_size <= 65536 && !(v->page_size & (v->page_size - 1)))
			r = wal_frames(fd, h, v);
	}
	close(fd);
	return r;
}

long store_ident_wal_commits(const char *path)
{
	struct wal_view v;
	int r = wal_view(path, &v);

	return r < 0 ? r : v.commits;
}

enum db_kind { DB_NONE, DB_BLANK, DB_FABMON };

/* What the file at fd is from its first page as it is on disk: absent or
 * empty, an SQLite database with no schema and no application_id, or
 * fabmon's; anything else is refused with the reason in err. */
static int db_kind(int fd, const char *path, uint32_t *ret_page_size, char *err, size_t err_len)
{
	uint8_t h[DB_HEADER + 8];
	ssize_t n = fd < 0 ? 0 : pread(fd, h, sizeof(h), 0);
	int e = n < 0 ? errno : 0;
	uint32_t app;

	if (e) {
		snprintf(err, err_len, "unable to read '%s': %s", path, strerror(e));
		return -e;
	}
	if (n == 0)
		return DB_NONE;
	if (n < (ssize_t)sizeof(h) || memcmp(h, "SQLite format 3", 16) != 0) {
		snprintf(err, err_len, "'%s' is not a fabmon database (not SQLite at all)", path);
		return -EMEDIUMTYPE;
	}
	*ret_page_size = (uint32_t)h[16] << 8 | h[17];
	/* 1 stands for 65536, which 16 bits cannot hold */
	if (*ret_page_size == 1)
		*ret_page_size = 65536;
	app = be32(h + 68);
	if (app == STORE_APPLICATION_ID)
		return DB_FABMON;
	/* the schema table is one leaf page with no cell: no table at all */
	if (app == 0 && h[DB_HEADER] == DB_LEAF_TABLE && !h[DB_HEADER + 3] && !h[DB_HEADER + 4])
		return DB_BLANK;
	snprintf(err, err_len, "'%s' is not a fabmon database (application_id 0x%x)", path, app);
	return -EMEDIUMTYPE;
}

int store_ident_check(int fd, const char *path, char *err, size_t err_len)
{
	uint32_t page_size = 0;
	struct wal_view v;
	int kind = db_kind(fd, path, &page_size, err, err_len);
	int r = kind < 0 ? kind : wal_view(path, &v);

	if (r < 0) {
		if (kind >= 0)
			snprintf(err, err_len, "unable to read '%s-wal': %s", path, strerror(-r));
		return r;
	}
	if (!v.commits)
		return 0;
	if (kind == DB_NONE)
		snprintf(
			err, err_len,
			"'%s' is %s but '%s-wal' holds %ld committed transaction(s), which SQLite "
			"would discard: left untouched; move the -wal and -shm away to start a new "
			"database",
			path, fd < 0 ? "absent" : "empty", path, v.commits);
	else if (v.page_size != page_size)
		snprintf(err, err_len,
			 "'%s-wal' is not the WAL of '%s' (its pages are %u bytes, the database's "
			 "%u): both left untouched",
			 path, path, v.page_size, page_size);
	else if (v.page1 == 0 || (kind == DB_BLANK && v.page1 < 0))
		snprintf(err, err_len,
			 "'%s-wal' is not the WAL of a fabmon database (no fabmon application_id "
			 "in it): '%s' and it left untouched",
			 path, path);
	else
		return 0;
	return -EMEDIUMTYPE;
}
