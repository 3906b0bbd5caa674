-- SPDX-License-Identifier: MIT
-- fabmon schema version 1: series, ticks and raw samples.
CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);

-- One row per series the agent has ever stored: a metric name and its labels
-- in Prometheus text form (key="value",...).
CREATE TABLE series (
	id     INTEGER PRIMARY KEY,
	name   TEXT NOT NULL,
	labels TEXT NOT NULL,
	type   TEXT NOT NULL CHECK (type IN ('counter', 'gauge')),
	UNIQUE (name, labels)
);

-- One row per committed tick. first_rowid..last_rowid are the samples the
-- tick wrote, so retention deletes a tick's samples by rowid range without
-- an index on time.
CREATE TABLE ticks (
	ts_ms       INTEGER PRIMARY KEY,
	first_rowid INTEGER,
	last_rowid  INTEGER,
	samples     INTEGER NOT NULL,
	duration_s  REAL NOT NULL
);

-- value: a gauge's value or a counter's monotonic total (wraps and resets
-- absorbed); rate: the counter's per-second rate over the tick, NULL for
-- gauges and for a counter's first reading.
CREATE TABLE samples (
	ts_ms     INTEGER NOT NULL,
	series_id INTEGER NOT NULL REFERENCES series (id),
	value     REAL NOT NULL,
	rate      REAL
);
-- No index on samples: one over (series_id, ts_ms) takes every tick's
-- inserts scattered over its pages and cut ingest from ~930k to ~70k
-- samples/s with 85x write amplification (make bench). Time ranges go
-- through ticks' rowid ranges instead.
