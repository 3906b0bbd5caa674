-- SPDX-License-Identifier: MIT
-- fabmon schema version 6: each event's cause, 'network' (the fabric) or
-- 'host' (an application that stopped while its path kept working). Every
-- kind names one cause (agent/events.c); rows stored before version 6 take
-- their kind's, and every kind before version 6 was the network's.
ALTER TABLE events ADD COLUMN cause TEXT NOT NULL DEFAULT 'network'
	CHECK (cause IN ('network', 'host'));
