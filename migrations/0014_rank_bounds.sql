-- 0014_rank_bounds: upper bounds of the frequent words' BM25 terms, per block of ids.
--
-- A search ranks exactly over every match (docs/index.md, "Ranking"), and a
-- frequent word's matches cost about 0.6 us each to score.  These tables let
-- the engine visit the blocks of ids that can hold a page's rows and skip
-- the rest unread, while staying exact.  syncd writes them (index_rank_build.c),
-- mcpd reads them (index_search_blocks.c); an index without them, or with a
-- block they no longer vouch for, is ranked by reading those rows.
--
-- A block is 128 consecutive ids, a chunk 16 blocks (2,048 ids): chunk c holds
-- ids [2048c, 2048c + 2047].  rank_chunks has a row for each chunk bounded:
-- bit i of blocks says block i of it is still bounded.  An insert into, or
-- a text change of, a message in a bounded block clears that block's bit
-- (the triggers below): an id is reused when the newest rows were deleted,
-- and a re-extracted attachment changes a row's text.  A deletion leaves
-- the bit: it only lowers what the block holds, and a bound stays a bound.
-- gen says which rank_bounds rows are the chunk's current build.
CREATE TABLE rank_chunks (
	chunk	INTEGER PRIMARY KEY,
	blocks	INTEGER NOT NULL,
	gen	INTEGER NOT NULL
);
-- For each term of rank_terms when the chunk was built (every term, even
-- one the chunk lacks: a missing row means "not bounded here"), the blocks
-- of the chunk that hold the term, each with the Pareto front of (weighted
-- hits, row length) of its rows (fts_bounds.c describes the encoding).
CREATE TABLE rank_bounds (
	term	TEXT NOT NULL,
	chunk	INTEGER NOT NULL,
	gen	INTEGER NOT NULL,
	bounds	BLOB NOT NULL,
	PRIMARY KEY (term, chunk)
) WITHOUT ROWID;
-- The frequent terms (as the index holds them, stemmed) that chunks are
-- built for, chosen from FTS5's vocabulary by syncd.
CREATE TABLE rank_terms (
	term	TEXT PRIMARY KEY,
	docs	INTEGER NOT NULL
) WITHOUT ROWID;
-- One row: the column weights the bounds are built for (a reader with
-- other weights ignores them), the row count when rank_terms was chosen,
-- and the last build generation.
CREATE TABLE rank_state (
	id		INTEGER PRIMARY KEY CHECK (id = 1),
	weights		TEXT NOT NULL,
	terms_rows	INTEGER NOT NULL,
	gen		INTEGER NOT NULL
);
CREATE TRIGGER rank_bounds_insert AFTER INSERT ON messages BEGIN
	UPDATE rank_chunks SET blocks = blocks & ~(1 << ((NEW.id / 128) % 16))
	WHERE chunk = NEW.id / 2048;
END;
CREATE TRIGGER rank_bounds_update AFTER UPDATE OF subject, from_text, recipients, body,
    att_names, att_text ON messages BEGIN
	UPDATE rank_chunks SET blocks = blocks & ~(1 << ((NEW.id / 128) % 16))
	WHERE chunk = NEW.id / 2048;
END;
