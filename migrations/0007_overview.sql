-- 0007_overview: what the overview tools read (count_messages, find_contacts,
-- awaiting_reply; docs/index.md "Overviews").  Nothing here is written by C
-- code: the index below is SQLite's, and message_addrs follows messages
-- through triggers, so the writer is unchanged.
--
-- messages_overview: the columns a count groups or filters by (the query's
-- filters too: flags, attachments, size) beside the row's key, so that
-- counting by folder, date, sender or label reads the index alone and never
-- the table's pages, which hold the bodies.
CREATE INDEX messages_overview ON messages(folder_id, uidvalidity, sort_date, from_addr, keywords,
    flags, attachment_count, size);

-- messages_thread_last: a thread's newest message and who sent it, for
-- awaiting_reply, without reading the table.
CREATE INDEX messages_thread_last ON messages(thread_id, sort_date, folder_id, uidvalidity, from_addr,
    flags);

-- One row per address a message names: its sender (role 0), each To (1) and
-- each Cc (2) address, lower-cased, with the name shown beside it; an
-- address named twice keeps its first role (From, then To, then Cc), so
-- counting a contact's messages is counting rows.  sender,
-- date, folder_id and uidvalidity are copies of the message's, so a contact's
-- counts and dates come from this table alone, ordered by address.
CREATE TABLE message_addrs (
	addr		TEXT NOT NULL,			-- lower-cased address
	msg		INTEGER NOT NULL,		-- messages.id (no FK: triggers keep it)
	role		INTEGER NOT NULL,		-- 0 From, 1 To, 2 Cc
	name		TEXT,				-- the display name, or NULL
	sender		TEXT,				-- the message's From address, lower-cased
	date		INTEGER,			-- the message's sort_date (0004)
	folder_id	INTEGER NOT NULL,
	uidvalidity	INTEGER NOT NULL,
	PRIMARY KEY (addr, msg)
) WITHOUT ROWID;
CREATE INDEX message_addrs_msg ON message_addrs(msg);

-- The rows of message_addrs as the messages table implies them: one
-- definition for the triggers and for the mail indexed before this
-- migration.  "WHERE msg = ?" reaches each arm, so a trigger reads its row only.
CREATE VIEW message_addrs_of AS
SELECT lower(m.from_addr) AS addr, m.id AS msg, 0 AS role, nullif(m.from_name, '') AS name,
    lower(m.from_addr) AS sender, m.sort_date AS date, m.folder_id AS folder_id,
    m.uidvalidity AS uidvalidity
FROM messages AS m WHERE coalesce(m.from_addr, '') <> ''
UNION ALL
SELECT lower(json_extract(j.value, '$.addr')), m.id, 1, nullif(json_extract(j.value, '$.name'), ''),
    lower(m.from_addr), m.sort_date, m.folder_id, m.uidvalidity
FROM messages AS m, json_each(CASE WHEN json_valid(m.to_json) THEN m.to_json ELSE '[]' END) AS j
WHERE coalesce(json_extract(j.value, '$.addr'), '') <> ''
UNION ALL
SELECT lower(json_extract(j.value, '$.addr')), m.id, 2, nullif(json_extract(j.value, '$.name'), ''),
    lower(m.from_addr), m.sort_date, m.folder_id, m.uidvalidity
FROM messages AS m, json_each(CASE WHEN json_valid(m.cc_json) THEN m.cc_json ELSE '[]' END) AS j
WHERE coalesce(json_extract(j.value, '$.addr'), '') <> '';

CREATE TRIGGER message_addrs_insert AFTER INSERT ON messages BEGIN
	INSERT OR IGNORE INTO message_addrs SELECT * FROM message_addrs_of WHERE msg = new.id;
END;

CREATE TRIGGER message_addrs_delete AFTER DELETE ON messages BEGIN
	DELETE FROM message_addrs WHERE msg = old.id;
END;

-- A re-upsert names every column; only a real change rewrites the rows.
CREATE TRIGGER message_addrs_update AFTER UPDATE OF from_addr, from_name, to_json, cc_json, date,
    internaldate, folder_id, uidvalidity ON messages
WHEN old.from_addr IS NOT new.from_addr OR old.from_name IS NOT new.from_name
    OR old.to_json IS NOT new.to_json OR old.cc_json IS NOT new.cc_json
    OR old.date IS NOT new.date OR old.internaldate IS NOT new.internaldate
    OR old.folder_id IS NOT new.folder_id
    OR old.uidvalidity IS NOT new.uidvalidity
BEGIN
	DELETE FROM message_addrs WHERE msg = old.id;
	INSERT OR IGNORE INTO message_addrs SELECT * FROM message_addrs_of WHERE msg = new.id;
END;

-- The mail indexed before this migration.
INSERT OR IGNORE INTO message_addrs SELECT * FROM message_addrs_of;
