-- 0005_attachment_text: attachment text and file names are searchable
-- (docs/attachments.md).  Each attachment row says what came of its
-- extraction; each message carries its attachments' names and text as two
-- more columns of the one FTS table, so a plain query matches them with the
-- same tokenizer and BM25 ranks them with the message (a second FTS table
-- could not AND a word of the PDF with a word of the subject).
--
-- Old rows: extract_status stays NULL (never tried), which syncd's
-- re-extraction reads from the stored blobs; their file names are
-- searchable at once (att_names is filled below, before the FTS rebuild).

ALTER TABLE attachments ADD COLUMN extract_status TEXT;	-- 'ok...' or why no text; NULL: not tried
ALTER TABLE messages ADD COLUMN att_names TEXT;		-- the attachments' file names, one a line
ALTER TABLE messages ADD COLUMN att_text TEXT;		-- their extracted text, in MIME order

DROP TRIGGER messages_fts_insert;
DROP TRIGGER messages_fts_delete;
DROP TRIGGER messages_fts_update;
DROP TABLE messages_fts;

UPDATE messages SET att_names = (SELECT group_concat(filename, char(10)) FROM
	(SELECT filename FROM attachments AS a WHERE a.message_id = messages.id
	 AND a.filename IS NOT NULL ORDER BY a.ordinal))
WHERE attachment_count > 0;

CREATE VIRTUAL TABLE messages_fts USING fts5(
	subject, from_text, recipients, body, att_names, att_text,
	content='messages', content_rowid='id',
	tokenize='mb_cjk porter unicode61 remove_diacritics 2'
);
INSERT INTO messages_fts(messages_fts) VALUES ('rebuild');

CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
	INSERT INTO messages_fts(rowid, subject, from_text, recipients, body, att_names, att_text)
	VALUES (new.id, new.subject, new.from_text, new.recipients, new.body, new.att_names,
	    new.att_text);
END;

CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
	INSERT INTO messages_fts(messages_fts, rowid, subject, from_text, recipients, body,
	    att_names, att_text)
	VALUES ('delete', old.id, old.subject, old.from_text, old.recipients, old.body,
	    old.att_names, old.att_text);
END;

CREATE TRIGGER messages_fts_update AFTER UPDATE OF subject, from_text, recipients, body,
    att_names, att_text
ON messages
WHEN old.subject IS NOT new.subject OR old.from_text IS NOT new.from_text
    OR old.recipients IS NOT new.recipients OR old.body IS NOT new.body
    OR old.att_names IS NOT new.att_names OR old.att_text IS NOT new.att_text
BEGIN
	INSERT INTO messages_fts(messages_fts, rowid, subject, from_text, recipients, body,
	    att_names, att_text)
	VALUES ('delete', old.id, old.subject, old.from_text, old.recipients, old.body,
	    old.att_names, old.att_text);
	INSERT INTO messages_fts(rowid, subject, from_text, recipients, body, att_names, att_text)
	VALUES (new.id, new.subject, new.from_text, new.recipients, new.body, new.att_names,
	    new.att_text);
END;
