-- 0008_folder_presence: folders LIST stopped showing, and one dead letter per range.
--
-- A folder the server's LIST stopped showing is hidden
-- at once and purged only after it has stayed absent (docs/syncd.md "When
-- the mailbox changes shape"), so one bad LIST cannot wipe an index.
-- absent_ticks counts the consecutive ticks whose LIST did not show the
-- folder; 0 means listed.  IDX_CURRENT (libmailbox/core/index-private.h)
-- serves a row only when its folder has absent_ticks = 0.
ALTER TABLE folders ADD COLUMN absent_ticks INTEGER NOT NULL DEFAULT 0;

-- dead_letters keeps one row per range (folder, uidvalidity, first, last):
-- a fault that persists adds its attempts to the row and refreshes the
-- error and the time, instead of adding a row per tick.  Of the rows that
-- already repeat a range, the newest is kept, with every attempt counted.
UPDATE dead_letters SET attempts = (SELECT sum(d.attempts) FROM dead_letters d
	WHERE d.folder_name = dead_letters.folder_name AND d.uidvalidity = dead_letters.uidvalidity
	AND d.first_uid = dead_letters.first_uid AND d.last_uid = dead_letters.last_uid);
DELETE FROM dead_letters WHERE id NOT IN (
	SELECT max(id) FROM dead_letters
	GROUP BY folder_name, uidvalidity, first_uid, last_uid);
CREATE UNIQUE INDEX dead_letters_range
	ON dead_letters(folder_name, uidvalidity, first_uid, last_uid);
