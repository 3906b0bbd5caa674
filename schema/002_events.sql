-- SPDX-License-Identifier: MIT
-- fabmon schema version 2: detected events (DESIGN.md, "What it detects").
-- end_ms is NULL while the event is open; evidence is JSON.
CREATE TABLE events (
	id         INTEGER PRIMARY KEY,
	kind       TEXT NOT NULL,
	subject    TEXT NOT NULL,
	start_ms   INTEGER NOT NULL,
	end_ms     INTEGER,
	peak_score REAL NOT NULL,
	evidence   TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX events_start ON events (start_ms);
