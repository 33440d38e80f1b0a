-- 0028_folder_unread: the unread messages of each folder generation and
-- day, counted as they are written, for list_folders and count_messages.
--
-- list_folders answered each folder's messages and unread ones by joining
-- every message of every folder: at 1,000,000 messages 725 ms of CPU, for
-- the tool a model usually calls first (docs/benchmarks.md, "list_folders
-- from the summaries"), and count_messages of is:unread read every unread
-- message.  The messages are counted already, by day (count_days,
-- migration 0011); the unread ones (no \Seen, flag bit 1) are counted here
-- the same way, per folder, UIDVALIDITY generation and day (sort_day), so
-- that the reader's test of a current row (IDX_CURRENT) and its grouping of
-- days apply to them unchanged.  Written only by the triggers below: a
-- message that is read costs the writer nothing on insert, an unread one an
-- upsert, and a flag change between read and unread one update.
CREATE TABLE count_unread (
	folder_id	INTEGER NOT NULL,
	uidvalidity	INTEGER NOT NULL,
	day		INTEGER NOT NULL,
	n		INTEGER NOT NULL,
	PRIMARY KEY (folder_id, uidvalidity, day)
) WITHOUT ROWID;

CREATE TRIGGER count_unread_insert AFTER INSERT ON messages WHEN (new.flags & 1) = 0 BEGIN
	INSERT INTO count_unread VALUES (new.folder_id, new.uidvalidity, new.sort_day, 1)
	    ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER count_unread_delete AFTER DELETE ON messages WHEN (old.flags & 1) = 0 BEGIN
	UPDATE count_unread SET n = n - 1 WHERE folder_id = old.folder_id
	    AND uidvalidity = old.uidvalidity AND day = old.sort_day;
	DELETE FROM count_unread WHERE folder_id = old.folder_id
	    AND uidvalidity = old.uidvalidity AND day = old.sort_day AND n <= 0;
END;

-- A message read or unread again, moved, given another generation or
-- another date: out of the old row when it was unread, into the new one
-- when it is.
CREATE TRIGGER count_unread_update AFTER UPDATE OF flags, folder_id, uidvalidity, date,
    internaldate ON messages
WHEN ((old.flags & 1) = 0 OR (new.flags & 1) = 0) AND ((old.flags & 1) <> (new.flags & 1)
    OR old.folder_id IS NOT new.folder_id OR old.uidvalidity IS NOT new.uidvalidity
    OR old.sort_day IS NOT new.sort_day)
BEGIN
	UPDATE count_unread SET n = n - 1 WHERE (old.flags & 1) = 0
	    AND folder_id = old.folder_id AND uidvalidity = old.uidvalidity
	    AND day = old.sort_day;
	DELETE FROM count_unread WHERE (old.flags & 1) = 0
	    AND folder_id = old.folder_id AND uidvalidity = old.uidvalidity
	    AND day = old.sort_day AND n <= 0;
	INSERT INTO count_unread SELECT new.folder_id, new.uidvalidity, new.sort_day, 1
	    WHERE (new.flags & 1) = 0 ON CONFLICT DO UPDATE SET n = n + 1;
END;

INSERT INTO count_unread SELECT folder_id, uidvalidity, sort_day, count(*) FROM messages
    WHERE (flags & 1) = 0 GROUP BY folder_id, uidvalidity, sort_day;
