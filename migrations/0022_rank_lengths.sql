-- 0022_rank_lengths: every row's length in tokens, a block of 128 ids to a row.
--
-- Ranking a row needs its length (BM25 divides by it).  FTS5 answers it
-- from messages_fts_docsize, a statement stepped for each row: about half
-- of the CPU of a search that scores many rows (a word in a few percent of
-- the messages read whole).  syncd's builder reads those lengths for the
-- block bounds anyway (libmailbox/core/index_rank_build.c), and now keeps
-- them, a block's 128 as one row: little-endian 16-bit lengths, 0 where
-- there is no row or the length does not fit (256 bytes: the row stays in
-- its b-tree page, where a chunk's 4 KB would spill into overflow pages
-- and cost a search five times a row's own measure to read).  A search
-- reads a block's row once and measures its rows from it, and asks FTS5
-- for a row whose block has none (libmailbox/core/index_rank_lengths.c;
-- docs/index.md, "Lengths kept by block").
--
-- A row is there only while it holds its block's lengths: an insert into
-- the block (an id is reused once the newest rows are gone) or a change of
-- a message's text deletes it (the triggers below, as 0014's clear the
-- block's bit in rank_chunks), until the builder builds the chunk again.
-- A deletion leaves it: a deleted row is never measured.  Chunks built
-- before this migration have none until the builder fills them.
CREATE TABLE rank_lengths (
	block	INTEGER PRIMARY KEY,	-- id / 128
	lengths	BLOB NOT NULL
);
CREATE TRIGGER rank_lengths_insert AFTER INSERT ON messages BEGIN
	DELETE FROM rank_lengths WHERE block = NEW.id / 128;
END;
CREATE TRIGGER rank_lengths_update AFTER UPDATE OF subject, from_text, recipients, body,
    att_names, att_text ON messages BEGIN
	DELETE FROM rank_lengths WHERE block = NEW.id / 128;
END;
