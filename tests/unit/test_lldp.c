/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collector/pcap/lldp.h"
#include "suites.h"
#include "testutil.h"

/*
 * LLDPDUs built by hand after IEEE 802.1AB-2016 clause 8. A TLV header is
 * type << 1 | length >> 8, then length & 0xff.
 */

/* The mandatory TLVs where their content does not matter. */
#define CHASSIS_S "\x02\x02\x07s" /* Chassis ID: locally assigned "s" */
#define PORT_P "\x04\x02\x07p" /* Port ID: locally assigned "p" */
#define TTL_120 "\x06\x02\x00\x78"

/*
 * The length of an LLDPDU written as a string literal, less its NUL. A hex
 * escape runs on over every hex digit after it, so text that starts with
 * one stands in a literal of its own.
 */
#define PDU_LEN(a) (sizeof(a) - 1)

/* What a leaf switch sends: every TLV the parser reads, two it skips, End
 * and then frame padding with a trailer. */
static const uint8_t typical[] = "\x02\x07\x04\x00\x1c\x73\xaa\xbb\xcc" /* Chassis ID: MAC */
				 "\x04\x0b\x05" /* Port ID: ifName */
				 "Ethernet12"
				 "\x06\x02\x00\x78" /* TTL 120 */
				 "\x08\x12" /* Port Description */
				 "uplink to spine-01"
				 "\x0a\x07" /* System Name */
				 "leaf-07"
				 "\x0c\x03" /* System Description */
				 "EOS"
				 "\x0e\x04\x00\x14\x00\x14" /* System Capabilities */
				 "\x10\x0c\x05\x01\x0a\x00\x00\x07" /* Mgmt: IPv4 10.0.0.7 */
				 "\x02\x00\x00\x00\x01\x00" /* ifIndex 1, no OID */
				 "\xfe\x06\x00\x80\xc2\x01\x00\x01" /* 802.1 Port VLAN ID */
				 "\x00\x00" /* End */
				 "\x00\x00\xde\xad"; /* padding, trailer */

static void tlv_put(uint8_t *buf, size_t *off, unsigned type, const void *v, size_t n)
{
	buf[(*off)++] = (uint8_t)(type << 1 | n >> 8);
	buf[(*off)++] = (uint8_t)n;
	memcpy(buf + *off, v, n);
	*off += n;
}

/* Parses p[0..len) and fails the test unless it is accepted. */
static struct lldp_neighbor parse_ok(const uint8_t *p, size_t len)
{
	struct lldp_neighbor nb;
	const char *why = NULL;
	int err = lldp_parse(p, len, &nb, &why);

	ck_assert_msg(err == 0, "lldp_parse: %d (%s)", err, why ? why : "");
	return nb;
}

/* The first management address is a MAC (IANA family 6) and is passed over
 * for the IPv6 one after it, which is kept over the IPv4 one after that;
 * there is no End TLV. */
static const uint8_t ipv6_mgmt[] =
	"\x02\x07\x04\x00\x1c\x73\xaa\xbb\xcc" /* Chassis ID: MAC */
	"\x04\x07\x03\x00\x1c\x73\xaa\xbb\xcd" /* Port ID: MAC */
	"\x06\x02\x00\x78" /* TTL 120 */
	"\x10\x0e\x07\x06" /* Mgmt: IANA family 6 (802) */
	"\x00\x1c\x73\xaa\xbb\xcc" /* its MAC */
	"\x01\x00\x00\x00\x00\x00" /* interface, no OID */
	"\x10\x18\x11\x02" /* Mgmt: IANA family 2 (IPv6) */
	"\x20\x01\x0d\xb8\x00\x00\x00\x00" /* 2001:db8:: */
	"\x00\x00\x00\x00\x00\x00\x00\x07" /* ::7 */
	"\x02\x00\x00\x00\x05\x00" /* ifIndex 5, no OID */
	"\x10\x0c\x05\x01\xc0\x00\x02\x07" /* Mgmt: IPv4, not the first */
	"\x02\x00\x00\x00\x05\x00"; /* ifIndex 5, no OID */

/* 802.1AB-2016 9.1.2: TTL 0 says "forget me" and carries nothing else. */
static const uint8_t shutdown_pdu[] = "\x02\x07\x04\x00\x1c\x73\xaa\xbb\xcc" /* Chassis ID: MAC */
				      "\x04\x04\x05swp" /* Port ID: ifName */
				      "\x06\x02\x00\x00" /* TTL 0 */
				      "\x00\x00"; /* End */

/* Bytes outside printable ASCII, and the backslash, come out as \xNN; a NUL
 * does not end the string. */
static const uint8_t escaped[] = CHASSIS_S PORT_P TTL_120 /* the mandatory TLVs */
	"\x0a\x0b" /* System Name: UTF-8, backslash, control characters */
	"caf\xc3\xa9 \\ 1\n\x7f"
	"\x08\x05" /* Port Description */
	"eth\x00"
	"0";

/* Accepted LLDPDUs, every field as the user sees it. */
START_TEST(test_accepted)
{
	static const struct {
		const uint8_t *p;
		size_t len;
		const char *want; /* chassis|port|ttl|system name|port description|mgmt */
	} cases[] = {
		{ typical, PDU_LEN(typical),
		  "00:1c:73:aa:bb:cc|Ethernet12|120|leaf-07|uplink to spine-01|10.0.0.7" },
		{ ipv6_mgmt, PDU_LEN(ipv6_mgmt),
		  "00:1c:73:aa:bb:cc|00:1c:73:aa:bb:cd|120|||2001:db8::7" },
		{ shutdown_pdu, PDU_LEN(shutdown_pdu), "00:1c:73:aa:bb:cc|swp|0|||" },
		{ escaped, PDU_LEN(escaped), "s|p|120|caf\\xc3\\xa9 \\x5c 1\\x0a\\x7f|eth\\x000|" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct lldp_neighbor nb = parse_ok(cases[i].p, cases[i].len);
		char got[2048];

		(void)snprintf(got, sizeof(got), "%s|%s|%u|%s|%s|%s", nb.chassis_id, nb.port_id,
			       nb.ttl, nb.system_name, nb.port_description, nb.mgmt_address);
		ck_assert_str_eq(got, cases[i].want);
	}
}
END_TEST

/* Each Chassis ID and Port ID subtype as the user sees it. */
START_TEST(test_id_subtypes)
{
	static const struct {
		unsigned type; /* Chassis ID or Port ID */
		uint8_t v[20]; /* subtype, ID */
		size_t n;
		const char *want;
	} cases[] = {
		{ 1, { 4, 0x00, 0x1c, 0x73, 0xaa, 0xbb, 0xcc }, 7, "00:1c:73:aa:bb:cc" },
		{ 1, { 5, 1, 192, 0, 2, 1 }, 6, "192.0.2.1" },
		{ 1, { 5, 2, 0x20, 0x01, 0x0d, 0xb8, [17] = 1 }, 18, "2001:db8::1" },
		{ 1, { 5, 1, 192, 0, 2 }, 5, "01c00002" }, /* IPv4 one octet short */
		{ 1, { 5, 6, 0x00, 0x1c, 0x73, 0xaa, 0xbb, 0xcc }, 8, "06001c73aabbcc" },
		{ 1, { 7, 's', 'w', '-', '1' }, 5, "sw-1" },
		{ 1, { 6, 'e', 't', 'h', '0' }, 5, "eth0" },
		{ 1, { 0, 0xde, 0xad }, 3, "dead" }, /* reserved */
		{ 1, { 9, 0xbe, 0xef }, 3, "beef" }, /* reserved */
		{ 2, { 3, 0x00, 0x1c, 0x73, 0xaa, 0xbb, 0xcd }, 7, "00:1c:73:aa:bb:cd" },
		{ 2, { 4, 1, 198, 51, 100, 9 }, 6, "198.51.100.9" },
		{ 2, { 5, 's', 'w', 'p', '1', '2' }, 6, "swp12" },
		{ 2, { 1, 'u', 'p', '\t' }, 4, "up\\x09" },
		{ 2, { 6, 0x01, 0x02 }, 3, "0102" }, /* agent circuit ID */
		{ 2, { 7, '4', '2' }, 3, "42" },
	};
	static const uint8_t chassis[] = { 7, 'c' }, port[] = { 7, 'p' }, ttl[] = { 0, 120 };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t pdu[64];
		size_t n = 0;
		struct lldp_neighbor nb;
		int is_chassis = cases[i].type == 1;

		tlv_put(pdu, &n, 1, is_chassis ? cases[i].v : chassis,
			is_chassis ? cases[i].n : sizeof(chassis));
		tlv_put(pdu, &n, 2, is_chassis ? port : cases[i].v,
			is_chassis ? sizeof(port) : cases[i].n);
		tlv_put(pdu, &n, 3, ttl, sizeof(ttl));
		nb = parse_ok(pdu, n);
		ck_assert_msg(!strcmp(is_chassis ? nb.chassis_id : nb.port_id, cases[i].want),
			      "case %zu: got '%s' / '%s', want '%s'", i, nb.chassis_id, nb.port_id,
			      cases[i].want);
	}
}
END_TEST

/* Refused LLDPDUs: the errno and the reason, and *ret left alone. */
START_TEST(test_malformed)
{
	static const uint8_t one_byte[] = "\x02";
	static const uint8_t past_end[] = "\x02\x07\x04\x00\x1c\x73";
	static const uint8_t port_first[] = PORT_P CHASSIS_S TTL_120;
	static const uint8_t ttl_second[] = CHASSIS_S TTL_120 PORT_P;
	static const uint8_t end_third[] = CHASSIS_S PORT_P "\x00\x00";
	static const uint8_t ttl_1[] = CHASSIS_S PORT_P "\x06\x01\x78";
	static const uint8_t chassis_0[] = "\x02\x00" PORT_P TTL_120;
	static const uint8_t chassis_1[] = "\x02\x01\x07" PORT_P TTL_120;
	static const uint8_t chassis_257[2 + 257] = { 0x03, 0x01, 0x07 };
	static const uint8_t port_0[] = CHASSIS_S "\x04\x00" TTL_120;
	static const uint8_t chassis_again[] = CHASSIS_S PORT_P TTL_120 CHASSIS_S;
	/* where the TLVs of typical begin */
	const size_t ttl_at = 22, port_description_at = 26, system_name_at = 46;
	static const char cut_mandatory[] = "LLDPDU ends before its TTL TLV",
			  past[] = "TLV runs past the end of the LLDPDU",
			  chassis_len[] = "Chassis ID TLV length not 2..256";
	const struct {
		const char *name;
		const uint8_t *p;
		size_t len;
		int err;
		const char *why;
	} cases[] = {
		{ "empty", typical, 0, -EMSGSIZE, "LLDPDU ends before its Chassis ID TLV" },
		{ "one byte", one_byte, PDU_LEN(one_byte), -EMSGSIZE,
		  "LLDPDU ends before its Chassis ID TLV" },
		{ "ends after Port ID", typical, ttl_at, -EMSGSIZE, cut_mandatory },
		{ "cut in a mandatory TLV header", typical, ttl_at + 1, -EMSGSIZE, cut_mandatory },
		{ "cut in an optional TLV header", typical, port_description_at + 1, -EMSGSIZE,
		  "TLV header cut short" },
		{ "cut in TTL", typical, ttl_at + 3, -EBADMSG, past },
		{ "cut in System Name", typical, system_name_at + 5, -EBADMSG, past },
		{ "length past the end", past_end, PDU_LEN(past_end), -EBADMSG, past },
		{ "Port ID first", port_first, PDU_LEN(port_first), -EBADMSG,
		  "first TLV is not Chassis ID" },
		{ "TTL second", ttl_second, PDU_LEN(ttl_second), -EBADMSG,
		  "second TLV is not Port ID" },
		{ "End third", end_third, PDU_LEN(end_third), -EBADMSG, "third TLV is not TTL" },
		{ "TTL length 1", ttl_1, PDU_LEN(ttl_1), -EBADMSG,
		  "TTL TLV shorter than 2 octets" },
		{ "Chassis ID length 0", chassis_0, PDU_LEN(chassis_0), -EBADMSG, chassis_len },
		{ "Chassis ID length 1", chassis_1, PDU_LEN(chassis_1), -EBADMSG, chassis_len },
		{ "Chassis ID length 257", chassis_257, sizeof(chassis_257), -EBADMSG,
		  chassis_len },
		{ "Port ID length 0", port_0, PDU_LEN(port_0), -EBADMSG,
		  "Port ID TLV length not 2..256" },
		{ "Chassis ID again", chassis_again, PDU_LEN(chassis_again), -EBADMSG,
		  "Chassis ID, Port ID or TTL TLV repeated" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct lldp_neighbor nb, before;
		const char *why = NULL;
		int err;

		memset(&nb, 0x5a, sizeof(nb));
		before = nb;
		err = lldp_parse(cases[i].p, cases[i].len, &nb, &why);
		ck_assert_msg(err == cases[i].err, "%s: %d, want %d", cases[i].name, err,
			      cases[i].err);
		ck_assert_msg(why && !strcmp(why, cases[i].why), "%s: why '%s'", cases[i].name,
			      why ? why : "(null)");
		ck_assert_msg(!memcmp(&nb, &before, sizeof(nb)), "%s: wrote *ret", cases[i].name);
	}
}
END_TEST

/* Fails the test unless field is a NUL-terminated string of want_len bytes
 * that ends with tail. */
static void check_cut(const char *field, size_t size, size_t want_len, const char *tail)
{
	size_t len = strnlen(field, size);

	ck_assert_msg(len < size, "not NUL-terminated");
	ck_assert_uint_eq(len, want_len);
	ck_assert_str_eq(field + len - strlen(tail), tail);
}

/*
 * Every TLV as long as the 9-bit length allows (511 octets), or as its clause
 * allows where longer is malformed (Chassis ID, Port ID: 256): the strings
 * are cut at a whole escape or hex byte, and nothing is written past *ret.
 */
START_TEST(test_max_length)
{
	static uint8_t chassis[256], port[256], v[511], pdu[4096];
	struct {
		struct lldp_neighbor nb;
		uint8_t guard[64];
	} w;
	size_t n = 0;

	memset(chassis, 0xff, sizeof(chassis));
	chassis[0] = 7; /* locally assigned: 255 escapes of 4 characters */
	tlv_put(pdu, &n, 1, chassis, sizeof(chassis));
	memset(port, 0xab, sizeof(port));
	port[0] = 3; /* MAC: 255 hex bytes and colons */
	tlv_put(pdu, &n, 2, port, sizeof(port));
	memset(v, 0, sizeof(v));
	v[0] = 0x01, v[1] = 0x2c; /* TTL 300, then 509 octets read past */
	tlv_put(pdu, &n, 3, v, sizeof(v));
	memset(v, 'd', sizeof(v));
	tlv_put(pdu, &n, 4, v, sizeof(v));
	memset(v, 0x80, sizeof(v));
	tlv_put(pdu, &n, 5, v, sizeof(v));
	memset(v, 0, sizeof(v));
	v[0] = 17, v[1] = 2, v[2] = 0x20, v[3] = 0x01, v[4] = 0x0d, v[5] = 0xb8, v[17] = 1;
	v[23] = 255; /* OID string length */
	tlv_put(pdu, &n, 8, v, sizeof(v));
	tlv_put(pdu, &n, 127, v, sizeof(v));
	tlv_put(pdu, &n, 9, v, sizeof(v)); /* reserved type */
	tlv_put(pdu, &n, 0, v, 0);

	memset(&w, 0x5a, sizeof(w));
	w.nb = parse_ok(pdu, n);
	check_cut(w.nb.chassis_id, sizeof(w.nb.chassis_id), 63 * 4, "\\xff");
	check_cut(w.nb.port_id, sizeof(w.nb.port_id), 2 + 84 * 3, ":ab");
	check_cut(w.nb.port_description, sizeof(w.nb.port_description), 255, "d");
	check_cut(w.nb.system_name, sizeof(w.nb.system_name), 63 * 4, "\\x80");
	ck_assert_str_eq(w.nb.mgmt_address, "2001:db8::1");
	ck_assert_uint_eq(w.nb.ttl, 300);
	for (size_t i = 0; i < sizeof(w.guard); i++)
		ck_assert_uint_eq(w.guard[i], 0x5a);
}
END_TEST

/*
 * Every prefix of the typical LLDPDU, placed against an inaccessible page:
 * a read past len faults and fails the test (fork mode).
 */
START_TEST(test_prefixes_in_bounds)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *map =
		mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ck_assert(map != MAP_FAILED);
	ck_assert_int_eq(mprotect(map + page, page, PROT_NONE), 0);
	for (size_t len = 0; len <= PDU_LEN(typical); len++) {
		uint8_t *p = map + page - len;
		struct lldp_neighbor nb;
		const char *why;
		int err;

		memcpy(p, typical, len);
		err = lldp_parse(p, len, &nb, &why);
		ck_assert_msg(err == 0 || err == -EBADMSG || err == -EMSGSIZE, "len %zu: %d", len,
			      err);
	}
	(void)munmap(map, 2 * page);
}
END_TEST

Suite *lldp_suite(void)
{
	const struct testutil_case cases[] = {
		{ "accepted", test_accepted, 0 },
		{ "id_subtypes", test_id_subtypes, 0 },
		{ "malformed", test_malformed, 0 },
		{ "max_length", test_max_length, 0 },
		{ "prefixes_in_bounds", test_prefixes_in_bounds, 0 },
	};

	return TESTUTIL_SUITE("lldp", cases);
}
