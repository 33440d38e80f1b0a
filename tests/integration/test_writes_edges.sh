#!/usr/bin/env bash
# The write tools' edges (docs/writes.md), what test_writes leaves out.  One
# real Dovecot, reused, with syncd as a daemon, real mcpd and the official MCP
# SDK client (mcp_call.mjs):
#   - the control socket's caps: a 9th connection of one uid, and a 17th of
#     any, is closed at once and logged; syncd then serves a normal write;
#   - MCP_AUTH=jwt with tokens from a real authorization server (oidc-provider,
#     oauth_as.mjs): a mail.read token does not see the write tools and its
#     flag_message is refused in mcpd; a mail.read mail.write token sees them
#     and its write lands, recorded under the token's subject;
#   - a mailbox whose Trash loses its \Trash role upstream: the next tick
#     clears the role in the index and trash_message is refused, nothing moved;
#   - a server without UIDPLUS (imap_capability overridden): move_message is
#     refused and no write command reaches the server.
# Then the scripted peer (imap_peer.py, mode stall_store) with
# SYNC_WRITE_TIMEOUT=3:
#   - a UID STORE that is never answered: flag_message answers 'failed', says
#     the write may or may not have happened, and the write_log row says so;
#     the write process holds no descriptor of the control socket, and a
#     tick asked for meanwhile (SIGHUP) waits until the write has ended;
#   - a write process stuck before its session (no greeting): killed at the
#     deadline, 'failed', never left 'pending'; syncd keeps serving.
set -euo pipefail
src=$(cd "${MB_SOURCE_DIR:-$(dirname "$0")/../..}" && pwd)
MB_BUILD_DIR=${MB_BUILD_DIR:-$src/build}
. "$src/tests/lib/dovecot.sh"
. "$src/tests/lib/syncd.sh"
. "$src/tests/lib/testenv.sh"
# The interpreter itself rather than a version manager's shim, when there is
# one: pyenv's costs most of a second a call on a loaded machine, and this
# test (and the helpers above) call python3 a few dozen times.
python=python3
if [ -x /usr/bin/python3 ]; then python=/usr/bin/python3; python3() { "$python" "$@"; }; fi

testenv_begin
chmod 755 "$work"
. "$src/tests/lib/writes.sh"
. "$src/tests/lib/mcp_batch.sh"

[ -d "$deps/node_modules/oidc-provider" ] || fail "no oidc-provider: run scripts/deps"

# ---------------------------------------------------------------- Dovecot
mkdir "$work/srv"
dovecot_start "$work/srv"
python3 "$src/tests/lib/mkmail.py" "$work/inbox:5:in"
dovecot_load_maildir INBOX "$work"/inbox/*.eml
sock=$work/syncd.sock
# 65533 and 65534: two more allowed uids, for the all-connections cap.
syncd_init "$work" SYNCD_SOCKET="$sock" SYNCD_ALLOWED_UIDS=0,65533,65534 SYNC_INTERVAL=3600
syncd --backfill > /dev/null || fail "backfill"
start_syncd "$sock"
until_ok '[ "$(ticks_done)" -ge 1 ]' || fail "the first tick did not finish"
start_mcpd mcpd "$SYNCD_DATA/index.db" "$sock"
murl=$url

# --- the connection caps: 8 per uid, 16 in all
chmod 666 "$sock"	# the other uids get past the file mode; SO_PEERCRED decides
ipc_version=$(sed -n 's/^#define MB_IPC_VERSION[[:space:]]*\([0-9]*\).*/\1/p' "$src/include/mailbox/ipc.h")
python3 - "$sock" "$ipc_version" > "$work/caps.out" 2>&1 <<'PY' || fail "caps: $(cat "$work/caps.out")"
import os, socket, struct, sys, time
path = sys.argv[1]
VERSION = int(sys.argv[2])	# MB_IPC_VERSION

def connect():
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    return s

def closed(s, wait):
    """True if syncd closed s (EOF) within wait seconds."""
    s.settimeout(wait)
    try:
        return s.recv(1) == b""
    except socket.timeout:
        return False

def hold(uid, n, want_closed):
    """A child as uid opens n connections (kept until released), checks the
    last is closed (or not) by syncd; returns (pid, release fd, verdict)."""
    r, w = os.pipe()
    rel_r, rel_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r); os.close(rel_w)
        os.setgroups([]); os.setgid(uid); os.setuid(uid)
        conns = [connect() for _ in range(n)]
        verdict = "closed" if closed(conns[-1], 10 if want_closed else 0.3) else "open"
        os.write(w, verdict.encode())
        os.read(rel_r, 1)		# until released
        os._exit(0)
    os.close(w); os.close(rel_r)
    return pid, rel_w, os.read(r, 16).decode()

# Eight as root are kept; the ninth is closed at once.  The accept queue is
# in order, so the ninth is looked at after the eight were taken.
mine = [connect() for _ in range(8)]
ninth = connect()
if not closed(ninth, 10):
    sys.exit("the 9th connection of uid 0 was not closed")
if any(closed(s, 0.05) for s in mine):	# a refusal would have come first
    sys.exit("one of the first 8 connections of uid 0 was closed")
print("uid0", os.getpid())
# Eight more as 65534 fill the 16 slots; one as 65533 (none of its own) is closed.
p1, rel1, v1 = hold(65534, 8, False)
if v1 != "open":
    sys.exit("uid 65534's 8th connection was closed: %s" % v1)
p2, rel2, v2 = hold(65533, 1, True)
if v2 != "closed":
    sys.exit("the 17th connection (uid 65533) was not closed")
print("uid65533", p2)
for rel, pid in ((rel2, p2), (rel1, p1)):	# the second child holds rel1 too
    os.close(rel)
    os.waitpid(pid, 0)
for s in mine:
    s.close()
# syncd serves again: a malformed frame is answered (with its id), not cut off.
for _ in range(100):
    s = connect()
    s.settimeout(5)
    try:
        s.sendall(struct.pack("=IIII", 6, 20, 77, VERSION) + b"\xff\xff\xff\xff")
        reply = s.recv(16)
    except OSError:		# closed at once: the slots are not free yet
        reply = b""
    s.close()
    if len(reply) == 16 and struct.unpack("=IIII", reply)[2] == 77:
        print("served")
        break
    time.sleep(0.1)
PY
read -r _ pid0 < <(grep '^uid0 ' "$work/caps.out")
read -r _ pid65533 < <(grep '^uid65533 ' "$work/caps.out")
grep -q "control: refused uid 0 pid $pid0: too many connections" "$SYNCD_LOG" ||
    fail "the 9th connection of uid 0 was not logged"
grep -q "control: refused uid 65533 pid $pid65533: too many connections" "$SYNCD_LOG" ||
    fail "the 17th connection was not logged"
grep -qx served "$work/caps.out" || fail "syncd did not serve after the caps"
chmod 660 "$sock"
# A normal write through mcpd after the burst.
id1=$(id_of INBOX 1)
call "$murl" flag_message "{\"id\":$id1,\"add\":[\"\\\\Flagged\"]}" > "$work/r.json"
answered "$work/r.json" ok
dovecot_flags INBOX 1 | grep -q '\\Flagged' || fail "server: UID 1 not \\Flagged"

# --- MCP_AUTH=jwt: the write scope gates the write tools
mkdir "$work/as"
cp "$src/tests/integration/oauth_as.mjs" "$work/as/"
ln -s "$deps/node_modules" "$work/as/node_modules"
jport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
resource=http://127.0.0.1:$jport/mcp
RESOURCE=$resource OUT=$work/as/facts.json node "$work/as/oauth_as.mjs" 2>"$work/as/as.log" &
testenv_track "$!"
until_ok '[ -s "$work/as/facts.json" ]' || fail "the AS did not start: $(cat "$work/as/as.log")"
issuer=$(jq_ 'd["issuer"]' < "$work/as/facts.json")
endpoint=$(jq_ 'd["token_endpoint"]' < "$work/as/facts.json")
token() {	# scope: a client_credentials JWT for the resource
	curl -sS --max-time 10 -d client_id=es256 -d client_secret=s3cret-es256 \
	    -d grant_type=client_credentials -d "scope=$1" -d "resource=$resource" "$endpoint" |
	    jq_ 'd["access_token"]'
}
start_mcpd mcpd-jwt "$SYNCD_DATA/index.db" "$sock" MCP_AUTH=jwt MCP_LISTEN=127.0.0.1:$jport \
    MCP_RESOURCE_URL="$resource" MCP_OAUTH_ISSUER="$issuer"
jurl=$url
read_token=$(token mail.read)
write_token=$(token "mail.read mail.write")
[ -n "$read_token" ] && [ -n "$write_token" ] || fail "no token from the AS"
sub=$(python3 -c 'import base64,json,sys; p=sys.argv[1].split(".")[1]; print(json.loads(base64.urlsafe_b64decode(p+"==="))["sub"])' "$write_token")
[ -n "$sub" ] && [ "$sub" != local ] || fail "token subject '$sub' would not tell a JWT write apart"
# Which of these write tools tools/list names (other tools may come and go).
write_tools() { jq_ '" ".join(sorted({"flag_message", "label_message", "move_message", "trash_message"} & {t["name"] for t in d}))'; }
id2=$(id_of INBOX 2)
rows=$(idx "SELECT count(*) FROM write_log")
# docs/auth.md: HTTP 403 asking for the write scope (step-up), which the SDK
# client without an auth provider reports as an error (thrown, in a batch)
MCP_BEARER_TOKEN=$read_token mcp_batch "$jurl" read.flag read.label <<EOF
read.list list
read.flag flag_message {"id":$id2,"add":["\\\\Flagged"]}
read.label label_message {"id":$id2,"add":["project-x"]}
EOF
[ -z "$(write_tools < "$work/read.list.json")" ] || fail "tools/list with mail.read: $(write_tools < "$work/read.list.json")"
grep -q '"search_messages"' "$work/read.list.json" || fail "tools/list with mail.read lacks the read tools"
grep -q '^{"thrown":' "$work/read.flag.json" || fail "mail.read call answered: $(cat "$work/read.flag.json")"
grep -q "403" "$work/read.flag.json" && grep -q "flag_message needs the scope mail.write" "$work/read.flag.json" ||
    fail "mail.read call: $(cat "$work/read.flag.json")"
grep -q '^{"thrown":' "$work/read.label.json" ||
    fail "mail.read label call answered: $(cat "$work/read.label.json")"
grep -q "403" "$work/read.label.json" && grep -q "label_message needs the scope mail.write" "$work/read.label.json" ||
    fail "mail.read label call: $(cat "$work/read.label.json")"
[ "$(idx "SELECT count(*) FROM write_log")" = "$rows" ] || fail "a scope refusal reached syncd"
dovecot_flags INBOX 2 | grep -q '\\Flagged' && fail "server: UID 2 \\Flagged by a mail.read token"
MCP_BEARER_TOKEN=$write_token mcp_batch "$jurl" <<EOF
write.list list
r flag_message {"id":$id2,"add":["\\\\Flagged"]}
EOF
[ "$(write_tools < "$work/write.list.json")" = "flag_message label_message move_message trash_message" ] ||
    fail "tools/list with mail.write: $(write_tools < "$work/write.list.json")"
answered "$work/r.json" ok
dovecot_flags INBOX 2 | grep -q '\\Flagged' || fail "server: UID 2 not \\Flagged"
[ "$(last_log requested_by)" = "$sub" ] || fail "write_log: asked by $(last_log requested_by), want $sub"
grep -qF -e "$write_token" "$work/mcpd-jwt.log" "$SYNCD_LOG" && fail "a token reached a log"

# --- Trash loses its \Trash role upstream: refused, nothing moved.  A folder
# named Trash would get the role by its name (docs/syncd.md "Roles without
# SPECIAL-USE"), so the folder also takes a name that is no role's.
[ "$(idx "SELECT role FROM folders WHERE name='Trash'")" = '\Trash' ] || fail "index: Trash has no \\Trash role"
sed -i '/mailbox Trash {/,/}/d' "$DOVECOT_CONF"
dovecot_reload
dovecot_doveadm mailbox rename -u "$DOVECOT_USER" Trash Papierkorb
trash_listed() {
	python3 - "$DOVECOT_IMAP_PORT" "$DOVECOT_USER" "$DOVECOT_PASSWORD" <<'PY'
import imaplib, sys
m = imaplib.IMAP4('127.0.0.1', int(sys.argv[1])); m.login(sys.argv[2], sys.argv[3])
sys.exit(0 if any(b'\\Trash' in l for l in m.list()[1]) else 1)
PY
}
until_ok '! trash_listed' || fail "Dovecot still lists a \\Trash folder"
tick
[ -z "$(idx "SELECT role FROM folders WHERE name='Papierkorb'")" ] ||
    fail "index: the former Trash keeps the \\Trash role the server dropped"
id3=$(id_of INBOX 3)
call "$murl" trash_message "{\"id\":$id3}" > "$work/r.json"
answered "$work/r.json" refused 'no folder has the \\\\Trash special-use role'
server_uids INBOX | grep -qx 3 || fail "server: UID 3 left INBOX"
[ -z "$(server_uids Papierkorb)" ] || fail "server: the former Trash is not empty"

# --- a server without UIDPLUS (nor MOVE): move_message is refused, nothing sent
caps() {	# Dovecot's capabilities after login, one line
	python3 - "$DOVECOT_IMAP_PORT" "$DOVECOT_USER" "$DOVECOT_PASSWORD" <<'PY'
import imaplib, sys
m = imaplib.IMAP4('127.0.0.1', int(sys.argv[1])); m.login(sys.argv[2], sys.argv[3])
print(' '.join(m.capability()[1][0].decode().split())); m.logout()
PY
}
plain=$(caps | tr ' ' '\n' | grep -vixE 'UIDPLUS|MOVE' | paste -sd ' ')
printf 'protocol imap {\n  imap_capability = %s\n}\n' "$plain" >> "$DOVECOT_CONF"
dovecot_reload
until_ok '! caps | grep -qiwE "UIDPLUS|MOVE"' || fail "Dovecot still offers UIDPLUS or MOVE"
writes() { dovecot_count_commands ' UID (MOVE|COPY|STORE|EXPUNGE) '; }
before=$(writes) selects=$(dovecot_count_commands ' SELECT ')
[ "$before" -gt 0 ] || fail "the rawlog shows none of the earlier writes: this check would see nothing"
id4=$(id_of INBOX 4)
call "$murl" move_message "{\"id\":$id4,\"destination\":\"Archive\"}" > "$work/r.json"
answered "$work/r.json" refused "does not offer UIDPLUS"
server_uids INBOX | grep -qx 4 || fail "server: UID 4 left INBOX"
[ -z "$(server_uids Archive)" ] || fail "server: Archive is not empty"
[ "$(idx "SELECT f.name FROM messages m JOIN folders f ON f.id=m.folder_id WHERE m.id=$id4")" = INBOX ] ||
    fail "index: row $id4 left INBOX"
# The write process's session is in the rawlog (its SELECT; not its LOGOUT: syncd
# kills a write process once it has answered, so LOGOUT may never be sent), and
# no write command follows it.
until_ok '[ "$(dovecot_count_commands " SELECT ")" -gt "$selects" ]' || fail "no write session in the rawlog"
[ "$(writes)" = "$before" ] || fail "a write command reached the server without UIDPLUS"
# create_draft needs no UIDPLUS: the draft is saved (Dovecot still answers
# APPENDUID with the capability hidden; a server that does not leaves the id
# null and the tick indexes it), and after a tick it is indexed exactly once.
ndrafts=$(server_uids Drafts | wc -l)
call "$murl" create_draft '{"to":["a@example.org"],"subject":"saved without uidplus","body":"x"}' > "$work/r.json"
answered "$work/r.json" ok "draft saved in 'Drafts'"
[ "$(server_uids Drafts | wc -l)" = $((ndrafts + 1)) ] || fail "server: the draft was not saved"
tick
[ "$(idx "SELECT count(*) FROM messages WHERE subject='saved without uidplus' AND flags & 16")" = 1 ] ||
    fail "the draft is not indexed exactly once after a tick"

[ "$(idx "SELECT count(*) FROM write_log WHERE outcome='pending'")" = 0 ] || fail "pending rows left"
stop_syncd
syncd_log_clean "$SYNCD_LOG" "$work/mcpd.log" "$work/mcpd-jwt.log" || fail "sanitizer report"

# ------------------------------------------------- the scripted peer: deadlines
mkdir "$work/peer"
# Not through the function: $! must be the peer itself, for cleanup to stop it.
"$python" "$src/tests/lib/imap_peer.py" --mode stall_store --port-file "$work/peer/port" > /dev/null 2>&1 &
testenv_track "$!"
until_ok '[ -s "$work/peer/port" ]' || fail "the peer did not start"
transcript=$work/peer/port.log
(umask 077; printf 'peer-pass-word' > "$work/peer/pw")
psock=$work/peer.sock
export SYNCD_LOG=$work/peer/syncd.log
DOVECOT_IMAP_PORT=$(cat "$work/peer/port") DOVECOT_USER=alice DOVECOT_PASSWORD_FILE=$work/peer/pw \
    syncd_init "$work/peer" SYNCD_SOCKET="$psock" SYNC_FOLDERS=INBOX \
    SYNC_INTERVAL=3600 SYNC_WRITE_TIMEOUT=3 SYNC_RANGE_TIMEOUT=5
syncd --backfill > /dev/null || fail "peer: backfill"
[ "$(index_uids INBOX | paste -sd ' ')" = "1 2 3" ] || fail "peer: index holds $(index_uids INBOX)"
start_syncd "$psock"
until_ok '[ "$(ticks_done)" -ge 1 ]' || fail "peer: the first tick did not finish"
start_mcpd mcpd-peer "$SYNCD_DATA/index.db" "$psock"
purl=$url

# A UID STORE the server never answers.  While it hangs, the write process
# (syncd's only child between ticks) holds no descriptor of the control
# socket (not the listener, not a client's connection), nor any of the
# index's files or the data directory's lock.
pid1=$(id_of INBOX 1)
call "$purl" flag_message "{\"id\":$pid1,\"add\":[\"\\\\Flagged\"]}" > "$work/r1.json" &
caller=$!
until_ok 'grep -q " UID STORE " "$transcript"' || fail "peer: no UID STORE arrived"
wproc=$(pgrep -P "$daemon") || fail "no write process"
python3 - "$psock" "$daemon" "$wproc" "$SYNCD_DATA" <<'PY' || fail "descriptors in the write process"
import os, sys
path, parent, child, data = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
ours = set()	# the listener and the accepted connections are bound to the path
for line in open('/proc/net/unix').read().splitlines()[1:]:
    f = line.split()
    if len(f) >= 8 and f[7] == path:
        ours.add(f[6])
def links(pid):	# what pid's descriptors point at
    out = []
    for fd in os.listdir('/proc/%s/fd' % pid):
        try:
            out.append(os.readlink('/proc/%s/fd/%s' % (pid, fd)))
        except FileNotFoundError:
            continue
    return out
def sockets(pid):
    return {t[8:-1] for t in links(pid) if t.startswith('socket:[')}
if not ours & sockets(parent):
    sys.exit("syncd itself holds none of %s: the check would see nothing" % sorted(ours))
held = ours & sockets(child)
if held:
    sys.exit("write process %s holds control socket inodes %s" % (child, sorted(held)))
def files(pid):	# what pid has open in the data directory (index.db*, syncd.lock)
    top = os.path.realpath(data) + '/'
    return {os.path.basename(t) for t in links(pid) if t.startswith(top)}
if not {'index.db', 'syncd.lock'} <= files(parent):
    sys.exit("syncd itself holds only %s: the check would see nothing" % sorted(files(parent)))
if files(child):
    sys.exit("write process %s holds %s" % (child, sorted(files(child))))
PY
# No tick starts while a write is in flight (a tick between a MOVE and its
# answer would see the message vanish and drop the row the answer re-keys):
# asked to sync now, the daemon waits for the write's end (its deadline).
ticks_begun() { grep -cE "syncd: tick [0-9]+\$" "$SYNCD_LOG" || true; }
ticks=$(ticks_begun)
kill -HUP "$daemon"
sleep 1
[ "$(ticks_begun)" = "$ticks" ] || fail "a tick began while a write was in flight"
wait "$caller" || fail "the SDK call failed"
until_ok '[ "$(ticks_begun)" -gt "$ticks" ]' || fail "the tick asked for did not begin after the write"
# (the peer greets nobody now: that tick gives up at SYNC_RANGE_TIMEOUT)
answered "$work/r1.json" failed "may or may not"
last_log detail | grep -q "may or may not" || fail "write_log detail: $(last_log detail)"

# A write process stuck before its session exists (the peer greets nobody
# now): the main loop kills it at the deadline.
pid2=$(id_of INBOX 2)
call "$purl" flag_message "{\"id\":$pid2,\"add\":[\"\\\\Seen\"]}" > "$work/r2.json"
answered "$work/r2.json" failed "did not finish in time; it may or may not have happened"
last_log detail | grep -q "deadline passed (SYNC_WRITE_TIMEOUT)" || fail "write_log detail: $(last_log detail)"
until_ok '! pgrep -P "$daemon" > /dev/null' || fail "the killed write process is still there"

# syncd keeps serving: a third request is answered.
call "$purl" flag_message '{"id":999999,"add":["\\Seen"]}' > "$work/r3.json"
grep -q "no such message in the index" "$work/r3.json" || fail "after the deadlines: $(cat "$work/r3.json")"
[ "$(idx "SELECT count(*) FROM write_log WHERE outcome='pending'")" = 0 ] || fail "peer: pending rows left"
stop_syncd
syncd_log_clean "$SYNCD_LOG" "$work/mcpd-peer.log" || fail "sanitizer report"
grep -q "peer-pass-word" "$SYNCD_LOG" && fail "the password is in a log"

ok=1
echo "test_writes_edges: ok"
