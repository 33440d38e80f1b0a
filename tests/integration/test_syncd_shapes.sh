#!/usr/bin/env bash
# Only what is in the mailbox now is served (docs/syncd.md "When the mailbox
# changes shape"), against a real Dovecot, through real mcpd and the MCP SDK
# client, after each shape change and a tick:
#   a UIDVALIDITY change (Sent's dovecot-uidlist deleted): search_messages
#     has each message once, list_folders counts the server's messages,
#     get_message on an old id names the current copy, and the next tick
#     (the new generation converged) purges the old rows;
#   a folder deleted upstream ("Ärchiv"): gone from list_folders at once, a
#     folder: search says there is no such folder, get_message says "no
#     longer in the mailbox", and the rows are purged after 3 absent ticks;
#   a folder deleted and re-created with new mail ("Proj"): only the new
#     mail is counted and searched; an old id of a re-sent message names
#     its current copy;
#   a folder renamed ("Notes" -> "Memos"): served under the new name only;
#   a LIST that misses a folder once ("Keep" renamed away and back): hidden
#     for that tick, then served again with the same ids, nothing purged;
#   writes on such ids are refused with the folder's decoded name ("Dröp"), also when
#     the folder vanished after the last tick (the server's NO answer);
#   a folder left out of SYNC_FOLDERS ("Memos", still listed): hidden at the
#     next tick, served again with the same ids when put back, purged after
#     3 ticks left out and indexed again from the server once put back.
set -euo pipefail
src=${MB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
MB_BUILD_DIR=${MB_BUILD_DIR:-$src/build}
. "$src/tests/lib/dovecot.sh"
. "$src/tests/lib/syncd.sh"
. "$src/tests/lib/testenv.sh"
. "$src/tests/lib/mcp_batch.sh"

testenv_begin daemon:TERM mcpd:TERM
chmod 755 "$work"

mkdir "$work/srv"
dovecot_start "$work/srv"
python3 "$src/tests/lib/mkmail.py" "$work/inbox:3:in" "$work/sent:4:sent" "$work/arch:3:arch" \
    "$work/proj:3:proj" "$work/notes:2:note" "$work/keep:2:keep" "$work/gone:2:gone" \
    "$work/drop:1:drop"
dovecot_load_maildir INBOX "$work"/inbox/*.eml
dovecot_load_maildir Sent "$work"/sent/*.eml
dovecot_load_maildir Ärchiv "$work"/arch/*.eml
dovecot_load_maildir Proj "$work"/proj/*.eml
dovecot_load_maildir Notes "$work"/notes/*.eml
dovecot_load_maildir Keep "$work"/keep/*.eml
dovecot_load_maildir Gönë "$work"/gone/*.eml
dovecot_load_maildir Dröp "$work"/drop/*.eml
sock=$work/syncd.sock
syncd_init "$work" SYNCD_SOCKET="$sock" SYNCD_ALLOWED_UIDS=0 SYNC_INTERVAL=3600
syncd --backfill > /dev/null || fail "backfill exit $?"

rm -f "$work/port"
env MCP_AUTH=none MCP_LISTEN=127.0.0.1:0 MCP_INDEX="$SYNCD_DATA/index.db" MCP_PORT_FILE="$work/port" \
    SYNCD_SOCKET="$sock" MCP_RATE_LIMIT=1000 "$MB_BUILD_DIR/mcpd" 2>>"$work/mcpd.log" &
mcpd=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
url=http://127.0.0.1:$(cat "$work/port")/mcp
jq_() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))" "$1"; }
idx() { syncd_sql "$1"; }
id_of() {	# folder uid -> messages.id (the current generation)
	idx "SELECT m.id FROM messages m JOIN folders f ON f.id=m.folder_id WHERE f.name='$1'
	    AND m.uid=$2 AND m.uidvalidity=f.uidvalidity"
}
# Each state is asked in one SDK session (mcp_batch); these read its answers.
# folder_count FILE NAME: the count of list_folders' answer in FILE for NAME
# ("none" when not listed)
folder_count() {
	jq_ "str(([f['messages'] for f in d['structuredContent']['folders'] if f['name']=='$2'] or ['none'])[0])" < "$work/$1.json"
}
# hits FILE: the subject of every search_messages hit in FILE, sorted, one a line
hits() {
	jq_ "'\n'.join(sorted(h['subject'] for h in d['structuredContent']['results']))" < "$work/$1.json"
}
text_of() { jq_ 'd["text"]' < "$work/$1.json"; }

mcp_batch "$url" <<< "folders list_folders"
[ "$(folder_count folders Sent)" = 4 ] || fail "before: Sent counts $(folder_count folders Sent)"
sent_old=$(id_of Sent 2)
arch_old=$(id_of Ärchiv 1)
proj_old=$(id_of Proj 1)
note_old=$(id_of Notes 1)
keep_ids=$(idx "SELECT group_concat(m.id) FROM messages m JOIN folders f ON f.id=m.folder_id WHERE f.name='Keep'")

# ---- the shape changes, all before one tick
sent_path=$(dovecot_doveadm mailbox path -u "$DOVECOT_USER" Sent)
uidv_before=$(dovecot_status Sent uidvalidity)
rm -f "$sent_path/dovecot-uidlist"
rm -rf "$(dovecot_doveadm mailbox path -u "$DOVECOT_USER" -t index Sent)"/dovecot.index* 2>/dev/null || true
dovecot_doveadm force-resync -u "$DOVECOT_USER" Sent
uidv_after=$(dovecot_status Sent uidvalidity)
[ "$uidv_before" != "$uidv_after" ] || fail "Dovecot kept Sent's UIDVALIDITY ($uidv_before)"
dovecot_doveadm mailbox delete -u "$DOVECOT_USER" -r Ärchiv
dovecot_recreate_folder Proj
# proj-1 comes back (the user re-filed it), proj-9 is new
sed 's/proj message 1$/proj message 1/' "$work/proj/proj00001.eml" > "$work/p1.eml"
sed 's/proj-1@/proj-9@/; s/proj message 1$/proj message 9/' "$work/proj/proj00001.eml" > "$work/p9.eml"
dovecot_append Proj "$work/p1.eml"
dovecot_append Proj "$work/p9.eml"
dovecot_doveadm mailbox rename -u "$DOVECOT_USER" Notes Memos
dovecot_doveadm mailbox rename -u "$DOVECOT_USER" Keep KeepAway

syncd --once || fail "tick 1 exit $?"
sent_new=$(idx "SELECT m.id FROM messages m JOIN folders f ON f.id=m.folder_id WHERE f.name='Sent'
    AND m.uidvalidity=f.uidvalidity AND m.message_id='sent-2@mkmail.test'")
proj_new=$(id_of Proj 1)
proj_gone=$(idx "SELECT m.id FROM messages m WHERE m.message_id='proj-2@mkmail.test'")
memo_new=$(id_of Memos 1)
mcp_batch "$url" <<EOF
folders list_folders
sent_fox search_messages {"query":"fox","folder":"Sent","limit":50}
sent_hits search_messages {"query":"sent","limit":50}
sent_filter search_messages {"folder":"Sent","limit":50}
sent_old get_message {"id":$sent_old}
sent_thread get_thread {"id":$sent_old}
arch_folder search_messages {"query":"fox","folder":"Ärchiv"}
arch_hits search_messages {"query":"arch","limit":50}
arch_old get_message {"id":$arch_old}
proj_hits search_messages {"query":"proj","limit":50}
proj_old get_message {"id":$proj_old}
proj_gone get_message {"id":$proj_gone}
note_hits search_messages {"query":"note","limit":50}
note_old get_message {"id":$note_old}
EOF

# Sent: one generation served, and counted as the server has it.
[ "$(hits sent_fox | wc -l)" = 4 ] ||
    fail "Sent search after the UIDVALIDITY change: $(hits sent_fox)"
[ "$(hits sent_hits | sort | uniq -d)" = "" ] || fail "a Sent message is served twice"
[ "$(hits sent_filter | wc -l)" = 4 ] || fail "Sent filter-only search: not 4 hits"
[ "$(folder_count folders Sent)" = 4 ] || fail "list_folders counts Sent as $(folder_count folders Sent)"
[ "$(jq_ 'd["isError"]' < "$work/sent_old.json")" = True ] || fail "get_message serves the old generation"
text_of sent_old | grep -q "this folder was re-created on the server; the current copy is id $sent_new" ||
    fail "get_message old Sent id: $(text_of sent_old)"
text_of sent_thread | grep -q "current copy is id $sent_new" ||
    fail "get_thread on the old id does not name the current copy"

# Ärchiv: hidden at once.
[ "$(folder_count folders Ärchiv)" = none ] || fail "the deleted folder is still listed"
text_of arch_folder | grep -q 'no folder named' ||
    fail "a folder: search of the deleted folder answers"
[ "$(hits arch_hits)" = "" ] || fail "mail of the deleted folder is searchable"
text_of arch_old | grep -q "no longer in the mailbox (folder 'Ärchiv' is no longer on the server)" ||
    fail "get_message on a deleted folder's id: $(text_of arch_old)"

# Proj: only the new generation; the re-filed message points at its copy.
[ "$(folder_count folders Proj)" = 2 ] || fail "list_folders counts Proj as $(folder_count folders Proj)"
[ "$(hits proj_hits)" = "$(printf 'proj message 1\nproj message 9')" ] ||
    fail "Proj search: $(hits proj_hits)"
text_of proj_old | grep -q "current copy is id $proj_new" ||
    fail "get_message on re-created Proj's old id"
text_of proj_gone | grep -q "no longer in the mailbox (folder 'Proj' was re-created on the server)" ||
    fail "get_message on a message the re-created folder lacks"

# Notes -> Memos: the new name only; the old id names the copy in Memos.
[ "$(folder_count folders Notes)" = none ] || fail "the renamed folder is still listed under its old name"
[ "$(folder_count folders Memos)" = 2 ] || fail "Memos counts $(folder_count folders Memos)"
[ "$(hits note_hits | wc -l)" = 2 ] || fail "a renamed folder's mail is served twice"
text_of note_old | grep -q "its folder is no longer on the server (deleted or renamed); the current copy is id $memo_new" ||
    fail "get_message on the renamed folder's old id"

# Keep: missed by this LIST (it is KeepAway now): hidden, not purged.
[ "$(folder_count folders Keep)" = none ] || fail "a folder LIST missed is still listed"
[ "$(idx "SELECT absent_ticks FROM folders WHERE name='Keep'")" = 1 ] || fail "Keep: absent_ticks"
dovecot_doveadm mailbox rename -u "$DOVECOT_USER" KeepAway Keep
drop_id=$(id_of Dröp 1)
dovecot_doveadm mailbox delete -u "$DOVECOT_USER" -r Dröp

syncd --once || fail "tick 2 exit $?"
mcp_batch "$url" <<EOF
sent_hits search_messages {"query":"sent","limit":50}
sent_old get_message {"id":$sent_old}
folders list_folders
EOF
# Sent's new generation has converged: the old rows are gone.
[ "$(idx "SELECT count(*) FROM messages m JOIN folders f ON f.id=m.folder_id WHERE f.name='Sent'
    AND m.uidvalidity != f.uidvalidity")" = 0 ] || fail "Sent's old generation was not purged"
grep -q "folder 'Sent': uidvalidity $uidv_after has converged; purged 4 messages" "$SYNCD_LOG" ||
    fail "no purge line for Sent"
# FTS5 keeps one docsize row per indexed row (plain SQL: no tokenizer needed).
[ "$(idx "SELECT count(*) FROM messages_fts_docsize")" = "$(idx "SELECT count(*) FROM messages")" ] ||
    fail "FTS still holds the purged rows"
[ "$(hits sent_hits | wc -l)" = 4 ] || fail "Sent search after the purge"
text_of sent_old | grep -q "no message with id $sent_old" ||
    fail "a purged id is not plainly unknown"
# Keep is back, same ids, nothing fetched again.
[ "$(folder_count folders Keep)" = 2 ] || fail "Keep is not served again"
[ "$(idx "SELECT group_concat(m.id) FROM messages m JOIN folders f ON f.id=m.folder_id WHERE f.name='Keep'")" = "$keep_ids" ] ||
    fail "Keep's rows changed"
grep -q "folder 'Keep': listed again" "$SYNCD_LOG" || fail "no 'listed again' line"
# Ärchiv is kept (hidden) until its third absent tick.
[ "$(idx "SELECT count(*) FROM messages m JOIN folders f ON f.id=m.folder_id WHERE f.name='Ärchiv'")" = 3 ] ||
    fail "Ärchiv purged before its third absent tick"

# ---- writes on such ids, through the daemon (its first tick is absent tick 3)
echo "=== syncd daemon" >> "$SYNCD_LOG"
"$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" 2>>"$SYNCD_LOG" &
daemon=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || fail "no control socket"
for _ in $(seq 100); do
	[ "$(idx "SELECT count(*) FROM folders WHERE name='Ärchiv'")" = 0 ] && break
	sleep 0.1
done
[ "$(idx "SELECT count(*) FROM folders WHERE name='Ärchiv'")" = 0 ] || fail "Ärchiv not purged on its third absent tick"
[ "$(idx "SELECT count(*) FROM messages WHERE message_id LIKE 'arch-%'")" = 0 ] || fail "Ärchiv's rows survive the purge"
grep -q "folder 'Ärchiv': absent for 3 ticks; purged with its 3 indexed messages" "$SYNCD_LOG" ||
    fail "no purge line for Ärchiv"

# A hidden folder's id (absent for 2 ticks): refused before any IMAP, named.
mcp_batch "$url" <<< "r flag_message {\"id\":$drop_id,\"add\":[\"\\\\Flagged\"]}"
[ "$(jq_ 'd["structuredContent"]["outcome"]' < "$work/r.json")" = refused ] || fail "write on a deleted folder's id: $(cat "$work/r.json")"
grep -q "folder 'Dröp' is no longer on the server" "$work/r.json" || fail "refusal: $(cat "$work/r.json")"
# Notes went with Ärchiv (absent since tick 1); its id is now plainly unknown.
[ "$(idx "SELECT count(*) FROM folders WHERE name='Notes'")" = 0 ] || fail "Notes not purged"
# A folder deleted after the last tick: the server says NO; refused, name decoded.
gone_id=$(id_of Gönë 1)
dovecot_doveadm mailbox delete -u "$DOVECOT_USER" -r Gönë
mcp_batch "$url" <<< "r flag_message {\"id\":$gone_id,\"add\":[\"\\\\Flagged\"]}"
[ "$(jq_ 'd["structuredContent"]["outcome"]' < "$work/r.json")" = refused ] || fail "write on a just-deleted folder: $(cat "$work/r.json")"
grep -q "folder 'Gönë' no longer exists on the server" "$work/r.json" || fail "refusal: $(cat "$work/r.json")"
grep -q '??' "$work/r.json" && fail "question marks in the refusal"
[ "$(idx "SELECT outcome||' '||detail FROM write_log ORDER BY id DESC LIMIT 1")" = "refused folder 'Gönë' no longer exists on the server (deleted or renamed); nothing was changed; search again" ] ||
    fail "write_log: $(idx "SELECT outcome||' '||detail FROM write_log ORDER BY id DESC LIMIT 1")"

# ---- a folder left out of SYNC_FOLDERS (the server still lists it): hidden
# at the next tick like a vanished one, purged after the same 3 ticks, and
# served again once it is put back.
kill -TERM "$daemon"
wait "$daemon" || fail "daemon exit $?"
daemon=
memo_ids=$(idx "SELECT group_concat(m.id) FROM messages m JOIN folders f ON f.id=m.folder_id WHERE f.name='Memos'")
mcp_batch "$url" <<< "folders list_folders"
[ "$(folder_count folders Memos)" = 2 ] || fail "Memos before: $(folder_count folders Memos)"
echo "SYNC_FOLDERS=INBOX, Sent, Proj, Keep" >> "$SYNCD_CONF"
syncd --once || fail "tick without Memos exit $?"
mcp_batch "$url" <<EOF
folders list_folders
note_hits search_messages {"query":"note","limit":50}
memo_folder search_messages {"query":"note","folder":"Memos"}
memo_old get_message {"id":${memo_ids%%,*}}
EOF
[ "$(folder_count folders Memos)" = none ] || fail "a folder left out of SYNC_FOLDERS is still listed"
[ "$(hits note_hits)" = "" ] || fail "mail of a folder left out of SYNC_FOLDERS is searchable"
text_of memo_folder | grep -q 'no folder named' ||
    fail "a folder: search of a folder left out of SYNC_FOLDERS answers"
text_of memo_old | grep -q "no longer in the mailbox (folder 'Memos' is no longer synced" ||
    fail "get_message on a left-out folder's id: $(text_of memo_old)"
grep -q "folder 'Memos': no longer in SYNC_FOLDERS; hidden, and purged if still left out after 3 ticks" "$SYNCD_LOG" ||
    fail "no line for the folder left out"
# A write on a left-out folder's id, through the daemon: refused, and why.
rm -f "$sock"
echo "=== syncd daemon" >> "$SYNCD_LOG"
"$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" 2>>"$SYNCD_LOG" &
daemon=$!
until_ok '[ -S "$sock" ]' || fail "no control socket"
mcp_batch "$url" <<< "r flag_message {\"id\":${memo_ids%%,*},\"add\":[\"\\\\Flagged\"]}"
[ "$(jq_ 'd["structuredContent"]["outcome"]' < "$work/r.json")" = refused ] ||
    fail "write on a left-out folder's id: $(cat "$work/r.json")"
grep -q "folder 'Memos' is no longer synced (left out of SYNC_FOLDERS)" "$work/r.json" ||
    fail "refusal: $(cat "$work/r.json")"
kill -TERM "$daemon"
wait "$daemon" || fail "daemon exit $?"
daemon=
mcp_batch "$url" <<< "folders list_folders"
[ "$(folder_count folders INBOX)" = 3 ] || fail "INBOX: $(folder_count folders INBOX)"
# Put back before the purge: served again with the same ids, nothing fetched.
sed -i '/^SYNC_FOLDERS=/d' "$SYNCD_CONF"
fetches=$(dovecot_count_commands ' BODY.PEEK\[\]')
syncd --once || fail "tick with Memos again exit $?"
mcp_batch "$url" <<EOF
folders list_folders
note_hits search_messages {"query":"note","limit":50}
EOF
[ "$(folder_count folders Memos)" = 2 ] || fail "Memos not served again: $(folder_count folders Memos)"
[ "$(idx "SELECT group_concat(m.id) FROM messages m JOIN folders f ON f.id=m.folder_id WHERE f.name='Memos'")" = "$memo_ids" ] ||
    fail "Memos' rows changed"
[ "$(dovecot_count_commands ' BODY.PEEK\[\]')" = "$fetches" ] || fail "Memos fetched again"
[ "$(hits note_hits | wc -l)" = 2 ] || fail "Memos search after it was put back"
# Left out for 3 ticks: purged; put back: indexed again from the server.
echo "SYNC_FOLDERS=INBOX,Sent,Proj,Keep" >> "$SYNCD_CONF"
for t in 1 2 3; do syncd --once || fail "left-out tick $t exit $?"; done
[ "$(idx "SELECT count(*) FROM folders WHERE name='Memos'")" = 0 ] || fail "Memos not purged after 3 ticks"
[ "$(idx "SELECT count(*) FROM messages WHERE message_id LIKE 'note-%'")" = 0 ] || fail "Memos' rows survive the purge"
grep -q "folder 'Memos': left out of SYNC_FOLDERS for 3 ticks; purged with its 2 indexed messages" "$SYNCD_LOG" ||
    fail "no purge line for Memos"
[ "$(idx "SELECT count(*) FROM messages m JOIN folders f ON f.id=m.folder_id WHERE f.name='INBOX'")" = 3 ] ||
    fail "INBOX touched by the purge"
sed -i '/^SYNC_FOLDERS=/d' "$SYNCD_CONF"
syncd --once || fail "re-sync of Memos exit $?"
mcp_batch "$url" <<EOF
folders list_folders
note_hits search_messages {"query":"note","limit":50}
EOF
[ "$(folder_count folders Memos)" = 2 ] || fail "Memos not re-indexed: $(folder_count folders Memos)"
[ "$(hits note_hits | wc -l)" = 2 ] || fail "Memos search after the re-sync"

syncd_log_clean || fail "sanitizer"
ok=1
echo "PASS: test_syncd_shapes"
