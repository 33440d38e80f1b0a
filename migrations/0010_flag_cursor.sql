-- 0010_flag_cursor: where the flag scan of a folder without CONDSTORE got
-- to, and folders hidden because SYNC_FOLDERS left them out.
--
-- Without CONDSTORE nothing proves a folder's flags unchanged, so each tick
-- fetches the flags of a window of its indexed mail, within SYNC_FLAG_BUDGET
-- messages per tick over all folders (docs/syncd.md "Flags and expunges").
-- flag_cursor is the highest UID the last window covered; the next one
-- starts above it, and 0 means from the first UID.  It is kept in the index
-- so that syncd --once from cron goes on where the last run stopped.
ALTER TABLE folders ADD COLUMN flag_cursor INTEGER NOT NULL DEFAULT 0;

-- A folder the server still lists but SYNC_FOLDERS no longer names is
-- hidden like one LIST stopped showing (absent_ticks > 0, purged after as
-- many ticks); left_out = 1 says which, so that get_message and the writes
-- can say "no longer synced" rather than "no longer on the server".
ALTER TABLE folders ADD COLUMN left_out INTEGER NOT NULL DEFAULT 0;
