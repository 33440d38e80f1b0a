-- 0029_unread_senders_labels: the unread messages of each folder generation
-- by sender and by keywords text, counted as they are written, for
-- count_messages of is:unread by sender, sender domain or label.
--
-- Those counts read every unread message (170–180 ms of CPU at 1,000,000
-- messages, a quarter of them unread; docs/benchmarks.md, "Unread mail
-- counted by sender and label from summaries"), where by folder or date
-- they read count_unread (migration 0028).  These two tables are to
-- count_senders and count_labels (migration 0011) what count_unread is to
-- count_days: the same keys (the lower-cased From address, '' none; the
-- keywords text, '' none), per folder and UIDVALIDITY generation, so that
-- the reader's test of a current row (IDX_CURRENT) and its grouping apply
-- unchanged.  Written only by the triggers below, as count_unread's are: a
-- message that is read costs the writer nothing on insert, an unread one
-- two upserts, and a flag change between read and unread two updates.
CREATE TABLE count_unread_senders (
	folder_id	INTEGER NOT NULL,
	uidvalidity	INTEGER NOT NULL,
	sender		TEXT NOT NULL,
	n		INTEGER NOT NULL,
	PRIMARY KEY (folder_id, uidvalidity, sender)
) WITHOUT ROWID;
CREATE TABLE count_unread_labels (
	folder_id	INTEGER NOT NULL,
	uidvalidity	INTEGER NOT NULL,
	keywords	TEXT NOT NULL,
	n		INTEGER NOT NULL,
	PRIMARY KEY (folder_id, uidvalidity, keywords)
) WITHOUT ROWID;

CREATE TRIGGER count_unread_people_insert AFTER INSERT ON messages WHEN (new.flags & 1) = 0
BEGIN
	INSERT INTO count_unread_senders VALUES (new.folder_id, new.uidvalidity,
	    lower(coalesce(new.from_addr, '')), 1) ON CONFLICT DO UPDATE SET n = n + 1;
	INSERT INTO count_unread_labels VALUES (new.folder_id, new.uidvalidity,
	    coalesce(new.keywords, ''), 1) ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER count_unread_people_delete AFTER DELETE ON messages WHEN (old.flags & 1) = 0
BEGIN
	UPDATE count_unread_senders SET n = n - 1 WHERE folder_id = old.folder_id
	    AND uidvalidity = old.uidvalidity AND sender = lower(coalesce(old.from_addr, ''));
	DELETE FROM count_unread_senders WHERE folder_id = old.folder_id
	    AND uidvalidity = old.uidvalidity AND sender = lower(coalesce(old.from_addr, ''))
	    AND n <= 0;
	UPDATE count_unread_labels SET n = n - 1 WHERE folder_id = old.folder_id
	    AND uidvalidity = old.uidvalidity AND keywords = coalesce(old.keywords, '');
	DELETE FROM count_unread_labels WHERE folder_id = old.folder_id
	    AND uidvalidity = old.uidvalidity AND keywords = coalesce(old.keywords, '') AND n <= 0;
END;

-- A message read or unread again, moved, given another generation, sender
-- or labels: out of the old rows when it was unread, into the new ones when
-- it is.  Its statements repeat the two triggers above: a trigger cannot
-- call another.
CREATE TRIGGER count_unread_people_update AFTER UPDATE OF flags, folder_id, uidvalidity,
    from_addr, keywords ON messages
WHEN ((old.flags & 1) = 0 OR (new.flags & 1) = 0) AND ((old.flags & 1) <> (new.flags & 1)
    OR old.folder_id IS NOT new.folder_id OR old.uidvalidity IS NOT new.uidvalidity
    OR old.from_addr IS NOT new.from_addr OR old.keywords IS NOT new.keywords)
BEGIN
	UPDATE count_unread_senders SET n = n - 1 WHERE (old.flags & 1) = 0
	    AND folder_id = old.folder_id AND uidvalidity = old.uidvalidity
	    AND sender = lower(coalesce(old.from_addr, ''));
	DELETE FROM count_unread_senders WHERE (old.flags & 1) = 0
	    AND folder_id = old.folder_id AND uidvalidity = old.uidvalidity
	    AND sender = lower(coalesce(old.from_addr, '')) AND n <= 0;
	UPDATE count_unread_labels SET n = n - 1 WHERE (old.flags & 1) = 0
	    AND folder_id = old.folder_id AND uidvalidity = old.uidvalidity
	    AND keywords = coalesce(old.keywords, '');
	DELETE FROM count_unread_labels WHERE (old.flags & 1) = 0
	    AND folder_id = old.folder_id AND uidvalidity = old.uidvalidity
	    AND keywords = coalesce(old.keywords, '') AND n <= 0;
	INSERT INTO count_unread_senders SELECT new.folder_id, new.uidvalidity,
	    lower(coalesce(new.from_addr, '')), 1 WHERE (new.flags & 1) = 0
	    ON CONFLICT DO UPDATE SET n = n + 1;
	INSERT INTO count_unread_labels SELECT new.folder_id, new.uidvalidity,
	    coalesce(new.keywords, ''), 1 WHERE (new.flags & 1) = 0
	    ON CONFLICT DO UPDATE SET n = n + 1;
END;

-- The mail indexed before this migration.
INSERT INTO count_unread_senders SELECT folder_id, uidvalidity, lower(coalesce(from_addr, '')),
    count(*) FROM messages WHERE (flags & 1) = 0 GROUP BY 1, 2, 3;
INSERT INTO count_unread_labels SELECT folder_id, uidvalidity, coalesce(keywords, ''), count(*)
    FROM messages WHERE (flags & 1) = 0 GROUP BY 1, 2, 3;
