-- 0004_answers: the date a message is ordered and filtered by, and the search
-- index rebuilt for the tokenizer's folding.
--
-- sort_date (docs/normaliser.md "Dates").  The Date header is the sender's word.  It is used when it exists
-- and is no more than one day later than INTERNALDATE, the server's arrival
-- time: a message is not written after it arrived, so a later Date is forged
-- or a broken clock (one day covers time-zone and clock mistakes).  An
-- earlier Date is kept however old: mail copied or imported into a mailbox
-- gets the copy's time as INTERNALDATE, and its Date is the right one.
-- Otherwise (no Date, an unreadable one, or one in the future) INTERNALDATE
-- is used; with no INTERNALDATE, the header.
--
-- A VIRTUAL generated column: computed from date and internaldate whenever a
-- row is read, so rows indexed before this migration get it with no re-index,
-- and the rule lives here only.  Indexed like date was.
ALTER TABLE messages ADD COLUMN sort_date INTEGER GENERATED ALWAYS AS (
	CASE WHEN date IS NOT NULL AND (internaldate IS NULL OR date <= internaldate + 86400)
	THEN date ELSE internaldate END) VIRTUAL;
CREATE INDEX messages_sort_date ON messages(sort_date);
CREATE INDEX messages_folder_sort_date ON messages(folder_id, sort_date);
-- Nothing orders or filters by the header date alone any more.
DROP INDEX messages_date;
DROP INDEX messages_folder_date;

-- The tokenizer now folds text (NFKC) and gives version-like tokens their
-- digits (docs/normaliser.md "Unicode forms", "Version-like identifiers").
-- FTS5 deletes a row's entries by tokenizing its text again, so entries
-- written by the old tokenizer must go: every row is tokenized afresh from
-- the stored text.  This costs about what indexing the text cost once
-- (docs/benchmarks.md).  Bodies stored before this are not rewritten to NFC
-- (that needs the mail again); the folding makes them searchable as NFC, and
-- syncd stores new mail in NFC.
INSERT INTO messages_fts(messages_fts) VALUES ('rebuild');
