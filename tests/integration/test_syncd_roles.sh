#!/usr/bin/env bash
# Roles without SPECIAL-USE (docs/syncd.md "Roles without SPECIAL-USE"): a
# server with Courier's shape, an "INBOX." personal namespace with "." as
# the separator and no special-use flags, on real Dovecot.  syncd finds
# INBOX.Drafts, INBOX.Trash and INBOX.Sent Items by name (not a Trash deeper
# down, not a folder outside the namespace); list_folders says each role
# came from the name; trash_message and create_draft through mcpd land in
# those folders (checked with doveadm and a separate imaplib session), and
# in:sent / in:trash search them.
set -euo pipefail
src=${MB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
MB_BUILD_DIR=${MB_BUILD_DIR:-$src/build}
. "$src/tests/lib/dovecot.sh"
. "$src/tests/lib/syncd.sh"
. "$src/tests/lib/testenv.sh"
deps=$src/.deps/npm

if command -v couriertcpd >/dev/null 2>&1 || [ -x /usr/lib/courier/courier-imapd ]; then
	echo "Courier is installed, but this test drives Dovecot only:" \
	    "the INBOX.-namespace shape is checked on Dovecot"
else
	echo "Courier not installed: the INBOX.-namespace shape is checked on Dovecot"
fi

testenv_begin daemon:TERM mcpd:TERM
chmod 755 "$work"

mkdir "$work/srv"
DOVECOT_NAMESPACE=courier dovecot_start "$work/srv"
# The shape itself: what a client sees is what Courier shows.
python3 - "$DOVECOT_IMAP_PORT" "$DOVECOT_USER" "$DOVECOT_PASSWORD" > "$work/ns.txt" <<'PY'
import imaplib, sys
m = imaplib.IMAP4('127.0.0.1', int(sys.argv[1])); m.login(sys.argv[2], sys.argv[3])
print(m.namespace()[1][0].decode())
m.logout()
PY
grep -q '^(("INBOX." ".")) ' "$work/ns.txt" || fail "not Courier's namespace: $(cat "$work/ns.txt")"
python3 "$src/tests/lib/mkmail.py" "$work/inbox:4:in"
dovecot_load_maildir INBOX "$work"/inbox/*.eml
for f in INBOX.Drafts INBOX.Trash "INBOX.Sent Items" INBOX.Spam INBOX.Projects INBOX.Projects.Trash; do
	dovecot_create_folder "$f"
done
dovecot_doveadm mailbox list -u "$DOVECOT_USER" > "$work/list.txt"
grep -qx 'INBOX.Sent Items' "$work/list.txt" || fail "folders: $(cat "$work/list.txt")"

sock=$work/syncd.sock
syncd_init "$work" SYNCD_SOCKET="$sock" SYNCD_ALLOWED_UIDS=0 SYNC_INTERVAL=3600
syncd --once > /dev/null || fail "syncd --once"
idx() { syncd_sql "$1"; }
roles=$(idx "SELECT name||'='||coalesce(role,'-')||'/'||coalesce(role_source,'-') FROM folders ORDER BY name")
want='INBOX=-/-
INBOX.Drafts=\Drafts/name
INBOX.Projects=-/-
INBOX.Projects.Trash=-/-
INBOX.Sent Items=\Sent/name
INBOX.Spam=\Junk/name
INBOX.Trash=\Trash/name'
[ "$roles" = "$want" ] || fail "roles in the index:
$roles
want:
$want"

"$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" 2>>"$SYNCD_LOG" &
daemon=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || fail "no control socket"
rm -f "$work/port"
env MCP_AUTH=none MCP_LISTEN=127.0.0.1:0 MCP_INDEX="$SYNCD_DATA/index.db" MCP_PORT_FILE="$work/port" \
    SYNCD_SOCKET="$sock" MCP_RATE_LIMIT=1000 "$MB_BUILD_DIR/mcpd" 2>>"$work/mcpd.log" &
mcpd=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
url=http://127.0.0.1:$(cat "$work/port")/mcp
call() { node "$src/tests/integration/mcp_call.mjs" "$url" "$deps" "$@"; }
jq_() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))" "$1"; }

# list_folders: each role, and that it came from the name; none without a role.
call list_folders > "$work/r.json"
got=$(jq_ '"\n".join(f["name"]+"="+f.get("role","-")+"/"+f.get("role_source","-") for f in d["structuredContent"]["folders"])' < "$work/r.json")
[ "$got" = "$want" ] || fail "list_folders:
$got"
jq_ '[k for f in d["structuredContent"]["folders"] for k, v in f.items() if v is None]' < "$work/r.json" |
    grep -qx '\[\]' || fail "list_folders has nulls: $(cat "$work/r.json")"

# trash_message: to INBOX.Trash (not INBOX.Projects.Trash).
id1=$(idx "SELECT m.id FROM messages m JOIN folders f ON f.id=m.folder_id WHERE f.name='INBOX' AND m.uid=1")
call trash_message "{\"id\":$id1}" > "$work/r.json"
[ "$(jq_ 'd["structuredContent"]["outcome"]' < "$work/r.json")" = ok ] || fail "trash_message: $(cat "$work/r.json")"
[ "$(jq_ 'd["structuredContent"]["folder"]' < "$work/r.json")" = INBOX.Trash ] || fail "trash: $(cat "$work/r.json")"
[ "$(server_uids INBOX.Trash | wc -l)" = 1 ] || fail "server: INBOX.Trash does not hold the message"
server_uids INBOX | grep -qx 1 && fail "server: UID 1 still in INBOX"
[ "$(server_uids INBOX.Projects.Trash | wc -l)" = 0 ] || fail "server: the nested Trash got mail"

# create_draft: to INBOX.Drafts, read back by a separate session.
call create_draft '{"to":["bob@example.org"],"subject":"Courier draft","body":"Saved where Courier keeps drafts.\n"}' > "$work/r.json"
[ "$(jq_ 'd["structuredContent"]["outcome"]' < "$work/r.json")" = ok ] || fail "create_draft: $(cat "$work/r.json")"
[ "$(jq_ 'd["structuredContent"]["folder"]' < "$work/r.json")" = INBOX.Drafts ] || fail "draft: $(cat "$work/r.json")"
python3 - "$DOVECOT_IMAP_PORT" "$DOVECOT_USER" "$DOVECOT_PASSWORD" > "$work/draft.txt" <<'PY'
import imaplib, sys
m = imaplib.IMAP4('127.0.0.1', int(sys.argv[1])); m.login(sys.argv[2], sys.argv[3])
m.select('INBOX.Drafts', readonly=True)
typ, data = m.uid('FETCH', '1:*', '(FLAGS BODY.PEEK[HEADER.FIELDS (SUBJECT)])')
print(data[0][0].decode(), data[0][1].decode().strip())
m.logout()
PY
grep -q '\\Draft' "$work/draft.txt" && grep -q 'Subject: Courier draft' "$work/draft.txt" ||
    fail "the draft as a client reads it: $(cat "$work/draft.txt")"

# The query language's roles: in:trash finds the trashed message, in:drafts the draft.
call search_messages '{"query":"in:trash"}' > "$work/r.json"
[ "$(jq_ '[h["folder"] for h in d["structuredContent"]["results"]]' < "$work/r.json")" = "['INBOX.Trash']" ] ||
    fail "in:trash: $(cat "$work/r.json")"
call search_messages '{"query":"in:drafts"}' > "$work/r.json"
[ "$(jq_ '[h["folder"] for h in d["structuredContent"]["results"]]' < "$work/r.json")" = "['INBOX.Drafts']" ] ||
    fail "in:drafts: $(cat "$work/r.json")"
syncd_log_clean
ok=1
echo "PASS: roles by name in the INBOX. namespace (Drafts, Trash, Sent Items, Spam)"
