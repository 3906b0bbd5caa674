/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for reading a whole capture file the way `fabmon replay`
 * does: libpcap reads the bytes as a pcap or pcapng file from memory, and
 * every record it hands out is counted (collector/pcap/capture.c). A damaged
 * file must end the read with an error, never a crash or an over-read.
 */
#include <pcap/pcap.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "collector/pcap/capture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char errbuf[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *rec;
	struct capture *c;
	struct packet pkt;
	const char *why;
	pcap_t *p;
	FILE *f;

	if (!size || !(f = fmemopen((void *)data, size, "rb")))
		return 0;
	/* on success libpcap owns f and closes it with the handle */
	p = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_NANO, errbuf);
	if (!p) {
		fclose(f);
		return 0;
	}
	c = capture_new(1024, 4096, 100000);
	while (c && pcap_next_ex(p, &h, &rec) == 1)
		(void)capture_packet(c, 0, pcap_datalink(p), rec, h->caplen, h->len,
				     (uint64_t)h->ts.tv_sec * 1000000000ULL + h->ts.tv_usec, &pkt,
				     &why);
	capture_free(c);
	pcap_close(p);
	return 0;
}
