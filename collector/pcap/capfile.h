/* SPDX-License-Identifier: MIT */
#ifndef FABMON_CAPFILE_H
#define FABMON_CAPFILE_H

#include <pcap/pcap.h>
#include <stdint.h>

/*
 * A classic pcap file (https://www.tcpdump.org/manpages/pcap-savefile.5.txt)
 * read in large blocks, its records handed out where they lie in the block:
 * libpcap reads a file through stdio, two fread() calls and a copy a record,
 * which cost `fabmon replay` more than counting the packet. Only the plain
 * format is taken, as libpcap reads it: magic 0xa1b2c3d4 (microseconds) or
 * 0xa1b23c4d (nanoseconds) in either byte order, version 2.4, link type
 * Ethernet, Linux cooked SLL or SLL2. Anything else (pcapng, older
 * versions, patched formats, other link types) is left to libpcap.
 */

struct capfile;

/*
 * Opens path. Returns 0 with *ret, -EPROTONOSUPPORT if it is not a regular
 * file in the plain format above (or is too short to tell), or -errno.
 */
int capfile_open(const char *path, struct capfile **ret);

/* Closes the file; NULL is a no-op. */
void capfile_free(struct capfile *f);

/* The link type (LINKTYPE_*, which for the three taken is the DLT_* value). */
int capfile_linktype(const struct capfile *f);

/*
 * The next record: returns 1 with *ret_hdr (ts.tv_usec in nanoseconds, as
 * libpcap gives with PCAP_TSTAMP_PRECISION_NANO) and *ret_data, valid until
 * the next call; 0 at the end of the file; -EIO if the file breaks there (a
 * record cut short, a captured length above libpcap's 256 KiB, a read
 * error), with the reason in capfile_error(). A record longer than the
 * file's snapshot length is cut to it, as libpcap cuts it.
 */
int capfile_next(struct capfile *f, struct pcap_pkthdr *ret_hdr, const uint8_t **ret_data);

/* Why capfile_next() failed ("" before it does). */
const char *capfile_error(const struct capfile *f);

/* Bytes of the file read so far, up to the end of the last record handed out. */
long long capfile_offset(const struct capfile *f);

#endif
