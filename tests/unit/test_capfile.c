/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <errno.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/pcap/capfile.h"
#include "suites.h"

/* Records of 0 to 1500 bytes, one cut short of its length, one empty. */
static const struct rec {
	uint32_t sec, frac, caplen, len;
} recs[] = {
	{ 1700000000, 999999, 60, 60 }, { 1700000001, 0, 1500, 1500 },
	{ 1700000001, 5, 54, 1082 },	{ 0, 0, 0, 0 },
	{ 1700000000, 1, 300, 300 },
};

static uint32_t put32(uint32_t v, int swapped)
{
	return swapped ? __builtin_bswap32(v) : v;
}

/*
 * Writes a classic pcap file of the n records r, in the other byte order if
 * swapped, with magic and the file header's snaplen, cut to its first
 * size - cut bytes. Returns its path (static).
 */
static const char *write_recs(const struct rec *r, size_t n, uint32_t magic, int swapped,
			      uint32_t snaplen, size_t cut)
{
	static char path[] = "/tmp/fabmon-capfile-XXXXXX";
	uint32_t h[6] = {
		put32(magic, swapped), 0, 0, 0, put32(snaplen, swapped), put32(1, swapped)
	};
	uint16_t ver[2] = { 2, 4 };
	static unsigned char data[262144];
	FILE *f;
	int fd;

	strcpy(path, "/tmp/fabmon-capfile-XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "wb");
	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < 2; i++)
		ver[i] = swapped ? __builtin_bswap16(ver[i]) : ver[i];
	memcpy(&h[1], ver, sizeof(ver));
	ck_assert_int_eq(fwrite(h, sizeof(h), 1, f), 1);
	for (size_t i = 0; i < n; i++) {
		uint32_t w[4] = { put32(r[i].sec, swapped), put32(r[i].frac, swapped),
				  put32(r[i].caplen, swapped), put32(r[i].len, swapped) };

		memset(data, (int)i + 1, r[i].caplen);
		ck_assert_int_eq(fwrite(w, sizeof(w), 1, f), 1);
		ck_assert_uint_eq(fwrite(data, 1, r[i].caplen, f), r[i].caplen);
	}
	ck_assert_int_eq(fflush(f), 0);
	ck_assert_int_eq(ftruncate(fd, ftell(f) - (long)cut), 0);
	fclose(f);
	return path;
}

static const char *write_file(uint32_t magic, int swapped, uint32_t snaplen, size_t cut)
{
	return write_recs(recs, sizeof(recs) / sizeof(recs[0]), magic, swapped, snaplen, cut);
}

/* capfile must hand out what libpcap reads from path, record for record,
 * and break where it breaks, in the same words. Returns the records read. */
static size_t same_as_libpcap(const char *path)
{
	char errbuf[PCAP_ERRBUF_SIZE];
	pcap_t *p =
		pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, errbuf);
	struct capfile *cf;
	struct pcap_pkthdr *want, got;
	const u_char *want_data;
	const uint8_t *got_data;
	size_t n = 0;
	int rc, rc2;

	ck_assert_msg(p, "libpcap: %s", errbuf);
	ck_assert_int_eq(capfile_open(path, &cf), 0);
	ck_assert_int_eq(capfile_linktype(cf), pcap_datalink(p));
	while ((rc = pcap_next_ex(p, &want, &want_data)) == 1) {
		ck_assert_int_eq(capfile_next(cf, &got, &got_data), 1);
		ck_assert_int_eq(got.ts.tv_sec, want->ts.tv_sec);
		ck_assert_int_eq(got.ts.tv_usec, want->ts.tv_usec);
		ck_assert_uint_eq(got.caplen, want->caplen);
		ck_assert_uint_eq(got.len, want->len);
		ck_assert_mem_eq(got_data, want_data, want->caplen);
		n++;
	}
	rc2 = capfile_next(cf, &got, &got_data);
	if (rc == PCAP_ERROR_BREAK) {
		ck_assert_int_eq(rc2, 0);
	} else {
		ck_assert_int_eq(rc2, -EIO);
		ck_assert_str_eq(capfile_error(cf), pcap_geterr(p));
	}
	capfile_free(cf);
	pcap_close(p);
	unlink(path);
	return n;
}

/* Microseconds and nanoseconds, in either byte order: the same records. */
START_TEST(test_formats)
{
	static const uint32_t magic[] = { 0xa1b2c3d4, 0xa1b23c4d };

	for (int m = 0; m < 2; m++)
		for (int swapped = 0; swapped < 2; swapped++)
			ck_assert_uint_eq(same_as_libpcap(write_file(magic[m], swapped, 65535, 0)),
					  sizeof(recs) / sizeof(recs[0]));
}
END_TEST

/* A record longer than the file's snap length is cut to it, as libpcap cuts it. */
START_TEST(test_snaplen)
{
	ck_assert_uint_eq(same_as_libpcap(write_file(0xa1b2c3d4, 0, 100, 0)),
			  sizeof(recs) / sizeof(recs[0]));
}
END_TEST

/* Cut in the last record's data, or in its header: the records before it,
 * then a break in libpcap's words. */
START_TEST(test_truncated)
{
	ck_assert_uint_eq(same_as_libpcap(write_file(0xa1b2c3d4, 0, 65535, 10)),
			  sizeof(recs) / sizeof(recs[0]) - 1);
	ck_assert_uint_eq(same_as_libpcap(write_file(0xa1b2c3d4, 1, 65535, 300 + 10)),
			  sizeof(recs) / sizeof(recs[0]) - 1);
}
END_TEST

/* Records across many blocks, the largest libpcap takes among them. */
START_TEST(test_blocks)
{
	enum { N = 3000 };
	static struct rec r[N];

	for (uint32_t i = 0; i < N; i++)
		r[i] = (struct rec){ 1700000000 + i, i, i % 997 + 1, 2000 };
	r[N / 2].caplen = r[N / 2].len = 262144;
	ck_assert_uint_eq(same_as_libpcap(write_recs(r, N, 0xa1b2c3d4, 0, 0, 0)), N);
}
END_TEST

/* Anything but a plain pcap file is left to libpcap. */
START_TEST(test_not_plain)
{
	struct capfile *cf = NULL;
	const char *path = write_file(0x0a0d0d0a, 0, 65535, 0); /* a pcapng block type */

	ck_assert_int_eq(capfile_open(path, &cf), -EPROTONOSUPPORT);
	unlink(path);
	path = write_file(0xa1b2c3d4, 0, 65535, 0);
	ck_assert_int_eq(truncate(path, 20), 0);
	ck_assert_int_eq(capfile_open(path, &cf), -EPROTONOSUPPORT);
	unlink(path);
	ck_assert_int_eq(capfile_open(path, &cf), -ENOENT);
	/* not a regular file: what was read to tell could not be read again */
	ck_assert_int_eq(capfile_open("/dev/null", &cf), -EPROTONOSUPPORT);
	ck_assert_ptr_null(cf);
}
END_TEST

Suite *capfile_suite(void)
{
	Suite *s = suite_create("capfile");
	TCase *tc = tcase_create("capfile");

	tcase_add_test(tc, test_formats);
	tcase_add_test(tc, test_snaplen);
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_blocks);
	tcase_add_test(tc, test_not_plain);
	suite_add_tcase(s, tc);
	return s;
}
