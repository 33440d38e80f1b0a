#!/usr/bin/env bash
# Writes are checked, and their answers scrubbed (docs/writes.md), through
# real mcpd, the MCP SDK client and a syncd daemon:
#   real Dovecot: move_message refuses a \Junk-role destination, a Spam name,
#     the \Trash role (trash_message is the way there), the source folder and
#     an unknown folder, each with a clear message and a write_log row, and
#     still moves to Archive;
#   the scripted peer (no MOVE, so COPY + STORE \Deleted + UID EXPUNGE):
#     a server that answers OK to all three and keeps the message is never
#     "ok": the answer says it is in both folders; a refused STORE says the
#     same, with the source unchanged;
#   a server that echoes the password in an error (plain, IMAP-quoted with
#     " and \ escaped, base64): none of its forms reaches the answer or
#     write_log.detail.
set -euo pipefail
src=${MB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
MB_BUILD_DIR=${MB_BUILD_DIR:-$src/build}
. "$src/tests/lib/dovecot.sh"
. "$src/tests/lib/syncd.sh"
. "$src/tests/lib/testenv.sh"
deps=$src/.deps/npm

testenv_begin daemon:TERM mcpd:TERM peer:KILL
chmod 755 "$work"
stop_daemons() {
	[ -z "$daemon" ] || { kill -TERM "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; }
	[ -z "$mcpd" ] || { kill -TERM "$mcpd" 2>/dev/null || true; wait "$mcpd" 2>/dev/null || true; }
	daemon= mcpd=
}
jq_() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))" "$1"; }
call() { node "$src/tests/integration/mcp_call.mjs" "$url" "$deps" "$@"; }
outcome() { jq_ 'd["structuredContent"]["outcome"] + " " + d["structuredContent"]["detail"]'; }

# serve DIR: a syncd daemon (backfilled first) and mcpd on DIR's index.
serve() {
	local sock=$1/syncd.sock
	syncd --backfill > /dev/null || fail "backfill exit $?"
	echo "=== syncd daemon" >> "$SYNCD_LOG"
	"$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" 2>>"$SYNCD_LOG" &
	daemon=$!
	for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
	[ -S "$sock" ] || fail "no control socket"
	rm -f "$1/port"
	env MCP_AUTH=none MCP_LISTEN=127.0.0.1:0 MCP_INDEX="$SYNCD_DATA/index.db" \
	    MCP_PORT_FILE="$1/port" SYNCD_SOCKET="$sock" MCP_RATE_LIMIT=1000 \
	    "$MB_BUILD_DIR/mcpd" 2>>"$1/mcpd.log" &
	mcpd=$!
	for _ in $(seq 100); do [ -s "$1/port" ] && break; sleep 0.1; done
	url=http://127.0.0.1:$(cat "$1/port")/mcp
}

# ---- real Dovecot: where move_message may not go
mkdir "$work/srv" "$work/d"
dovecot_start "$work/srv"
python3 "$src/tests/lib/mkmail.py" "$work/inbox:3:in"
dovecot_load_maildir INBOX "$work"/inbox/*.eml
dovecot_create_folder Spam
dovecot_create_folder "Lists/Junk"
SYNCD_LOG=$work/d/syncd.log syncd_init "$work/d" SYNCD_SOCKET="$work/d/syncd.sock" \
    SYNCD_ALLOWED_UIDS=0 SYNC_INTERVAL=3600
serve "$work/d"
id1=$(syncd_sql "SELECT m.id FROM messages m JOIN folders f ON f.id=m.folder_id WHERE f.name='INBOX' AND m.uid=1")
move() { call move_message "{\"id\":$id1,\"destination\":\"$1\"}" | outcome; }
r=$(move Junk)
case $r in "refused 'Junk' is a junk folder"*) ;; *) fail "move to \\Junk: $r";; esac
r=$(move Spam)
case $r in "refused 'Spam' is a junk folder"*) ;; *) fail "move to Spam: $r";; esac
r=$(move Lists/Junk)
case $r in "refused 'Lists/Junk' is a junk folder"*) ;; *) fail "move to Lists/Junk: $r";; esac
r=$(move Trash)
[ "$r" = "refused 'Trash' is the trash; use trash_message to move a message there" ] || fail "move to \\Trash: $r"
r=$(move INBOX)
[ "$r" = "refused the message is already in 'INBOX'" ] || fail "move to the source: $r"
r=$(move Nowhere)
case $r in "refused no folder named 'Nowhere'"*) ;; *) fail "move to an unknown folder: $r";; esac
[ "$(syncd_sql "SELECT count(*) FROM write_log WHERE tool='move_message' AND outcome='refused'")" = 6 ] ||
    fail "write_log: refusals not logged"
[ "$(server_uids INBOX | paste -sd,)" = "1,2,3" ] || fail "a refused move changed INBOX"
r=$(move Archive)
case $r in "ok "*) ;; *) fail "move to Archive: $r";; esac
stop_daemons
dovecot_stop

# ---- the scripted peer: the COPY path's steps, and scrubbing
export PEER_SECRET='pe"er\pass-Word9'
(umask 077; printf '%s' "$PEER_SECRET" > "$work/pw")
# peer_scenario MODE: a peer in MODE, syncd and mcpd on a fresh index of it.
peer_scenario() {
	local d=$work/$1
	mkdir "$d"
	[ -z "$peer" ] || { kill -KILL "$peer" 2>/dev/null || true; wait "$peer" 2>/dev/null || true; }
	python3 "$src/tests/lib/imap_peer.py" --mode "$1" --port-file "$d/peer" > /dev/null 2>&1 &
	peer=$!
	for _ in $(seq 200); do [ -s "$d/peer" ] && break; sleep 0.05; done
	[ -s "$d/peer" ] || fail "peer ($1) did not start"
	export SYNCD_LOG=$d/syncd.log
	DOVECOT_IMAP_PORT=$(cat "$d/peer") DOVECOT_USER=alice DOVECOT_PASSWORD_FILE=$work/pw \
	    syncd_init "$d" SYNC_FOLDERS=INBOX,Parent/Gesendet SYNCD_SOCKET="$d/syncd.sock" \
	    SYNCD_ALLOWED_UIDS=0 SYNC_INTERVAL=3600
	serve "$d"
	pid2=$(syncd_sql "SELECT m.id FROM messages m JOIN folders f ON f.id=m.folder_id WHERE f.name='INBOX' AND m.uid=2")
}

peer_scenario keeps_expunged
r=$(call move_message "{\"id\":$pid2,\"destination\":\"Parent/Gesendet\"}" | outcome)
[ "$r" = "failed copied to 'Parent/Gesendet' as UID 102, but UID 2 is still in 'INBOX' after UID EXPUNGE (flags: not \\Deleted): the message is now in both folders: check it" ] ||
    fail "kept after UID EXPUNGE: $r"
grep -qE ' UID STORE 2 \+FLAGS.SILENT \(\\Deleted\)' "$work/keeps_expunged/peer.log" || fail "no STORE \\Deleted sent"
grep -q ' UID EXPUNGE 2' "$work/keeps_expunged/peer.log" || fail "no UID EXPUNGE 2 sent"
[ "$(syncd_sql "SELECT outcome FROM write_log ORDER BY id DESC LIMIT 1")" = failed ] || fail "write_log: not failed"
stop_daemons

peer_scenario store_refused
r=$(call move_message "{\"id\":$pid2,\"destination\":\"Parent/Gesendet\"}" | outcome)
case $r in
"failed copied to 'Parent/Gesendet' as UID 102, but "*"cannot store flags now; the message is now in both folders (in 'INBOX' unchanged): check it") ;;
*) fail "refused STORE: $r";;
esac
grep -q ' UID EXPUNGE' "$work/store_refused/peer.log" && fail "UID EXPUNGE sent after a refused STORE"
stop_daemons

peer_scenario echo_secret
call flag_message "{\"id\":$pid2,\"add\":[\"\\\\Flagged\"]}" > "$work/r.json"
[ "$(jq_ 'd["structuredContent"]["outcome"]' < "$work/r.json")" = failed ] || fail "echo_secret: $(cat "$work/r.json")"
jq_ 'd["structuredContent"]["detail"] + "\n" + d["text"]' < "$work/r.json" > "$work/answer"
grep -q '<hidden>' "$work/answer" || fail "echo_secret: the echo did not reach the answer: $(cat "$work/answer")"
syncd_sql "SELECT detail FROM write_log ORDER BY id DESC LIMIT 1" > "$work/detail"
grep -q '<hidden>' "$work/detail" || fail "echo_secret: write_log.detail: $(cat "$work/detail")"
b64=$(printf '%s' "$PEER_SECRET" | base64)
for form in "$PEER_SECRET" 'pe\"er\\pass-Word9' "$b64" "${b64%%=*}"; do
	grep -qF -- "$form" "$work/answer" && fail "a form of the password in the answer: $form"
	grep -qF -- "$form" "$work/detail" && fail "a form of the password in write_log: $form"
	grep -qF -- "$form" "$work"/*/syncd.log && fail "a form of the password in a log: $form"
done
stop_daemons
syncd_log_clean "$work"/*/syncd.log || fail "sanitizer"
ok=1
echo "PASS: test_syncd_writes"
