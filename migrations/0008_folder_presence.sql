-- 0008_folder_presence: a folder the server's LIST stopped showing is hidden
-- at once and purged only after it has stayed absent (docs/syncd.md "When
-- the mailbox changes shape"), so one bad LIST cannot wipe an index.
-- absent_ticks counts the consecutive ticks whose LIST did not show the
-- folder; 0 means listed.  IDX_CURRENT (libmailbox/core/index-private.h)
-- serves a row only when its folder has absent_ticks = 0.
ALTER TABLE folders ADD COLUMN absent_ticks INTEGER NOT NULL DEFAULT 0;
