-- 0019_flag_scopes: the ids of the flagged messages, and of the unread ones.
--
-- A ranked search with is:flagged or is:unread tests each match's flags by
-- a join into messages_search_filter (about half a microsecond a match),
-- and the block walk does not help when few messages pass: their best
-- blocks' rows mostly fail.  `linux is:flagged` at 100,000 messages, 1% of
-- them flagged, joined 15,000 matches for 159 (13 ms of CPU, ten times
-- `linux` alone).  With these two indexes a search reads the scope's ids
-- first, as it reads a small folder's or a narrow date range's
-- (libmailbox/core/index_search_narrow.c; docs/index.md, "A narrow
-- scope"), when a sample of the messages says few are in it.
--
-- Partial indexes: a message outside them costs the writer nothing, and one
-- inside an entry of a few bytes.  They are on flags, not id, so that the
-- read of their ids is covering (the rowid comes with every entry).  The
-- WHERE terms are the ones libmailbox/core/search-private.h spells
-- (SEARCH_FEW_EACH; MB_FLAG_FLAGGED is 4, MB_FLAG_SEEN 1): SQLite uses a
-- partial index only for a statement whose WHERE implies the index's.
CREATE INDEX messages_flagged ON messages(flags) WHERE (flags & 4) <> 0;
CREATE INDEX messages_unread ON messages(flags) WHERE (flags & 1) = 0;
