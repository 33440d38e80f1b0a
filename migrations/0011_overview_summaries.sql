-- 0011_overview_summaries: summary rows for find_contacts, awaiting_reply
-- and count_messages without a query (docs/index.md "Overviews"), so that
-- each reads a few thousand rows instead of every message_addrs row, every
-- thread's messages or every message.
--
-- Both tables are kept per folder and UIDVALIDITY generation, never per
-- "current" state: whether a folder is listed or hidden, which generation is
-- current and which role a folder has are the folders table's, and change
-- without a message being written.  Readers join folders and test
-- IDX_CURRENT on these rows as they do on messages, so a hidden folder's
-- mail stops counting the moment the folder is hidden, whatever the rule for
-- hiding becomes.
--
-- What does depend on the account's own addresses (account_addresses: a
-- contact's "sent to", a thread's turn, and which addresses are contacts at
-- all) is computed when a row is written; mb_account_set_addresses() rebuilds
-- both tables from the views below when the set changes.
--
-- Written only by triggers: message_addrs' (0007) for the contacts, the
-- messages table's for the threads.  The writer's C code adds only the
-- rebuild and, before purging a generation or a folder, dropping that
-- generation's contact rows (a purge would otherwise recompute dates for
-- rows about to go).

-- One row per contact (an address that is not the account's) and folder
-- generation: messages received from them (they are the sender), sent to
-- them (from the account, naming them in To or Cc), messages naming them,
-- first and last date (sort_date; NULL when none of the messages has one).
CREATE TABLE contact_stats (
	addr		TEXT NOT NULL,
	folder_id	INTEGER NOT NULL,
	uidvalidity	INTEGER NOT NULL,
	received	INTEGER NOT NULL,
	sent		INTEGER NOT NULL,
	n		INTEGER NOT NULL,
	first_date	INTEGER,
	last_date	INTEGER,
	PRIMARY KEY (addr, folder_id, uidvalidity)
) WITHOUT ROWID;

-- The display names seen beside a contact's address, with how often.
CREATE TABLE contact_names (
	addr		TEXT NOT NULL,
	folder_id	INTEGER NOT NULL,
	uidvalidity	INTEGER NOT NULL,
	name		TEXT NOT NULL,
	n		INTEGER NOT NULL,
	PRIMARY KEY (addr, folder_id, uidvalidity, name)
) WITHOUT ROWID;

-- One row per thread and folder generation: its dated messages there, the
-- last of them (greatest sort_date) and whose turn that message makes it:
-- 1 it is from the account (waiting on others), 2 it is not, names one of
-- the account's addresses in To or Cc and is not \Answered (flag bit 2:
-- waiting on me), 0 neither.  A thread's last message overall is the last
-- of its rows whose folder is current and not drafts, trash or junk, which
-- the reader decides.
CREATE TABLE thread_stats (
	thread_id	INTEGER NOT NULL,
	folder_id	INTEGER NOT NULL,
	uidvalidity	INTEGER NOT NULL,
	n		INTEGER NOT NULL,
	last_msg	INTEGER NOT NULL,
	last_date	INTEGER NOT NULL,
	dir		INTEGER NOT NULL,
	PRIMARY KEY (thread_id, folder_id, uidvalidity)
) WITHOUT ROWID;
-- awaiting_reply walks one turn newest first and stops at a page.
CREATE INDEX thread_stats_turn ON thread_stats(dir, last_date, last_msg);

-- What the tables hold, from the per-message rows: the backfill below and
-- the rebuild after the account's addresses change, and (thread_stats_of,
-- filtered by its grouping columns, which SQLite pushes into the
-- aggregate) one thread's row in a folder generation for the triggers.
-- thread_stats_of names its index: left to itself the planner seeks the
-- folder generation on messages_overview and reads all of it for each
-- message written, which made a 100,000-message backfill quadratic;
-- messages_thread_last holds every column the aggregate reads.
CREATE VIEW contact_stats_of AS
SELECT addr, folder_id, uidvalidity, sum(role = 0), sum(role > 0 AND coalesce(sender IN
    (SELECT address FROM account_addresses), 0)), count(*), min(date), max(date)
FROM message_addrs WHERE addr NOT IN (SELECT address FROM account_addresses)
GROUP BY addr, folder_id, uidvalidity;

CREATE VIEW contact_names_of AS
SELECT addr, folder_id, uidvalidity, name, count(*) FROM message_addrs
WHERE name IS NOT NULL AND addr NOT IN (SELECT address FROM account_addresses)
GROUP BY addr, folder_id, uidvalidity, name;

CREATE VIEW thread_stats_of AS
SELECT g.thread_id AS thread_id, g.folder_id AS folder_id, g.uidvalidity AS uidvalidity,
    g.n AS n, g.last_msg AS last_msg, g.last_date AS last_date,
    CASE WHEN lower(m.from_addr) IN (SELECT address FROM account_addresses) THEN 1
    WHEN (m.flags & 2) = 0 AND EXISTS (SELECT 1 FROM account_addresses AS a WHERE
        instr(lower(coalesce(m.to_json, '') || coalesce(m.cc_json, '')),
        '"addr":"' || a.address || '"') > 0) THEN 2
    ELSE 0 END AS dir
FROM (SELECT thread_id, folder_id, uidvalidity, count(*) AS n, max(sort_date) AS last_date,
    id AS last_msg FROM messages INDEXED BY messages_thread_last WHERE sort_date IS NOT NULL
    GROUP BY thread_id, folder_id, uidvalidity) AS g
JOIN messages AS m ON m.id = g.last_msg;

-- Contacts follow message_addrs, which changes only by INSERT and DELETE
-- (0007's triggers rewrite a message's rows by deleting and inserting them).
-- A message without a From has a NULL sender, and NULL IN (...) is NULL:
-- hence the coalesce, without which the row would break the NOT NULL of
-- sent, and 0007's INSERT OR IGNORE, whose conflict rule reaches into
-- these statements, would drop the contact without a word.
CREATE TRIGGER contact_stats_insert AFTER INSERT ON message_addrs
WHEN new.addr NOT IN (SELECT address FROM account_addresses)
BEGIN
	INSERT INTO contact_stats (addr, folder_id, uidvalidity, received, sent, n, first_date,
	    last_date)
	VALUES (new.addr, new.folder_id, new.uidvalidity, new.role = 0,
	    new.role > 0 AND coalesce(new.sender IN (SELECT address FROM account_addresses), 0),
	    1, new.date, new.date)
	ON CONFLICT (addr, folder_id, uidvalidity) DO UPDATE SET
	    received = received + excluded.received, sent = sent + excluded.sent, n = n + 1,
	    first_date = CASE WHEN first_date IS NULL OR excluded.first_date < first_date
		THEN excluded.first_date ELSE first_date END,
	    last_date = CASE WHEN last_date IS NULL OR excluded.last_date > last_date
		THEN excluded.last_date ELSE last_date END;
	INSERT INTO contact_names (addr, folder_id, uidvalidity, name, n)
	SELECT new.addr, new.folder_id, new.uidvalidity, new.name, 1 WHERE new.name IS NOT NULL
	ON CONFLICT (addr, folder_id, uidvalidity, name) DO UPDATE SET n = n + 1;
END;

-- A deleted row that held a first or last date makes that date be read
-- again from the contact's remaining rows (a walk of its message_addrs
-- rows); any other delete is arithmetic.
CREATE TRIGGER contact_stats_delete AFTER DELETE ON message_addrs
WHEN old.addr NOT IN (SELECT address FROM account_addresses)
BEGIN
	UPDATE contact_stats SET received = received - (old.role = 0),
	    sent = sent - (old.role > 0 AND coalesce(old.sender IN
		(SELECT address FROM account_addresses), 0)),
	    n = n - 1,
	    first_date = CASE WHEN old.date <= first_date THEN (SELECT min(date) FROM message_addrs
		WHERE addr = old.addr AND folder_id = old.folder_id
		AND uidvalidity = old.uidvalidity) ELSE first_date END,
	    last_date = CASE WHEN old.date >= last_date THEN (SELECT max(date) FROM message_addrs
		WHERE addr = old.addr AND folder_id = old.folder_id
		AND uidvalidity = old.uidvalidity) ELSE last_date END
	WHERE addr = old.addr AND folder_id = old.folder_id AND uidvalidity = old.uidvalidity;
	DELETE FROM contact_stats WHERE addr = old.addr AND folder_id = old.folder_id
	    AND uidvalidity = old.uidvalidity AND n <= 0;
	UPDATE contact_names SET n = n - 1 WHERE addr = old.addr AND folder_id = old.folder_id
	    AND uidvalidity = old.uidvalidity AND name = old.name;
	DELETE FROM contact_names WHERE addr = old.addr AND folder_id = old.folder_id
	    AND uidvalidity = old.uidvalidity AND name = old.name AND n <= 0;
END;

-- Threads follow messages: a change recomputes the row of each thread and
-- folder generation it touches, from that group's messages (a thread's
-- rows in one folder are few; messages_thread_last finds them).
-- A new message is arithmetic: one more in its group, and the last when
-- it is later (ties: the greater id) than the group's last.  Its turn is
-- the same test as thread_stats_of's, on the new row.  Recomputing the
-- group here instead doubled the writer's CPU (docs/benchmarks.md).
CREATE TRIGGER thread_stats_insert AFTER INSERT ON messages WHEN new.sort_date IS NOT NULL
BEGIN
	INSERT INTO thread_stats (thread_id, folder_id, uidvalidity, n, last_msg, last_date, dir)
	SELECT new.thread_id, new.folder_id, new.uidvalidity, 1, new.id, new.sort_date,
	    CASE WHEN lower(new.from_addr) IN (SELECT address FROM account_addresses) THEN 1
	    WHEN (new.flags & 2) = 0 AND EXISTS (SELECT 1 FROM account_addresses AS a WHERE
		instr(lower(coalesce(new.to_json, '') || coalesce(new.cc_json, '')),
		'"addr":"' || a.address || '"') > 0) THEN 2
	    ELSE 0 END
	WHERE true
	ON CONFLICT (thread_id, folder_id, uidvalidity) DO UPDATE SET n = n + 1,
	    last_msg = CASE WHEN excluded.last_date > last_date OR (excluded.last_date = last_date
		AND excluded.last_msg > last_msg) THEN excluded.last_msg ELSE last_msg END,
	    dir = CASE WHEN excluded.last_date > last_date OR (excluded.last_date = last_date
		AND excluded.last_msg > last_msg) THEN excluded.dir ELSE dir END,
	    last_date = max(last_date, excluded.last_date);
END;

CREATE TRIGGER thread_stats_delete AFTER DELETE ON messages BEGIN
	DELETE FROM thread_stats WHERE thread_id = old.thread_id AND folder_id = old.folder_id
	    AND uidvalidity = old.uidvalidity;
	INSERT INTO thread_stats SELECT * FROM thread_stats_of WHERE thread_id = old.thread_id
	    AND folder_id = old.folder_id AND uidvalidity = old.uidvalidity;
END;

-- A re-upsert names every column; only a change of what a row holds
-- (a thread merge, a move, a flag, the date or the people) recomputes.
CREATE TRIGGER thread_stats_update AFTER UPDATE OF thread_id, folder_id, uidvalidity, date,
    internaldate, flags, from_addr, to_json, cc_json ON messages
WHEN old.thread_id IS NOT new.thread_id OR old.folder_id IS NOT new.folder_id
    OR old.uidvalidity IS NOT new.uidvalidity OR old.date IS NOT new.date
    OR old.internaldate IS NOT new.internaldate OR old.flags IS NOT new.flags
    OR old.from_addr IS NOT new.from_addr OR old.to_json IS NOT new.to_json
    OR old.cc_json IS NOT new.cc_json
BEGIN
	DELETE FROM thread_stats WHERE thread_id = old.thread_id AND folder_id = old.folder_id
	    AND uidvalidity = old.uidvalidity;
	INSERT INTO thread_stats SELECT * FROM thread_stats_of WHERE thread_id = old.thread_id
	    AND folder_id = old.folder_id AND uidvalidity = old.uidvalidity;
	DELETE FROM thread_stats WHERE thread_id = new.thread_id AND folder_id = new.folder_id
	    AND uidvalidity = new.uidvalidity;
	INSERT INTO thread_stats SELECT * FROM thread_stats_of WHERE thread_id = new.thread_id
	    AND folder_id = new.folder_id AND uidvalidity = new.uidvalidity;
END;

-- Counts of messages per folder generation by day, by sender and by
-- keywords (the whole keywords text: count_messages splits it into labels),
-- for count_messages without a query.  A day is sort_date's UTC day
-- (floor(sort_date / 86400)), -2147483648 for a message without a date; a
-- sender is the lower-cased From address, '' for none; keywords '' for none.
ALTER TABLE messages ADD COLUMN sort_day INTEGER GENERATED ALWAYS AS (
	CASE WHEN sort_date IS NULL THEN -2147483648 WHEN sort_date >= 0 THEN sort_date / 86400
	ELSE (sort_date - 86399) / 86400 END) VIRTUAL;
CREATE TABLE count_days (
	folder_id	INTEGER NOT NULL,
	uidvalidity	INTEGER NOT NULL,
	day		INTEGER NOT NULL,
	n		INTEGER NOT NULL,
	PRIMARY KEY (folder_id, uidvalidity, day)
) WITHOUT ROWID;
CREATE TABLE count_senders (
	folder_id	INTEGER NOT NULL,
	uidvalidity	INTEGER NOT NULL,
	sender		TEXT NOT NULL,
	n		INTEGER NOT NULL,
	PRIMARY KEY (folder_id, uidvalidity, sender)
) WITHOUT ROWID;
CREATE TABLE count_labels (
	folder_id	INTEGER NOT NULL,
	uidvalidity	INTEGER NOT NULL,
	keywords	TEXT NOT NULL,
	n		INTEGER NOT NULL,
	PRIMARY KEY (folder_id, uidvalidity, keywords)
) WITHOUT ROWID;

CREATE TRIGGER count_stats_insert AFTER INSERT ON messages BEGIN
	INSERT INTO count_days VALUES (new.folder_id, new.uidvalidity, new.sort_day, 1)
	    ON CONFLICT DO UPDATE SET n = n + 1;
	INSERT INTO count_senders VALUES (new.folder_id, new.uidvalidity,
	    lower(coalesce(new.from_addr, '')), 1) ON CONFLICT DO UPDATE SET n = n + 1;
	INSERT INTO count_labels VALUES (new.folder_id, new.uidvalidity,
	    coalesce(new.keywords, ''), 1) ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER count_stats_delete AFTER DELETE ON messages BEGIN
	UPDATE count_days SET n = n - 1 WHERE folder_id = old.folder_id
	    AND uidvalidity = old.uidvalidity AND day = old.sort_day;
	DELETE FROM count_days WHERE folder_id = old.folder_id AND uidvalidity = old.uidvalidity
	    AND day = old.sort_day AND n <= 0;
	UPDATE count_senders SET n = n - 1 WHERE folder_id = old.folder_id
	    AND uidvalidity = old.uidvalidity AND sender = lower(coalesce(old.from_addr, ''));
	DELETE FROM count_senders WHERE folder_id = old.folder_id
	    AND uidvalidity = old.uidvalidity AND sender = lower(coalesce(old.from_addr, ''))
	    AND n <= 0;
	UPDATE count_labels SET n = n - 1 WHERE folder_id = old.folder_id
	    AND uidvalidity = old.uidvalidity AND keywords = coalesce(old.keywords, '');
	DELETE FROM count_labels WHERE folder_id = old.folder_id
	    AND uidvalidity = old.uidvalidity AND keywords = coalesce(old.keywords, '') AND n <= 0;
END;

-- A change of what is counted: the old values out, the new in (a flag
-- update that changes only flags does not fire it).  Its statements repeat
-- the two triggers above: a trigger cannot call another.
CREATE TRIGGER count_stats_update AFTER UPDATE OF folder_id, uidvalidity, date, internaldate,
    from_addr, keywords ON messages
WHEN old.folder_id IS NOT new.folder_id OR old.uidvalidity IS NOT new.uidvalidity
    OR old.date IS NOT new.date OR old.internaldate IS NOT new.internaldate
    OR old.from_addr IS NOT new.from_addr OR old.keywords IS NOT new.keywords
BEGIN
	UPDATE count_days SET n = n - 1 WHERE folder_id = old.folder_id
	    AND uidvalidity = old.uidvalidity AND day = old.sort_day;
	DELETE FROM count_days WHERE folder_id = old.folder_id AND uidvalidity = old.uidvalidity
	    AND day = old.sort_day AND n <= 0;
	UPDATE count_senders SET n = n - 1 WHERE folder_id = old.folder_id
	    AND uidvalidity = old.uidvalidity AND sender = lower(coalesce(old.from_addr, ''));
	DELETE FROM count_senders WHERE folder_id = old.folder_id
	    AND uidvalidity = old.uidvalidity AND sender = lower(coalesce(old.from_addr, ''))
	    AND n <= 0;
	UPDATE count_labels SET n = n - 1 WHERE folder_id = old.folder_id
	    AND uidvalidity = old.uidvalidity AND keywords = coalesce(old.keywords, '');
	DELETE FROM count_labels WHERE folder_id = old.folder_id
	    AND uidvalidity = old.uidvalidity AND keywords = coalesce(old.keywords, '') AND n <= 0;
	INSERT INTO count_days VALUES (new.folder_id, new.uidvalidity, new.sort_day, 1)
	    ON CONFLICT DO UPDATE SET n = n + 1;
	INSERT INTO count_senders VALUES (new.folder_id, new.uidvalidity,
	    lower(coalesce(new.from_addr, '')), 1) ON CONFLICT DO UPDATE SET n = n + 1;
	INSERT INTO count_labels VALUES (new.folder_id, new.uidvalidity,
	    coalesce(new.keywords, ''), 1) ON CONFLICT DO UPDATE SET n = n + 1;
END;

-- The mail indexed before this migration.
INSERT INTO count_days SELECT folder_id, uidvalidity, sort_day, count(*) FROM messages
    GROUP BY folder_id, uidvalidity, sort_day;
INSERT INTO count_senders SELECT folder_id, uidvalidity, lower(coalesce(from_addr, '')),
    count(*) FROM messages GROUP BY 1, 2, 3;
INSERT INTO count_labels SELECT folder_id, uidvalidity, coalesce(keywords, ''), count(*)
    FROM messages GROUP BY 1, 2, 3;
INSERT INTO contact_stats SELECT * FROM contact_stats_of;
INSERT INTO contact_names SELECT * FROM contact_names_of;
INSERT INTO thread_stats SELECT * FROM thread_stats_of;
