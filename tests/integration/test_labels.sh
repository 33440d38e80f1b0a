#!/usr/bin/env bash
# label_message end to end (docs/writes.md): real Dovecot, syncd daemon,
# mcpd, the official MCP SDK client.
#   - a label added through the tool is seen by a separate IMAP session
#     (imaplib), by get_message and by search's label:; the index row and
#     write_log follow; removal likewise;
#   - a bad keyword (a space, a backslash, a parenthesis) is refused and
#     logged, and nothing reaches the server;
#   - a server whose PERMANENTFLAGS lacks \* (the scripted peer, mode
#     no_keywords) is refused clearly, logged, and no UID STORE is sent.
set -euo pipefail
src=$(cd "${MB_SOURCE_DIR:-$(dirname "$0")/../..}" && pwd)
MB_BUILD_DIR=${MB_BUILD_DIR:-$src/build}
. "$src/tests/lib/dovecot.sh"
. "$src/tests/lib/syncd.sh"
. "$src/tests/lib/testenv.sh"
python=python3
if [ -x /usr/bin/python3 ]; then python=/usr/bin/python3; python3() { "$python" "$@"; }; fi

testenv_begin
chmod 755 "$work"
. "$src/tests/lib/writes.sh"
. "$src/tests/lib/mcp_batch.sh"
# answered, and the newest write_log row is label_message's.
label_answered() {
	answered "$@"
	[ "$(last_log tool)" = label_message ] || fail "write_log: tool $(last_log tool)"
}
# imap_keywords UID: the keywords a separate IMAP session (imaplib) sees on INBOX UID.
imap_keywords() {
	python3 - "$1" <<'PY'
import imaplib, os, re, sys
m = imaplib.IMAP4("127.0.0.1", int(os.environ["DOVECOT_IMAP_PORT"]))
m.login(os.environ["DOVECOT_USER"], open(os.environ["DOVECOT_PASSWORD_FILE"]).read().strip())
m.select("INBOX", readonly=True)
typ, data = m.uid("FETCH", sys.argv[1], "(FLAGS)")
flags = re.search(rb"FLAGS \(([^)]*)\)", b" ".join(d if isinstance(d, bytes) else d[0] for d in data))
print(" ".join(sorted(f for f in flags.group(1).decode().split() if not f.startswith("\\"))))
m.logout()
PY
}
# search_ids FILE: the ids of the search_messages answer in $work/FILE.json,
# sorted, space separated.
search_ids() {
	jq_ '" ".join(str(h["id"]) for h in sorted(d["structuredContent"]["results"], key=lambda h: h["id"]))' < "$work/$1.json"
}

# ---------------------------------------------------------------- Dovecot
mkdir "$work/srv"
dovecot_start "$work/srv"
python3 "$src/tests/lib/mkmail.py" "$work/inbox:3:in"
dovecot_load_maildir INBOX "$work"/inbox/*.eml
sock=$work/syncd.sock
syncd_init "$work" SYNCD_SOCKET="$sock" SYNCD_ALLOWED_UIDS=0 SYNC_INTERVAL=3600
syncd --backfill > /dev/null || fail "backfill"
start_syncd "$sock"
until_ok '[ "$(ticks_done)" -ge 1 ]' || fail "the first tick did not finish"
start_mcpd mcpd "$SYNCD_DATA/index.db" "$sock"

# Add two labels to UID 2, then read them back: the checks between the calls
# (the server, write_log) are of nothing a read changes.
id2=$(id_of INBOX 2)
mcp_batch "$url" <<EOF
list list
r label_message {"id":$id2,"add":["project-x","\$Important"]}
g get_message {"id":$id2}
project-x search_messages {"query":"label:project-x"}
PROJECT-X search_messages {"query":"label:PROJECT-X"}
EOF
[ "$(jq_ '[t for t in d if t["name"]=="label_message"][0]["annotations"]["destructiveHint"]' < "$work/list.json")" = False ] ||
    fail "tools/list: label_message missing or destructive"
label_answered "$work/r.json" ok "verified"
[ "$(jq_ 'sorted(d["structuredContent"]["labels"])' < "$work/r.json")" = "['\$Important', 'project-x']" ] ||
    fail "answer's labels: $(cat "$work/r.json")"
[ "$(imap_keywords 2)" = '$Important project-x' ] || fail "IMAP session sees '$(imap_keywords 2)'"
[ "$(imap_keywords 1)" = "" ] || fail "UID 1 got labels too: $(imap_keywords 1)"
[ "$(jq_ 'sorted(d["structuredContent"]["labels"])' < "$work/g.json")" = "['\$Important', 'project-x']" ] ||
    fail "get_message labels: $(cat "$work/g.json")"
[ "$(search_ids project-x)" = "$id2" ] || fail "label:project-x finds '$(search_ids project-x)'"
[ "$(search_ids PROJECT-X)" = "$id2" ] || fail "label: is not case-insensitive"
[ "$(last_log "folder||'/'||uid||'/'||requested_by")" = "INBOX/2/local" ] || fail "write_log row: $(last_log "folder||'/'||uid")"
last_log arguments | grep -q '"add":\["project-x","\$Important"\]' || fail "write_log arguments: $(last_log arguments)"

# Remove one: the other stays, everywhere.
mcp_batch "$url" <<EOF
r label_message {"id":$id2,"remove":["Project-X"]}
project-x search_messages {"query":"label:project-x"}
important search_messages {"query":"label:\$Important"}
g get_message {"id":$id2}
EOF
label_answered "$work/r.json" ok
[ "$(imap_keywords 2)" = '$Important' ] || fail "after removal IMAP sees '$(imap_keywords 2)'"
[ "$(search_ids project-x)" = "" ] || fail "label:project-x still finds '$(search_ids project-x)'"
[ "$(search_ids important)" = "$id2" ] || fail "label:\$Important lost"
[ "$(jq_ 'd["structuredContent"]["labels"]' < "$work/g.json")" = "['\$Important']" ] ||
    fail "get_message labels after removal: $(cat "$work/g.json")"

# Bad keywords: refused by syncd before the server, and logged (a row each:
# the calls share an SDK session, so their rows are checked after).
rawlog_before=$(cat "$DOVECOT_RAWLOG"/*.in 2>/dev/null | grep -c "UID STORE" || true)
log_before=$(idx "SELECT coalesce(max(id), 0) FROM write_log")
n=0
for bad in '"has space"' '"\\\\Seen"' '"a(b"' '"x*"' '"caf\u00e9"'; do
	n=$((n + 1))
	printf 'bad%s label_message {"id":%s,"add":[%s]}\n' "$n" "$id2" "$bad"
done > "$work/bad.calls"
printf 'r label_message {"id":%s,"add":["a"],"remove":["A"]}\n' "$id2" >> "$work/bad.calls"
mcp_batch "$url" < "$work/bad.calls"
for i in $(seq "$n"); do
	label_answered "$work/bad$i.json" refused "cannot be a label"
done
label_answered "$work/r.json" refused "both added and removed"
[ "$(idx "SELECT count(*)||' '||coalesce(sum(outcome = 'refused' AND tool = 'label_message'), 0) FROM write_log WHERE id > $log_before")" = "$((n + 1)) $((n + 1))" ] ||
    fail "write_log: the refused labels: $(idx "SELECT outcome||' '||tool FROM write_log WHERE id > $log_before")"
[ "$(imap_keywords 2)" = '$Important' ] || fail "a refused label reached the server: $(imap_keywords 2)"
[ "$(cat "$DOVECOT_RAWLOG"/*.in 2>/dev/null | grep -c "UID STORE" || true)" = "$rawlog_before" ] ||
    fail "a refused label sent a UID STORE"
# No label at all is the tool's own error, and nothing is logged.
n_log=$(idx "SELECT count(*) FROM write_log")
mcp_batch "$url" <<< "r label_message {\"id\":$id2}"
grep -q "at least one label" "$work/r.json" || fail "no labels: $(cat "$work/r.json")"
[ "$(idx "SELECT count(*) FROM write_log")" = "$n_log" ] || fail "an empty request was logged"
[ "$(idx "SELECT count(*) FROM write_log WHERE outcome='pending'")" = 0 ] || fail "a pending row is left"
syncd_log_clean "$SYNCD_LOG" "$work/mcpd.log" || fail "sanitizer report"

# ----------------------------------- a server that keeps no custom keywords
mkdir "$work/peer"
"$python" "$src/tests/lib/imap_peer.py" --mode no_keywords --port-file "$work/peer/port" > /dev/null 2>&1 &
testenv_track "$!"
until_ok '[ -s "$work/peer/port" ]' || fail "the peer did not start"
transcript=$work/peer/port.log
(umask 077; printf 'peer-pass-word' > "$work/peer/pw")
psock=$work/peer.sock
export SYNCD_LOG=$work/peer/syncd.log
DOVECOT_IMAP_PORT=$(cat "$work/peer/port") DOVECOT_USER=alice DOVECOT_PASSWORD_FILE=$work/peer/pw \
    syncd_init "$work/peer" SYNCD_SOCKET="$psock" SYNC_FOLDERS=INBOX SYNC_INTERVAL=3600
syncd --backfill > /dev/null || fail "peer: backfill"
start_syncd "$psock"
until_ok '[ "$(ticks_done)" -ge 1 ]' || fail "peer: the first tick did not finish"
start_mcpd mcpd-peer "$SYNCD_DATA/index.db" "$psock"
pid1=$(id_of INBOX 1)
call "$url" label_message "{\"id\":$pid1,\"add\":[\"project-x\"]}" > "$work/r.json"
label_answered "$work/r.json" refused "does not keep the label 'project-x'"
grep -q " SELECT " "$transcript" || fail "peer: the write process did not SELECT"
! grep -q " UID STORE " "$transcript" || fail "peer: a UID STORE was sent: $(grep ' UID STORE ' "$transcript")"
[ -z "$(idx "SELECT coalesce(keywords,'') FROM messages WHERE id=$pid1")" ] || fail "peer: the index got a label"
syncd_log_clean "$SYNCD_LOG" "$work/mcpd-peer.log" || fail "sanitizer report (peer)"

ok=1
echo "test_labels: ok"
