-- SPDX-License-Identifier: MIT
-- fabmon schema version 4: when the agent opened (raised) each event. The
-- event starts at its first tick over the threshold (start_ms) and opens
-- event_open_ticks later, or on that tick where its detector had waited its
-- own bound already. NULL for events stored before version 4.
ALTER TABLE events ADD COLUMN open_ms INTEGER;
