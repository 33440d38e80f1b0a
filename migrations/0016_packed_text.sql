-- 0016_packed_text: message bodies and attachment text are stored packed
-- (docs/index.md, "Packed text").  messages.body and messages.att_text hold
-- the text, or a zstd frame of it (a BLOB) when that is smaller by an eighth
-- or more; mb_text() (text_pack.c) gives the text back, and every reader of
-- the two columns goes through it.  (attachments.extracted_text, which
-- get_attachment pages and the attachment snippets read a window of, stays
-- text.)
--
-- FTS5 reads a row's text from its content table (for snippet(), and for
-- its own 'rebuild' and 'integrity-check'), so its content table becomes a
-- view that unpacks; the triggers hand it the text the same way.  The full
-- text index is rebuilt (FTS5 cannot change a table's content option in
-- place): the same tokens, in fewer segments until syncd's next merge,
-- which the cleared merge record asks for.
--
-- The rows of an older index are packed here, before the FTS table is made
-- again, so that the rebuild reads each text once.  The pages they free
-- stay in the file for the rows to come (VACUUM gives them back at once).

DROP TRIGGER messages_fts_insert;
DROP TRIGGER messages_fts_delete;
DROP TRIGGER messages_fts_update;
DROP TABLE messages_fts;

-- The text is unchanged: the blocks' rank bounds still hold.
DROP TRIGGER rank_bounds_update;
UPDATE messages SET body = mb_text_pack(body), att_text = mb_text_pack(att_text)
WHERE typeof(body) = 'text' OR typeof(att_text) = 'text';
CREATE TRIGGER rank_bounds_update AFTER UPDATE OF subject, from_text, recipients, body,
    att_names, att_text ON messages BEGIN
	UPDATE rank_chunks SET blocks = blocks & ~(1 << ((NEW.id / 128) % 16))
	WHERE chunk = NEW.id / 2048;
END;

CREATE VIEW messages_fts_content AS
	SELECT id, subject, from_text, recipients, mb_text(body) AS body, att_names,
	    mb_text(att_text) AS att_text
	FROM messages;

CREATE VIRTUAL TABLE messages_fts USING fts5(
	subject, from_text, recipients, body, att_names, att_text,
	content='messages_fts_content', content_rowid='id',
	tokenize='mb_cjk porter unicode61 remove_diacritics 2'
);
INSERT INTO messages_fts(messages_fts) VALUES ('rebuild');
DELETE FROM fts_merge_state;

CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
	INSERT INTO messages_fts(rowid, subject, from_text, recipients, body, att_names, att_text)
	VALUES (new.id, new.subject, new.from_text, new.recipients, mb_text(new.body),
	    new.att_names, mb_text(new.att_text));
END;

CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
	INSERT INTO messages_fts(messages_fts, rowid, subject, from_text, recipients, body,
	    att_names, att_text)
	VALUES ('delete', old.id, old.subject, old.from_text, old.recipients, mb_text(old.body),
	    old.att_names, mb_text(old.att_text));
END;

-- A text compares equal packed exactly when it does unpacked: the same text
-- packs to the same frame (one zstd level, one build of zstd).  Were zstd to
-- pack differently after an upgrade, a re-fetched row is indexed again,
-- which costs time, not truth.
CREATE TRIGGER messages_fts_update AFTER UPDATE OF subject, from_text, recipients, body,
    att_names, att_text
ON messages
WHEN old.subject IS NOT new.subject OR old.from_text IS NOT new.from_text
    OR old.recipients IS NOT new.recipients OR old.body IS NOT new.body
    OR old.att_names IS NOT new.att_names OR old.att_text IS NOT new.att_text
BEGIN
	INSERT INTO messages_fts(messages_fts, rowid, subject, from_text, recipients, body,
	    att_names, att_text)
	VALUES ('delete', old.id, old.subject, old.from_text, old.recipients, mb_text(old.body),
	    old.att_names, mb_text(old.att_text));
	INSERT INTO messages_fts(rowid, subject, from_text, recipients, body, att_names, att_text)
	VALUES (new.id, new.subject, new.from_text, new.recipients, mb_text(new.body),
	    new.att_names, mb_text(new.att_text));
END;
