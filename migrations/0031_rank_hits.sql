-- 0031_rank_hits: each row's hits of the words most messages hold.
--
-- A search of words all of which a match must hold (`what is the status of
-- my order`) stepped through the doclists of `is`, `the` and `of` for each
-- row of its rarer words: a seek to the page holding the row, about 3.6 us
-- a row and word at 1,000,000 messages.  For each term chosen while it was
-- in at least two fifths of the rows, the bounds builder now keeps, per
-- chunk of 2,048 ids, each id's weighted hits of it in a byte
-- (index_search_common.c reads them; docs/index.md, "Words most messages
-- hold").  NULL for every other term.  Forgetting when the terms were last
-- chosen makes syncd's next bounds build choose them again, which writes
-- the hits into every chunk built before (terms_fill()).
ALTER TABLE rank_bounds ADD COLUMN hits BLOB;
UPDATE rank_state SET terms_rows = 0;
