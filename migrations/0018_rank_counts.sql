-- 0018_rank_counts: how many rows of each chunk hold each bounded word.
--
-- The ranking's statistics (each phrase's rows, for its IDF) are counted by
-- walking the phrase's doclist over the whole index the first time a query
-- is ranked on a connection: for a frequent word at 1,000,000 messages,
-- more than half of that first search (docs/index.md, "Counts kept by
-- chunk").  The bounds builder reads every row of each bounded word in each
-- chunk anyway; it now keeps how many there were, and a search adds the
-- counts up instead, counting in FTS5 only the ids no chunk vouches for.
--
-- A count stays exact while no row of its chunk is inserted, changed or
-- deleted.  The first two clear a block bit already (0014's triggers); a
-- deletion, which leaves the bounds true, now clears bit 16 of
-- rank_chunks.blocks (RANK_CHUNK_COUNTED, rank-private.h), which the builder
-- sets with the counts.  A chunk without it is built again (its bounds and
-- counts), so every chunk of an index from before this migration is, once.
-- NULL docs: not counted.
ALTER TABLE rank_bounds ADD COLUMN docs INTEGER;
CREATE TRIGGER rank_bounds_delete AFTER DELETE ON messages BEGIN
	UPDATE rank_chunks SET blocks = blocks & ~65536 WHERE chunk = OLD.id / 2048;
END;
