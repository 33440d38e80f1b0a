-- 0001_init: the index schema (docs/index.md explains it).
-- Applied by mb_index_open() in one transaction and recorded in
-- schema_migrations.  Append-only: later changes are new files that add
-- columns or tables; nothing here is ever renamed.
--
-- Conventions: times are unix seconds (INTEGER); UIDs, UIDVALIDITY and MODSEQ
-- are INTEGER; booleans are 0/1; ids from mail headers (Message-ID,
-- In-Reply-To, References) are stored without the angle brackets.

CREATE TABLE folders (
	id		INTEGER PRIMARY KEY,
	name		TEXT NOT NULL UNIQUE,		-- UTF-8 (decoded from modified UTF-7)
	role		TEXT,				-- special-use: '\Trash', '\Sent', ...; NULL none
	uidvalidity	INTEGER NOT NULL DEFAULT 0,	-- 0: never examined
	uidnext		INTEGER NOT NULL DEFAULT 0,
	highestmodseq	INTEGER NOT NULL DEFAULT 0,	-- 0: no CONDSTORE
	watermark	INTEGER NOT NULL DEFAULT 0,	-- highest UID below the first gap
	last_sync	INTEGER NOT NULL DEFAULT 0	-- unix seconds; 0 never
);

CREATE TABLE messages (
	id		INTEGER PRIMARY KEY,
	folder_id	INTEGER NOT NULL REFERENCES folders(id) ON DELETE CASCADE,
	uidvalidity	INTEGER NOT NULL,
	uid		INTEGER NOT NULL,
	message_id	TEXT,				-- Message-ID without <>
	in_reply_to	TEXT,				-- without <>
	refs		TEXT,				-- References: space-separated ids, oldest first
	thread_id	INTEGER NOT NULL,		-- see thread_refs
	subject		TEXT,
	from_name	TEXT,
	from_addr	TEXT,
	from_text	TEXT,				-- 'Name <addr>' (or 'addr'): indexed by FTS
	recipients	TEXT,				-- To then Cc as 'Name <addr>, ...': indexed by FTS
	to_json		TEXT,				-- '[{"name":...,"addr":...},...]' or NULL
	cc_json		TEXT,				-- same shape, or NULL
	date		INTEGER,			-- Date header, unix seconds; NULL unknown
	internaldate	INTEGER,			-- IMAP INTERNALDATE; NULL unknown
	size		INTEGER NOT NULL DEFAULT 0,	-- RFC822.SIZE
	flags		INTEGER NOT NULL DEFAULT 0,	-- enum mb_flag bit mask
	keywords	TEXT,				-- other IMAP keywords, space-separated
	modseq		INTEGER NOT NULL DEFAULT 0,	-- 0 without CONDSTORE
	list_id		TEXT,
	body		TEXT NOT NULL DEFAULT '',	-- normalised plain text
	body_truncated	INTEGER NOT NULL DEFAULT 0,
	body_from_html	INTEGER NOT NULL DEFAULT 0,
	headers_only	INTEGER NOT NULL DEFAULT 0,	-- over the size cap: body not fetched
	attachment_count INTEGER NOT NULL DEFAULT 0,
	parse_error	TEXT,				-- NULL when the message parsed cleanly
	indexed_at	INTEGER NOT NULL,		-- unix seconds of the last upsert
	UNIQUE (folder_id, uidvalidity, uid)
);
CREATE INDEX messages_message_id ON messages(message_id);
CREATE INDEX messages_thread ON messages(thread_id);
CREATE INDEX messages_folder_date ON messages(folder_id, date);
CREATE INDEX messages_date ON messages(date);

CREATE TABLE attachments (
	id		INTEGER PRIMARY KEY,
	message_id	INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
	ordinal		INTEGER NOT NULL,		-- 0-based position in the message
	filename	TEXT,
	mime_type	TEXT NOT NULL,
	size		INTEGER NOT NULL DEFAULT 0,	-- decoded bytes
	content_id	TEXT,				-- without <>
	is_inline	INTEGER NOT NULL DEFAULT 0,
	sha256		TEXT,				-- hex; the blob's name under blobs/; NULL not stored
	extracted_text	TEXT,				-- NULL: not extracted
	UNIQUE (message_id, ordinal)
);
CREATE INDEX attachments_sha256 ON attachments(sha256);

-- Thread ids: every id a message names (its own Message-ID, In-Reply-To,
-- References) maps to the thread it belongs to, including ids of messages
-- that are not (yet) indexed, so two replies to a missing parent still join.
CREATE TABLE thread_refs (
	message_id	TEXT PRIMARY KEY,
	thread_id	INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX thread_refs_thread ON thread_refs(thread_id);

-- Every write a client asked for (invariant 7), whatever came of it.
CREATE TABLE write_log (
	id		INTEGER PRIMARY KEY,
	at		INTEGER NOT NULL,		-- unix seconds
	tool		TEXT NOT NULL,
	requested_by	TEXT,				-- the client's identity (JWT subject, ...)
	peer_uid	INTEGER,			-- SO_PEERCRED uid of the connection
	message_id	INTEGER,			-- messages.id at the time (no FK: the log outlives rows)
	folder		TEXT,
	uidvalidity	INTEGER,
	uid		INTEGER,
	arguments	TEXT,				-- JSON text
	outcome		TEXT NOT NULL CHECK (outcome IN ('pending', 'ok', 'refused', 'failed')),
	detail		TEXT
);
CREATE INDEX write_log_at ON write_log(at);

-- The durable queue of UID ranges to fetch.
CREATE TABLE work_queue (
	id		INTEGER PRIMARY KEY,
	folder_id	INTEGER NOT NULL REFERENCES folders(id) ON DELETE CASCADE,
	uidvalidity	INTEGER NOT NULL,
	first_uid	INTEGER NOT NULL,
	last_uid	INTEGER NOT NULL,
	attempts	INTEGER NOT NULL DEFAULT 0,
	not_before	INTEGER NOT NULL DEFAULT 0,	-- unix seconds: backoff
	last_error	TEXT,
	created_at	INTEGER NOT NULL,
	UNIQUE (folder_id, uidvalidity, first_uid, last_uid)
);
CREATE INDEX work_queue_ready ON work_queue(not_before);

-- Ranges that exhausted their retries (invariant 4).  No FK: a dead letter
-- outlives its folder, so it names the folder too.
CREATE TABLE dead_letters (
	id		INTEGER PRIMARY KEY,
	folder_id	INTEGER,
	folder_name	TEXT NOT NULL,
	uidvalidity	INTEGER NOT NULL,
	first_uid	INTEGER NOT NULL,
	last_uid	INTEGER NOT NULL,
	attempts	INTEGER NOT NULL,
	last_error	TEXT,
	failed_at	INTEGER NOT NULL
);

-- Full text: FTS5 over the messages table (external content: the text is
-- stored once, in messages).  mb_cjk is registered by mb_index_open(): it
-- segments CJK runs into bigrams and hands everything else to porter over
-- unicode61 (docs/index.md).  A connection without it cannot touch the FTS
-- table, so cannot insert messages either: always open through mb_index_open().
CREATE VIRTUAL TABLE messages_fts USING fts5(
	subject, from_text, recipients, body,
	content='messages', content_rowid='id',
	tokenize='mb_cjk porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
	INSERT INTO messages_fts(rowid, subject, from_text, recipients, body)
	VALUES (new.id, new.subject, new.from_text, new.recipients, new.body);
END;

CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
	INSERT INTO messages_fts(messages_fts, rowid, subject, from_text, recipients, body)
	VALUES ('delete', old.id, old.subject, old.from_text, old.recipients, old.body);
END;

-- Only when an indexed column really changed: flag updates (which do not name
-- these columns) never fire it, and a re-upsert of the same text skips it.
CREATE TRIGGER messages_fts_update AFTER UPDATE OF subject, from_text, recipients, body
ON messages
WHEN old.subject IS NOT new.subject OR old.from_text IS NOT new.from_text
    OR old.recipients IS NOT new.recipients OR old.body IS NOT new.body
BEGIN
	INSERT INTO messages_fts(messages_fts, rowid, subject, from_text, recipients, body)
	VALUES ('delete', old.id, old.subject, old.from_text, old.recipients, old.body);
	INSERT INTO messages_fts(rowid, subject, from_text, recipients, body)
	VALUES (new.id, new.subject, new.from_text, new.recipients, new.body);
END;
