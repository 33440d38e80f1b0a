-- 0015_fts_merge: when the full-text index was last merged into one segment.
--
-- FTS5 keeps its index as segments; every group commit adds one, and its
-- automerge keeps a dozen or so at every size.  A search reads each
-- segment's doclist for each of its terms, and a ranked walk opens them again
-- for every range of ids: at 100,000 messages, 11 segments cost about a sixth more
-- CPU than one (docs/index.md "Segments").  syncd merges the index into one
-- segment (FTS5's 'merge' with a negative page count, an optimize done a
-- step at a time) when it has caught up and the index has grown by a quarter
-- since the last merge; merged_max_id is max(messages.id) when that merge
-- finished (a fresh index has no row: 0).
CREATE TABLE fts_merge_state (
	id		INTEGER PRIMARY KEY CHECK (id = 1),
	merged_max_id	INTEGER NOT NULL
);
