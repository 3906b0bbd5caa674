-- SPDX-License-Identifier: MIT
-- fabmon schema version 3: packed samples and 1-minute rollups
-- (agent/pack.h, agent/store_pack.h). The samples of version 1 are packed
-- into blocks by the program when it opens the file, and that table dropped.

-- The newest ticks, one row each: all the tick's samples in one blob
-- (agent/stage.h), kept until every series has packed them.
CREATE TABLE stage (
	ts_ms INTEGER PRIMARY KEY,
	data  BLOB NOT NULL
);

-- A run of one series' samples, packed: its times and values (a gauge's
-- value, a counter's total). A counter's rates come from the differences;
-- first_rate is the first sample's, NULL for a counter's first reading.
CREATE TABLE blocks (
	id         INTEGER PRIMARY KEY,
	series_id  INTEGER NOT NULL,
	start_ms   INTEGER NOT NULL,
	end_ms     INTEGER NOT NULL,
	n          INTEGER NOT NULL,
	first_rate REAL,
	data       BLOB NOT NULL
);
CREATE INDEX blocks_series ON blocks (series_id, end_ms);
CREATE INDEX blocks_end ON blocks (end_ms);

-- One hour of one series' 1-minute rollups, packed: n minutes of (minute,
-- samples, min, max, sum, last), over a counter's rate or a gauge's value.
CREATE TABLE rollups (
	id        INTEGER PRIMARY KEY,
	series_id INTEGER NOT NULL,
	hour_ms   INTEGER NOT NULL,
	n         INTEGER NOT NULL,
	data      BLOB NOT NULL,
	UNIQUE (series_id, hour_ms)
);
CREATE INDEX rollups_hour ON rollups (hour_ms);
