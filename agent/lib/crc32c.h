/* SPDX-License-Identifier: MIT */
#ifndef FABMON_CRC32C_H
#define FABMON_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/*
 * CRC-32C of len bytes of buf, continuing from crc (0 to start): the
 * checksum of iSCSI (RFC 3720, B.4), ext4 and Btrfs. crc32c(0, "123456789",
 * 9) is 0xe3069283.
 */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

#endif
