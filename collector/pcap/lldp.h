/* SPDX-License-Identifier: MIT */
#ifndef FABMON_LLDP_H
#define FABMON_LLDP_H

#include <stddef.h>
#include <stdint.h>

/*
 * The parse of one LLDPDU (IEEE 802.1AB-2016), for the libpcap path: what a
 * neighbour says about itself, as printable strings ready for labels.
 */

/* What one LLDPDU says about the neighbour on the far end of a link. */
struct lldp_neighbor {
	/*
	 * Printable: the MAC address subtype as aa:bb:cc:dd:ee:ff, the network
	 * address subtype as an IPv4/IPv6 string, the text subtypes as text
	 * with bytes outside printable ASCII, and the backslash, escaped as
	 * \xNN; other subtypes (and a network address of another family or
	 * length) as lowercase hex.
	 */
	char chassis_id[256];
	char port_id[256]; /* same rules */
	char system_name[256]; /* text as above; "" when absent */
	char port_description[256]; /* text as above; "" when absent */
	char mgmt_address[64]; /* first IPv4/IPv6 management address, "" if none */
	unsigned ttl; /* seconds; 0 means the neighbour is leaving (shutdown LLDPDU) */
};

/*
 * Parses the LLDPDU p[0..len) (what follows the 0x88cc ethertype). Returns 0
 * and fills *ret, or a negative errno with *ret_why set to a static message
 * (*ret untouched):
 *  -EBADMSG   malformed: the first three TLVs are not Chassis ID, Port ID and
 *             TTL in that order, or one of these comes again later; a TLV
 *             runs past len; Chassis ID or Port ID is not 2..256 octets long,
 *             or TTL shorter than 2;
 *  -EMSGSIZE  cut short: len ends before the TTL TLV, or inside a TLV header.
 * The End Of LLDPDU TLV is optional (802.1AB-2016 8.2): without one the data
 * must end exactly after a TLV. What follows an End TLV (frame padding) is
 * not read. A string longer than its field is cut at a whole character or
 * escape, and is always NUL-terminated. A malformed Management Address TLV,
 * an over-long Port Description or System Name, and unknown TLVs do not fail
 * the parse. Pure; never reads outside p[0..len).
 */
int lldp_parse(const uint8_t *p, size_t len, struct lldp_neighbor *ret, const char **ret_why);

#endif
