-- SPDX-License-Identifier: MIT
-- fabmon schema version 5: a checksum per packed row. crc is the CRC-32C of
-- the row's series, times, count (and a block's first rate) and data
-- (agent/store_pack.h); a reader that finds it wrong skips the row and says
-- so. Rows written before version 5 keep a NULL crc and are read as before,
-- unchecked but for their decoding: nothing is rewritten.
ALTER TABLE blocks ADD COLUMN crc INTEGER;
ALTER TABLE rollups ADD COLUMN crc INTEGER;
