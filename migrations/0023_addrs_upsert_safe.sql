-- 0023_addrs_upsert_safe: a message that names an address twice can be
-- stored again.
--
-- An address named twice in one message (its From in To as well, as a
-- reply-to-all has it; one address in To and Cc) is one row of
-- message_addrs, its first naming's (0007): the triggers wrote the rows
-- with INSERT OR IGNORE and let the second naming fall on the primary key.
-- But SQLite runs the triggers of an upsert's DO UPDATE (the stage's flush
-- into messages, libmailbox/core/index.c, when the folder, UIDVALIDITY and
-- UID are stored already) under that update's ABORT rule, which overrides a
-- trigger statement's own OR IGNORE: such a message stored again with other
-- recipients, date or folder failed with "UNIQUE constraint failed:
-- message_addrs.addr, message_addrs.msg", and its whole batch with it.  An
-- upsert clause in the trigger is the statement's own handling of that one
-- key, which no outer rule overrides.  Tested by
-- an_address_named_twice_survives_a_second_upsert (tests/unit/test_index.c).
DROP TRIGGER message_addrs_insert;
DROP TRIGGER message_addrs_update;

CREATE TRIGGER message_addrs_insert AFTER INSERT ON messages BEGIN
	INSERT INTO message_addrs SELECT * FROM message_addrs_of WHERE msg = new.id
	    ON CONFLICT (addr, msg) DO NOTHING;
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
	INSERT INTO message_addrs SELECT * FROM message_addrs_of WHERE msg = new.id
	    ON CONFLICT (addr, msg) DO NOTHING;
END;
