/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/pcap/capfile.h"
#include "collector/pcap/packet.h"

/* pcap-savefile(5): the file header and each record's header. */
#define CAPFILE_HDR_LEN 24
#define CAPFILE_REC_LEN 16
#define CAPFILE_MAGIC_US 0xa1b2c3d4u
#define CAPFILE_MAGIC_NS 0xa1b23c4du
#define CAPFILE_VERSION_MAJOR 2
#define CAPFILE_VERSION_MINOR 4
/* libpcap's LT_LINKTYPE(): the upper 6 bits of the link type hold FCS
 * information, not the type */
#define CAPFILE_LINKTYPE_MASK 0x03ffffffu
/* libpcap's MAXIMUM_SNAPLEN: a longer record is damage, not a packet */
#define CAPFILE_SNAPLEN_MAX 262144u
/* A block holds many records, and always a whole one (at most 16 bytes and
 * the 256 KiB above). 1 MiB read faster than 4 MiB (160 against 178 ms of
 * CPU for 533 MB): the kernel copies into a buffer still in the cache,
 * where the records are then read. */
#define CAPFILE_BLOCK (1u << 20)

struct capfile {
	int fd;
	int swapped; /* written in the other byte order */
	int nsec; /* timestamps in nanoseconds, not microseconds */
	int linktype;
	uint32_t snapshot;
	unsigned char *buf; /* CAPFILE_BLOCK bytes: buf[pos..end) not handed out yet */
	size_t pos, end;
	long long offset;
	char err[128];
};

static uint32_t get32(const struct capfile *f, const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return f->swapped ? __builtin_bswap32(v) : v;
}

static uint16_t get16(const struct capfile *f, const unsigned char *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return f->swapped ? __builtin_bswap16(v) : v;
}

/* Reads until want bytes are buffered past pos, or the file ends. Returns
 * the bytes buffered past pos (at most want), or -errno. */
static ssize_t fill(struct capfile *f, size_t want)
{
	if (f->end - f->pos >= want)
		return (ssize_t)want;
	memmove(f->buf, f->buf + f->pos, f->end - f->pos);
	f->end -= f->pos;
	f->pos = 0;
	while (f->end < want) {
		ssize_t n = read(f->fd, f->buf + f->end, CAPFILE_BLOCK - f->end);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		f->end += (size_t)n;
	}
	return (ssize_t)(f->end < want ? f->end : want);
}

int capfile_open(const char *path, struct capfile **ret)
{
	struct capfile *f = calloc(1, sizeof(*f));
	const unsigned char *h;
	struct stat st;
	uint32_t magic;
	ssize_t got;
	int r;

	if (!f)
		return -ENOMEM;
	f->buf = malloc(CAPFILE_BLOCK);
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (!f->buf || f->fd < 0) {
		r = f->buf ? -errno : -ENOMEM;
		goto fail;
	}
	/* what is read from a pipe to find the format cannot be read again by
	 * libpcap: pipes go to libpcap from the start */
	r = -EPROTONOSUPPORT;
	if (fstat(f->fd, &st) < 0 || !S_ISREG(st.st_mode))
		goto fail;
	got = fill(f, CAPFILE_HDR_LEN);
	if (got < 0) {
		r = (int)got;
		goto fail;
	}
	if (got < CAPFILE_HDR_LEN)
		goto fail;
	h = f->buf;
	memcpy(&magic, h, sizeof(magic));
	if (magic != CAPFILE_MAGIC_US && magic != CAPFILE_MAGIC_NS) {
		magic = __builtin_bswap32(magic);
		f->swapped = 1;
	}
	f->nsec = magic == CAPFILE_MAGIC_NS;
	f->snapshot = get32(f, h + 16);
	f->linktype = (int)(get32(f, h + 20) & CAPFILE_LINKTYPE_MASK);
	if ((magic != CAPFILE_MAGIC_US && magic != CAPFILE_MAGIC_NS) ||
	    get16(f, h + 4) != CAPFILE_VERSION_MAJOR || get16(f, h + 6) != CAPFILE_VERSION_MINOR ||
	    (f->linktype != PACKET_LINK_ETHERNET && f->linktype != PACKET_LINK_LINUX_SLL &&
	     f->linktype != PACKET_LINK_LINUX_SLL2))
		goto fail;
	/* libpcap's pcap_adjust_snapshot(): none, or more than the most, is the most */
	if (!f->snapshot || f->snapshot > CAPFILE_SNAPLEN_MAX)
		f->snapshot = CAPFILE_SNAPLEN_MAX;
	f->pos = CAPFILE_HDR_LEN;
	f->offset = CAPFILE_HDR_LEN;
	*ret = f;
	return 0;
fail:
	capfile_free(f);
	return r;
}

void capfile_free(struct capfile *f)
{
	if (!f)
		return;
	if (f->fd >= 0)
		close(f->fd);
	free(f->buf);
	free(f);
}

int capfile_linktype(const struct capfile *f)
{
	return f->linktype;
}

/* Fails the read with a reason worded as libpcap words it. */
static int broken(struct capfile *f, ssize_t got, const char *what, size_t want)
{
	if (got < 0)
		snprintf(f->err, sizeof(f->err), "error reading dump file: %s",
			 strerror((int)-got));
	else
		snprintf(f->err, sizeof(f->err),
			 "truncated dump file; tried to read %zu %s, only got %zu", want, what,
			 (size_t)got);
	return -EIO;
}

int capfile_next(struct capfile *f, struct pcap_pkthdr *ret_hdr, const uint8_t **ret_data)
{
	/* seconds, fraction, captured length, length on the wire */
	uint32_t h[4];
	ssize_t got;

	/* fill() only where the block ends: it is the slow path */
	if (f->end - f->pos < CAPFILE_REC_LEN) {
		got = fill(f, CAPFILE_REC_LEN);
		if (got == 0)
			return 0;
		if (got < CAPFILE_REC_LEN)
			return broken(f, got, "header bytes", CAPFILE_REC_LEN);
	}
	memcpy(h, f->buf + f->pos, sizeof(h));
	if (f->swapped)
		for (int i = 0; i < 4; i++)
			h[i] = __builtin_bswap32(h[i]);
	if (h[2] > CAPFILE_SNAPLEN_MAX) {
		snprintf(f->err, sizeof(f->err),
			 "invalid packet capture length %u, bigger than snaplen of %u", h[2],
			 f->snapshot);
		return -EIO;
	}
	if (f->end - f->pos < CAPFILE_REC_LEN + (size_t)h[2]) {
		got = fill(f, CAPFILE_REC_LEN + (size_t)h[2]);
		if (got < CAPFILE_REC_LEN + (ssize_t)h[2])
			return broken(f, got < 0 ? got : got - CAPFILE_REC_LEN, "captured bytes",
				      h[2]);
	}
	/* the seconds and fraction are signed 32-bit in libpcap's struct pcap_timeval */
	ret_hdr->ts.tv_sec = (int32_t)h[0];
	ret_hdr->ts.tv_usec = f->nsec ? (int32_t)h[1] : (long)(int32_t)h[1] * 1000;
	ret_hdr->caplen = h[2] > f->snapshot ? f->snapshot : h[2];
	ret_hdr->len = h[3];
	*ret_data = f->buf + f->pos + CAPFILE_REC_LEN;
	f->pos += CAPFILE_REC_LEN + h[2];
	f->offset += CAPFILE_REC_LEN + h[2];
	return 1;
}

const char *capfile_error(const struct capfile *f)
{
	return f->err;
}

long long capfile_offset(const struct capfile *f)
{
	return f->offset;
}
