/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "collector/pcap/lldp.h"

/* IEEE 802.1AB-2016 8.4: a TLV header is a 7-bit type and a 9-bit length */
#define TLV_HLEN 2
#define TLV_LEN_MAX 511

/* 802.1AB-2016 table 8-1: the TLV types read here */
enum {
	TLV_END = 0,
	TLV_CHASSIS_ID = 1,
	TLV_PORT_ID = 2,
	TLV_TTL = 3,
	TLV_PORT_DESCRIPTION = 4,
	TLV_SYSTEM_NAME = 5,
	TLV_MGMT_ADDRESS = 8,
};

/*
 * 8.5.9: the management address string length (subtype and 1..31 octets of
 * address), the string, then an interface numbering subtype, a 4-octet
 * interface number and the OID string length, then the OID.
 */
#define MGMT_ADDR_STR_MIN 2
#define MGMT_ADDR_STR_MAX 32
#define MGMT_IF_LEN 6

/* IANA Address Family Numbers, which 8.5.2, 8.5.3 and 8.5.9 use */
#define AFN_IPV4 1
#define AFN_IPV6 2

/* How a Chassis ID or Port ID of some subtype is shown. */
enum id_form {
	ID_HEX, /* binary or reserved: shown as hex */
	ID_TEXT,
	ID_MAC,
	ID_NETADDR, /* an IANA address family octet, then the address */
};

/* Subtypes 1..7 are defined; 0 and 8..255 are reserved (tables 8-2, 8-3). */
#define ID_SUBTYPES 8

/* 802.1AB-2016 table 8-2 */
static const enum id_form chassis_forms[ID_SUBTYPES] = {
	[1] = ID_TEXT, /* chassis component (entPhysicalAlias) */
	[2] = ID_TEXT, /* interface alias (ifAlias) */
	[3] = ID_TEXT, /* port component (entPhysicalAlias) */
	[4] = ID_MAC, /* MAC address */
	[5] = ID_NETADDR, /* network address */
	[6] = ID_TEXT, /* interface name (ifName) */
	[7] = ID_TEXT, /* locally assigned */
};

/* 802.1AB-2016 table 8-3 */
static const enum id_form port_forms[ID_SUBTYPES] = {
	[1] = ID_TEXT, /* interface alias (ifAlias) */
	[2] = ID_TEXT, /* port component (entPhysicalAlias) */
	[3] = ID_MAC, /* MAC address */
	[4] = ID_NETADDR, /* network address */
	[5] = ID_TEXT, /* interface name (ifName) */
	[6] = ID_HEX, /* agent circuit ID (RFC 3046): binary */
	[7] = ID_TEXT, /* locally assigned */
};

/*
 * 8.2: every LLDPDU opens with Chassis ID, Port ID and TTL, in that order;
 * the i-th of them has TLV type i + 1. 8.5.2, 8.5.3: a subtype octet and
 * 1..255 octets of ID. 8.5.4: 2 octets of TTL; a longer TTL TLV is read for
 * its first two rather than refused, as it still says how long to keep.
 */
static const struct mandatory {
	const char *missing; /* the data ends before it */
	const char *misplaced; /* another TLV stands in its place */
	const char *bad_len;
	size_t min_len, max_len;
} mandatory[] = {
	{ "LLDPDU ends before its Chassis ID TLV", "first TLV is not Chassis ID",
	  "Chassis ID TLV length not 2..256", 2, 256 },
	{ "LLDPDU ends before its Port ID TLV", "second TLV is not Port ID",
	  "Port ID TLV length not 2..256", 2, 256 },
	{ "LLDPDU ends before its TTL TLV", "third TLV is not TTL", "TTL TLV shorter than 2 octets",
	  2, TLV_LEN_MAX },
};

#define MANDATORY_N (sizeof(mandatory) / sizeof(mandatory[0]))

/* A string being written into a fixed buffer, NUL-terminated at all times. */
struct out {
	char *buf;
	size_t size, len;
};

static struct out out_start(char *buf, size_t size)
{
	buf[0] = '\0';
	return (struct out){ .buf = buf, .size = size };
}

/*
 * Appends s[0..n) whole, or nothing if it does not fit with the NUL, so that
 * a cut string never ends in half an escape or half a hex byte. Returns 0, or
 * -1 when it did not fit (the caller stops there).
 */
static int out_put(struct out *o, const char *s, size_t n)
{
	if (n >= o->size - o->len)
		return -1;
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len] = '\0';
	return 0;
}

static void hex2(char *s, uint8_t b)
{
	static const char digits[] = "0123456789abcdef";

	s[0] = digits[b >> 4];
	s[1] = digits[b & 0xf];
}

/*
 * A text TLV holds whatever octets the neighbour put there, and the result
 * ends up in labels and logs: printable ASCII goes as it is, any other byte
 * as \xNN. The backslash is escaped too, so that "\x41" in the output always
 * means one byte 0x41 was sent, never four characters.
 */
static void put_text(char *buf, size_t size, const uint8_t *v, size_t n)
{
	struct out o = out_start(buf, size);
	char esc[4] = { '\\', 'x' };

	for (size_t i = 0; i < n; i++) {
		const char *s = (const char *)&v[i];
		size_t k = 1;

		if (v[i] < 0x20 || v[i] > 0x7e || v[i] == '\\') {
			hex2(esc + 2, v[i]);
			s = esc;
			k = sizeof(esc);
		}
		if (out_put(&o, s, k))
			break;
	}
}

/* Lowercase hex, sep between bytes unless it is 0. */
static void put_hex(char *buf, size_t size, const uint8_t *v, size_t n, char sep)
{
	struct out o = out_start(buf, size);

	for (size_t i = 0; i < n; i++) {
		char s[3];
		size_t k = 0;

		if (i && sep)
			s[k++] = sep;
		hex2(s + k, v[i]);
		if (out_put(&o, s, k + 2))
			break;
	}
}

/*
 * An IPv4 or IPv6 address a[0..n) of IANA address family afn, in the usual
 * notation. Returns 0, or -1 with buf unspecified when it is another family
 * or the length does not fit the family. buf must hold INET6_ADDRSTRLEN.
 */
static int put_addr(char *buf, size_t size, uint8_t afn, const uint8_t *a, size_t n)
{
	int af;

	if (afn == AFN_IPV4 && n == 4)
		af = AF_INET;
	else if (afn == AFN_IPV6 && n == 16)
		af = AF_INET6;
	else
		return -1;
	return inet_ntop(af, a, buf, (socklen_t)size) ? 0 : -1;
}

/* A Chassis ID or Port ID value v[0..n), n >= 2: subtype octet, then the ID. */
static void put_id(char *buf, size_t size, const enum id_form *forms, const uint8_t *v, size_t n)
{
	enum id_form form = v[0] < ID_SUBTYPES ? forms[v[0]] : ID_HEX;
	const uint8_t *id = v + 1;
	size_t id_len = n - 1;

	switch (form) {
	case ID_TEXT:
		put_text(buf, size, id, id_len);
		return;
	case ID_MAC:
		put_hex(buf, size, id, id_len, ':');
		return;
	case ID_NETADDR:
		if (!put_addr(buf, size, id[0], id + 1, id_len - 1))
			return;
		break; /* another family: hex, family octet included */
	case ID_HEX:
		break;
	}
	put_hex(buf, size, id, id_len, 0);
}

/*
 * The address of Management Address TLV value v[0..n) (8.5.9) into buf, if
 * it is a well-formed TLV with an IPv4 or IPv6 address. Returns 0, or -1 with
 * buf unspecified.
 */
static int put_mgmt(char *buf, size_t size, const uint8_t *v, size_t n)
{
	size_t str_len, oid_at;

	if (!n)
		return -1;
	str_len = v[0];
	if (str_len < MGMT_ADDR_STR_MIN || str_len > MGMT_ADDR_STR_MAX)
		return -1;
	oid_at = 1 + str_len + MGMT_IF_LEN;
	if (n < oid_at || n - oid_at < v[oid_at - 1])
		return -1;
	return put_addr(buf, size, v[1], v + 2, str_len - 1);
}

/* Keeps what TLV type with value v[0..n) says, once its length is checked. */
static void tlv_fill(struct lldp_neighbor *nb, unsigned type, const uint8_t *v, size_t n)
{
	switch (type) {
	case TLV_CHASSIS_ID:
		put_id(nb->chassis_id, sizeof(nb->chassis_id), chassis_forms, v, n);
		break;
	case TLV_PORT_ID:
		put_id(nb->port_id, sizeof(nb->port_id), port_forms, v, n);
		break;
	case TLV_TTL:
		nb->ttl = (unsigned)v[0] << 8 | v[1];
		break;
	case TLV_PORT_DESCRIPTION:
		/* 8.5.5 allows 255 octets; a longer one is cut, not refused */
		put_text(nb->port_description, sizeof(nb->port_description), v, n);
		break;
	case TLV_SYSTEM_NAME:
		/* 8.5.6: as the port description */
		put_text(nb->system_name, sizeof(nb->system_name), v, n);
		break;
	case TLV_MGMT_ADDRESS:
		/* there may be several (8.5.9); a bad one is skipped, not fatal */
		if (!nb->mgmt_address[0] &&
		    put_mgmt(nb->mgmt_address, sizeof(nb->mgmt_address), v, n))
			nb->mgmt_address[0] = '\0';
		break;
	default:
		/* System Description and Capabilities, organizationally specific
		 * TLVs (8.6) and reserved types: nothing reported from them */
		break;
	}
}

/*
 * Reads the TLV at *off, the i-th of the LLDPDU p[0..len), into nb and moves
 * *off past it. Returns 0, or a negative errno with *why set.
 */
static int tlv_take(struct lldp_neighbor *nb, size_t i, const uint8_t *p, size_t len, size_t *off,
		    const char **why)
{
	size_t left = len - *off, n;
	unsigned type;

	if (left < TLV_HLEN) {
		*why = i < MANDATORY_N ? mandatory[i].missing : "TLV header cut short";
		return -EMSGSIZE;
	}
	type = p[*off] >> 1;
	n = (size_t)(p[*off] & 1) << 8 | p[*off + 1];
	if (n > left - TLV_HLEN) {
		*why = "TLV runs past the end of the LLDPDU";
		return -EBADMSG;
	}
	if (i < MANDATORY_N && type != i + 1) {
		*why = mandatory[i].misplaced;
		return -EBADMSG;
	}
	if (i < MANDATORY_N && (n < mandatory[i].min_len || n > mandatory[i].max_len)) {
		*why = mandatory[i].bad_len;
		return -EBADMSG;
	}
	/* 8.2: exactly one of each, and only at the start */
	if (i >= MANDATORY_N && type >= TLV_CHASSIS_ID && type <= TLV_TTL) {
		*why = "Chassis ID, Port ID or TTL TLV repeated";
		return -EBADMSG;
	}
	tlv_fill(nb, type, p + *off + TLV_HLEN, n);
	*off += TLV_HLEN + n;
	return 0;
}

/*
 * 8.2: the End Of LLDPDU TLV is optional in 802.1AB-2016, so the LLDPDU ends
 * at one or where the data ends. Only its type is looked at: what follows is
 * frame padding or a trailer, whatever its length field says.
 */
static int at_end(const uint8_t *p, size_t len, size_t off)
{
	return off == len || p[off] >> 1 == TLV_END;
}

int lldp_parse(const uint8_t *p, size_t len, struct lldp_neighbor *ret, const char **ret_why)
{
	struct lldp_neighbor nb = { 0 };
	const char *why = NULL;
	size_t off = 0;
	int err = 0;

	for (size_t i = 0; !err && (i < MANDATORY_N || !at_end(p, len, off)); i++)
		err = tlv_take(&nb, i, p, len, &off, &why);
	if (err)
		*ret_why = why;
	else
		*ret = nb;
	return err;
}
