-- 0028_folder_unread: each folder generation's unread messages, counted as
-- they are written, for list_folders.
--
-- list_folders answered each folder's messages and unread ones by joining
-- every message of every folder: at 1,000,000 messages 725 ms of CPU, for
-- the tool a model usually calls first (docs/benchmarks.md, "list_folders
-- from the summaries").  The messages are counted already, by day
-- (count_days, migration 0011); the unread ones (no \Seen, flag bit 1) are
-- counted here, per folder and UIDVALIDITY generation as 0011's tables are,
-- so that the reader's test of a current row (IDX_CURRENT) applies to them
-- unchanged.  Written only by the triggers below; a message that is read
-- costs the writer nothing on insert, an unread one an upsert, and a flag
-- change between read and unread one update.
CREATE TABLE count_unread (
	folder_id	INTEGER NOT NULL,
	uidvalidity	INTEGER NOT NULL,
	n		INTEGER NOT NULL,
	PRIMARY KEY (folder_id, uidvalidity)
) WITHOUT ROWID;

CREATE TRIGGER count_unread_insert AFTER INSERT ON messages WHEN (new.flags & 1) = 0 BEGIN
	INSERT INTO count_unread VALUES (new.folder_id, new.uidvalidity, 1)
	    ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER count_unread_delete AFTER DELETE ON messages WHEN (old.flags & 1) = 0 BEGIN
	UPDATE count_unread SET n = n - 1
	    WHERE folder_id = old.folder_id AND uidvalidity = old.uidvalidity;
	DELETE FROM count_unread
	    WHERE folder_id = old.folder_id AND uidvalidity = old.uidvalidity AND n <= 0;
END;

-- A message read or unread again, moved, or given another generation: out
-- of the old row when it was unread, into the new one when it is.
CREATE TRIGGER count_unread_update AFTER UPDATE OF flags, folder_id, uidvalidity ON messages
WHEN ((old.flags & 1) = 0 OR (new.flags & 1) = 0) AND ((old.flags & 1) <> (new.flags & 1)
    OR old.folder_id IS NOT new.folder_id OR old.uidvalidity IS NOT new.uidvalidity)
BEGIN
	UPDATE count_unread SET n = n - 1 WHERE (old.flags & 1) = 0
	    AND folder_id = old.folder_id AND uidvalidity = old.uidvalidity;
	DELETE FROM count_unread WHERE (old.flags & 1) = 0
	    AND folder_id = old.folder_id AND uidvalidity = old.uidvalidity AND n <= 0;
	INSERT INTO count_unread SELECT new.folder_id, new.uidvalidity, 1
	    WHERE (new.flags & 1) = 0 ON CONFLICT DO UPDATE SET n = n + 1;
END;

INSERT INTO count_unread SELECT folder_id, uidvalidity, count(*) FROM messages
    WHERE (flags & 1) = 0 GROUP BY folder_id, uidvalidity;
