#!/usr/bin/env bash
# The write tools end to end (docs/writes.md): real Dovecot, real syncd (a
# daemon with its control socket), real mcpd, the official MCP SDK client.
# flag_message and move_message change the mailbox (checked with doveadm, a
# separate session), the index follows, and write_log has a row with the
# right outcome; \Deleted and a stale UIDVALIDITY are refused and logged; a
# uid not in SYNCD_ALLOWED_UIDS is refused at the socket; a malformed frame
# is answered and syncd keeps serving; a server without MOVE takes the
# COPY + STORE + UID EXPUNGE path and expunges only that UID; a tick right
# after a move leaves exactly one row.
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
python3 "$src/tests/lib/mkmail.py" "$work/inbox:6:in"
dovecot_load_maildir INBOX "$work"/inbox/*.eml
dovecot_create_folder Archive 2>/dev/null || true
dovecot_create_folder Trash 2>/dev/null || true
sock=$work/syncd.sock
syncd_init "$work" SYNCD_SOCKET="$sock" SYNCD_ALLOWED_UIDS=0 SYNC_INTERVAL=3600
syncd --backfill > /dev/null || fail "backfill"

start_daemon() {
	echo "=== syncd daemon" >> "$SYNCD_LOG"
	"$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" 2>>"$SYNCD_LOG" &
	daemon=$!
	for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
	[ -S "$sock" ] || fail "no control socket"
}
start_daemon

rm -f "$work/port"
env MCP_AUTH=none MCP_LISTEN=127.0.0.1:0 MCP_INDEX="$SYNCD_DATA/index.db" MCP_PORT_FILE="$work/port" \
    SYNCD_SOCKET="$sock" MCP_RATE_LIMIT=1000 "$MB_BUILD_DIR/mcpd" 2>>"$work/mcpd.log" &
mcpd=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
url=http://127.0.0.1:$(cat "$work/port")/mcp
jq_() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))" "$1"; }
idx() { syncd_sql "$1"; }
id_of() {	# folder uid -> messages.id
	idx "SELECT m.id FROM messages m JOIN folders f ON f.id=m.folder_id WHERE f.name='$1' AND m.uid=$2"
}

# tools/list: the write tools and their annotations.  Calls with no check
# between them that a later one could change share an SDK session.
id2=$(id_of INBOX 2)
mcp_batch "$url" <<EOF
list list
r flag_message {"id":$id2,"add":["\\\\Flagged","\\\\Seen"]}
EOF
for t in flag_message move_message trash_message create_draft list_recent_writes; do
	grep -q "\"$t\"" "$work/list.json" || fail "tools/list lacks $t"
done
[ "$(jq_ '[t for t in d if t["name"]=="move_message"][0]["annotations"]["destructiveHint"]' < "$work/list.json")" = True ] ||
    fail "move_message is not destructiveHint"

# flag_message: \Flagged and \Seen on INBOX UID 2.
[ "$(jq_ 'd["structuredContent"]["outcome"]' < "$work/r.json")" = ok ] || fail "flag_message: $(cat "$work/r.json")"
dovecot_flags INBOX 2 | grep -q '\\Flagged' || fail "server: UID 2 not \\Flagged"
dovecot_flags INBOX 2 | grep -q '\\Seen' || fail "server: UID 2 not \\Seen"
[ "$(idx "SELECT flags & 5 FROM messages WHERE id=$id2")" = 5 ] || fail "index: flags of $id2"
[ "$(idx "SELECT outcome FROM write_log WHERE tool='flag_message' ORDER BY id DESC LIMIT 1")" = ok ] ||
    fail "write_log: flag ok"
[ "$(idx "SELECT requested_by||'/'||peer_uid||'/'||folder||'/'||uid FROM write_log ORDER BY id DESC LIMIT 1")" = "local/0/INBOX/2" ] ||
    fail "write_log: who/peer/folder/uid"
# remove \Seen; then \Deleted through flag_message: refused, and logged.
mcp_batch "$url" <<EOF
unseen flag_message {"id":$id2,"remove":["\\\\Seen"]}
r flag_message {"id":$id2,"add":["\\\\Deleted"]}
EOF
dovecot_flags INBOX 2 | grep -q '\\Seen' && fail "server: \\Seen not removed"

[ "$(jq_ 'd["isError"]' < "$work/r.json")" = True ] || fail "\\Deleted accepted"
dovecot_flags INBOX 2 | grep -q '\\Deleted' && fail "server: \\Deleted set"
[ "$(idx "SELECT outcome FROM write_log ORDER BY id DESC LIMIT 1")" = refused ] || fail "write_log: \\Deleted not refused"

# move_message (UID MOVE): INBOX UID 3 to Archive; the row moves with COPYUID.
id3=$(id_of INBOX 3)
mcp_batch "$url" <<< "r move_message {\"id\":$id3,\"destination\":\"Archive\"}"
[ "$(jq_ 'd["structuredContent"]["outcome"]' < "$work/r.json")" = ok ] || fail "move: $(cat "$work/r.json")"
grep -q "UID MOVE" "$work/r.json" || fail "move did not use UID MOVE"
server_uids INBOX | grep -qx 3 && fail "server: UID 3 still in INBOX"
[ "$(server_uids Archive | wc -l)" = 1 ] || fail "server: Archive does not hold one message"
[ "$(idx "SELECT f.name FROM messages m JOIN folders f ON f.id=m.folder_id WHERE m.id=$id3")" = Archive ] ||
    fail "index: row $id3 not in Archive"
# A tick right after the move: exactly one row, none resurrected.
kill -HUP "$daemon"
for _ in $(seq 100); do grep -q "tick 2 done" "$SYNCD_LOG" && break; sleep 0.1; done
[ "$(idx "SELECT count(*) FROM messages")" = 6 ] || fail "after a tick: $(idx "SELECT count(*) FROM messages") rows, want 6"
[ "$(idx "SELECT count(*) FROM messages m JOIN folders f ON f.id=m.folder_id WHERE f.name='Archive'")" = 1 ] ||
    fail "after a tick: Archive rows"

# trash_message: to the \Trash folder.
id4=$(id_of INBOX 4)
mcp_batch "$url" <<EOF
trash trash_message {"id":$id4}
r create_draft {"to":["Alice Example <alice@example.org>"],"cc":["bob@example.org"],"subject":"Grüße vom Entwurf","body":"Hello Alice,\nthe quarterly numbers are attached.\n"}
EOF
[ "$(jq_ 'd["structuredContent"]["folder"]' < "$work/trash.json")" = Trash ] || fail "trash: $(cat "$work/trash.json")"
server_uids Trash | grep -q . || fail "server: Trash empty"

# create_draft: APPENDed to Drafts with \Draft (and \Seen), indexed at once
# from APPENDUID; a separate IMAP session reads back what a mail client would.
[ "$(jq_ 'd["structuredContent"]["outcome"]' < "$work/r.json")" = ok ] || fail "create_draft: $(cat "$work/r.json")"
[ "$(jq_ 'd["structuredContent"]["folder"]' < "$work/r.json")" = Drafts ] || fail "draft not in Drafts"
did=$(jq_ 'd["structuredContent"]["id"]' < "$work/r.json")
duid=$(server_uids Drafts | tail -n 1)
[ -n "$duid" ] || fail "server: Drafts is empty"
dovecot_flags Drafts "$duid" | grep -q '\\Draft' || fail "server: the draft has no \\Draft flag"
read_draft() {	# uid: the draft as the server has it, as a mail client would read it
	python3 - "$DOVECOT_IMAP_PORT" "$DOVECOT_USER" "$DOVECOT_PASSWORD" "$1" <<'PY'
import email, email.policy, imaplib, sys
m = imaplib.IMAP4('127.0.0.1', int(sys.argv[1])); m.login(sys.argv[2], sys.argv[3])
m.select('Drafts', readonly=True)
typ, data = m.uid('FETCH', sys.argv[4], '(BODY.PEEK[])')
raw = data[0][1]
assert b'\r\n' in raw and b'\n' not in raw.replace(b'\r\n', b''), 'bare LF on the wire'
msg = email.message_from_bytes(raw, policy=email.policy.default)
for h in ('Subject', 'To', 'Cc', 'Message-ID', 'In-Reply-To', 'References'):
    print('%s: %s' % (h, msg[h]))
print('Date-set:', msg['Date'] is not None)
print('Body:', msg.get_content().replace('\r\n', '\n').strip().replace('\n', '|'))
m.logout()
PY
}
read_draft "$duid" > "$work/draft.txt" || fail "cannot read the draft back"
grep -qx 'Subject: Grüße vom Entwurf' "$work/draft.txt" || fail "draft subject: $(cat "$work/draft.txt")"
grep -qx 'To: Alice Example <alice@example.org>' "$work/draft.txt" || fail "draft To: $(cat "$work/draft.txt")"
grep -qx 'Cc: bob@example.org' "$work/draft.txt" || fail "draft Cc"
grep -qx 'Date-set: True' "$work/draft.txt" || fail "draft has no Date"
grep -q '^Message-ID: <.*@.*>$' "$work/draft.txt" || fail "draft has no Message-ID"
grep -qx 'In-Reply-To: None' "$work/draft.txt" || fail "a new draft has In-Reply-To"
grep -qx 'Body: Hello Alice,|the quarterly numbers are attached.' "$work/draft.txt" || fail "draft body"
[ "$(idx "SELECT f.name||'/'||m.uid||'/'||m.subject||'/'||(m.flags & 16) FROM messages m JOIN folders f ON f.id=m.folder_id WHERE m.id=$did")" = "Drafts/$duid/Grüße vom Entwurf/16" ] ||
    fail "index: draft row $did"
[ "$(idx "SELECT outcome||'/'||folder||'/'||uid||'/'||message_id FROM write_log WHERE tool='create_draft' ORDER BY id DESC LIMIT 1")" = "ok/Drafts/$duid/$did" ] ||
    fail "write_log: draft row"
# the draft's get_message, then a reply to INBOX UID 2 (the checks above
# look at nothing a reply changes)
orig_mid=$(idx "SELECT message_id FROM messages WHERE id=$id2")
orig_subj=$(idx "SELECT subject FROM messages WHERE id=$id2")
mcp_batch "$url" <<EOF
draft get_message {"id":$did}
r create_draft {"to":["alice@example.org"],"body":"Agreed.","in_reply_to_id":$id2}
EOF
grep -q "quarterly numbers" "$work/draft.json" || fail "get_message does not show the draft's body"

# A reply: "Re:", In-Reply-To and References from the original, same thread.
[ "$(jq_ 'd["structuredContent"]["outcome"]' < "$work/r.json")" = ok ] || fail "reply draft: $(cat "$work/r.json")"
rid=$(jq_ 'd["structuredContent"]["id"]' < "$work/r.json")
read_draft "$(server_uids Drafts | tail -n 1)" > "$work/draft.txt"
grep -qx "Subject: Re: $orig_subj" "$work/draft.txt" || fail "reply subject: $(cat "$work/draft.txt")"
grep -qx "In-Reply-To: <$orig_mid>" "$work/draft.txt" || fail "reply In-Reply-To: $(cat "$work/draft.txt")"
grep -q "^References: .*<$orig_mid>$" "$work/draft.txt" || fail "reply References"
[ "$(idx "SELECT count(DISTINCT thread_id) FROM messages WHERE id IN ($id2, $rid)")" = 1 ] ||
    fail "the reply is not in the original's thread"

# Refused before the server: a bad address (logged), a misspelt argument (not forwarded).
ndrafts=$(server_uids Drafts | wc -l)
mcp_batch "$url" <<'EOF'
bad create_draft {"to":["not an address"],"body":"x"}
r create_draft {"to":["a@example.org"],"subject":"x\r\nBcc: victim@example.org","body":"x"}
EOF
[ "$(jq_ 'd["structuredContent"]["outcome"]' < "$work/bad.json")" = refused ] || fail "bad address: $(cat "$work/bad.json")"
grep -q "is not one email address" "$work/bad.json" || fail "bad address: no clear reason"
[ "$(jq_ 'd["structuredContent"]["outcome"]' < "$work/r.json")" = refused ] || fail "header injection: $(cat "$work/r.json")"
nlog=$(idx "SELECT count(*) FROM write_log")
mcp_batch "$url" <<< 'r create_draft {"to":["a@example.org"],"bcc":["b@example.org"],"body":"x"}'
[ "$(jq_ 'd["isError"]' < "$work/r.json")" = True ] && grep -q 'unknown argument \\"bcc\\"' "$work/r.json" ||
    fail "bcc: $(cat "$work/r.json")"
[ "$(idx "SELECT count(*) FROM write_log")" = "$nlog" ] || fail "a malformed call reached syncd"
[ "$(server_uids Drafts | wc -l)" = "$ndrafts" ] || fail "a refused draft reached the server"
[ "$(idx "SELECT count(*) FROM write_log WHERE tool='create_draft' AND outcome='refused'")" = 2 ] ||
    fail "write_log: refused drafts"

# A tick after the drafts indexes nothing twice.
kill -HUP "$daemon"
for _ in $(seq 100); do grep -q "tick 3 done" "$SYNCD_LOG" && break; sleep 0.1; done
grep -q "tick 3 done" "$SYNCD_LOG" || fail "no third tick"
[ "$(index_uids Drafts | wc -l)" = 2 ] && [ "$(server_uids Drafts | wc -l)" = 2 ] ||
    fail "after a tick: Drafts has $(index_uids Drafts | wc -l) rows, server $(server_uids Drafts | wc -l)"

# Stale UIDVALIDITY: refused and logged.
idx "UPDATE messages SET uidvalidity = uidvalidity + 1000 WHERE id = $(id_of INBOX 5)" 2>/dev/null ||
    fail "could not age a row"
id5=$(idx "SELECT m.id FROM messages m JOIN folders f ON f.id=m.folder_id WHERE f.name='INBOX' AND m.uid=5")
mcp_batch "$url" <<< "r flag_message {\"id\":$id5,\"add\":[\"\\\\Flagged\"]}"
grep -q "stale id" "$work/r.json" || fail "stale uidvalidity not refused: $(cat "$work/r.json")"
dovecot_flags INBOX 5 | grep -q '\\Flagged' && fail "stale write reached the server"

# A uid not allowed is refused at the socket (and logged); syncd keeps serving.
# The socket's mode (0660) keeps other users out first; open it up so the
# SO_PEERCRED check is what refuses.
[ "$(stat -c %a "$sock")" = 660 ] || fail "socket mode $(stat -c %a "$sock")"
chmod 666 "$sock"
setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 - "$sock" <<'PY' || true
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(5)
print(s.recv(100))
PY
grep -q "control: refused uid 65534" "$SYNCD_LOG" || fail "uid 65534 not refused"

# A malformed frame: an error reply, a disconnect, and syncd still serves.
ipc_version=$(sed -n 's/^#define MB_IPC_VERSION[[:space:]]*\([0-9]*\).*/\1/p' "$src/include/mailbox/ipc.h")
python3 - "$sock" "$ipc_version" > "$work/bad.out" <<'PY'
import socket, struct, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(5)
s.sendall(struct.pack('=IIII', 6, 20, 99, int(sys.argv[2])) + b'\xff\xff\xff\xff')  # CTL_REQUEST, a short payload
data = b''
while True:
    b = s.recv(4096)
    if not b: break
    data += b
t, l, i, v = struct.unpack('=IIII', data[:16])
print(t, i, len(data) == l)
PY
[ "$(cat "$work/bad.out")" = "7 99 True" ] || fail "malformed frame: reply $(cat "$work/bad.out")"
kill -0 "$daemon" || fail "syncd died on a malformed frame"

# Two requests in one write: each answered, in order, with its own id.
python3 - "$sock" "$id2" "$ipc_version" > "$work/two.out" <<'PY'
import socket, struct, sys
def s(x):
    b = x.encode(); return b'\1' + struct.pack('=I', len(b)) + b
def req(rid, add, rem):
    p = struct.pack('=I', 1) + s('pipelined') + struct.pack('=QII', int(sys.argv[2]), add, rem) + b'\0'
    p += struct.pack('=II', 0, 0) + b'\0\0'   # no recipients, subject or body: not a draft
    p += struct.pack('=II', 0, 0)             # no labels: not a label request
    return struct.pack('=IIII', 6, 16 + len(p), rid, int(sys.argv[3])) + p  # MB_IPC_VERSION
c = socket.socket(socket.AF_UNIX); c.connect(sys.argv[1]); c.settimeout(20)
c.sendall(req(41, 2, 0) + req(42, 0, 2))   # +\Answered, then -\Answered
data = b''
out = []
while len(out) < 2:
    b = c.recv(4096)
    if not b: break
    data += b
    while len(data) >= 16:
        t, l, i, v = struct.unpack('=IIII', data[:16])
        if len(data) < l: break
        out.append('%d:%d' % (i, struct.unpack('=I', data[16:20])[0])); data = data[l:]
print(' '.join(out))
PY
[ "$(cat "$work/two.out")" = "41:0 42:0" ] || fail "pipelined requests: $(cat "$work/two.out")"
[ "$(idx "SELECT count(*) FROM write_log WHERE requested_by='pipelined' AND outcome='ok'")" = 2 ] ||
    fail "pipelined requests not both logged ok"

# A server without MOVE (Dovecot with imap_capability overridden to drop it):
# COPY + STORE \Deleted + UID EXPUNGE of that UID only.
caps() {
	python3 - "$DOVECOT_IMAP_PORT" "$DOVECOT_USER" "$DOVECOT_PASSWORD" <<'PY'
import imaplib, sys
m = imaplib.IMAP4('127.0.0.1', int(sys.argv[1])); m.login(sys.argv[2], sys.argv[3])
caps = m.capability()[1][0].decode().split()
print(' '.join(c for c in caps if c.upper() != 'MOVE'))
m.logout()
PY
}
nomove=$(caps)
printf 'protocol imap {\n  imap_capability = %s\n}\n' "$nomove" >> "$DOVECOT_CONF"
dovecot_reload
python3 - "$DOVECOT_IMAP_PORT" "$DOVECOT_USER" "$DOVECOT_PASSWORD" <<'PY' || fail "Dovecot still offers MOVE"
import imaplib, sys, time
for _ in range(50):
    m = imaplib.IMAP4('127.0.0.1', int(sys.argv[1])); m.login(sys.argv[2], sys.argv[3])
    caps = m.capability()[1][0].decode().upper().split()
    m.logout()
    if 'MOVE' not in caps and 'UIDPLUS' in caps:
        sys.exit(0)
    time.sleep(0.2)
sys.exit(1)
PY
dovecot_doveadm flags add -u "$DOVECOT_USER" '\Deleted' mailbox INBOX uid 6
id1=$(id_of INBOX 1)
mcp_batch "$url" <<EOF
r move_message {"id":$id1,"destination":"Archive"}
recent list_recent_writes {"limit":50}
EOF
[ "$(jq_ 'd["structuredContent"]["outcome"]' < "$work/r.json")" = ok ] || fail "copy move: $(cat "$work/r.json")"
grep -q "UID EXPUNGE" "$work/r.json" || fail "no-MOVE path not taken: $(cat "$work/r.json")"
server_uids INBOX | grep -qx 1 && fail "server: UID 1 still in INBOX"
server_uids INBOX | grep -qx 6 || fail "server: UID 6 (\\Deleted, not ours) was expunged too"
[ "$(server_uids Archive | wc -l)" = 2 ] || fail "server: Archive should hold 2"

# list_recent_writes shows them; --status too.
[ "$(jq_ 'len(d["structuredContent"]["writes"])' < "$work/recent.json")" -ge 11 ] || fail "list_recent_writes"
[ "$(idx "SELECT count(*) FROM write_log WHERE outcome='pending'")" = 0 ] || fail "pending rows left"
"$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" --status > "$work/status.out" || fail "--status"
grep -q "move_message" "$work/status.out" || fail "--status shows no writes"

# A live socket is not stolen; a stale one is replaced.
mkdir -p "$work/data2"
DATA_DIR=$work/data2 timeout 20 "$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" 2>"$work/second.err" &&
    fail "a second syncd took the live socket"
grep -q "is live" "$work/second.err" || fail "second syncd: $(grep -v '^<7>' "$work/second.err" | tail -3)"
[ -S "$sock" ] || fail "the live socket was removed"
kill -TERM "$daemon"; wait "$daemon" || true; daemon=
python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])" "$sock.x"
mv "$sock.x" "$sock"
start_daemon
for _ in $(seq 100); do grep -q "control: listening" <(tail -n 200 "$SYNCD_LOG") && break; sleep 0.1; done
grep -q "removing the stale socket" "$SYNCD_LOG" || fail "stale socket not replaced"
python3 - "$sock" <<'PY' || fail "the replaced socket does not answer"
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
PY

syncd_log_clean "$SYNCD_LOG" "$work/mcpd.log"
ok=1
echo "test_writes: ok"
