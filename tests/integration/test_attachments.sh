#!/usr/bin/env bash
# Attachments end to end (docs/attachments.md), through real Dovecot, syncd
# and mcpd: every fixture of tests/lib/mkattach.py is mailed as an
# attachment; after a backfill each document is found by its content and by
# its name, a hit names the attachment it came from, get_message lists the
# attachments with their text status, get_attachment returns the text, and
# mail://attachment/{id} returns the exact bytes (sha256 compared) up to the
# cap.  Hostile documents (encrypted, truncated, a zip bomb) leave the
# message indexed with the reason on the attachment row.
set -euo pipefail
src=${MB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
MB_BUILD_DIR=${MB_BUILD_DIR:-$src/build}
. "$src/tests/lib/dovecot.sh"
. "$src/tests/lib/syncd.sh"

work=$(mktemp -d)
ok=0
pid=
cleanup() {
	[ -z "$pid" ] || kill "$pid" 2>/dev/null || true
	if [ $ok = 1 ]; then rm -rf "$work"; else echo "kept $work" >&2; tail -n 30 "$work/syncd.log" >&2 || true; fi
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

python3 "$src/tests/lib/mkattach.py" "$work/fx"
printf '\x89PNG\r\n\x1a\nnot really an image' > "$work/fx/logo.png"
mkdir "$work/mail"
python3 - "$work/fx" "$work/mail" <<'PY'
import os, sys
from email.message import EmailMessage
fx, out = sys.argv[1:]
types = {"pdf": "application/pdf", "docx": "application/vnd.openxmlformats-officedocument."
         "wordprocessingml.document", "xlsx": "application/vnd.openxmlformats-officedocument."
         "spreadsheetml.sheet", "odt": "application/vnd.oasis.opendocument.text",
         "ics": "text/calendar", "csv": "text/csv", "png": "image/png"}
names = ["plain.pdf", "pages.pdf", "cjk.pdf", "encrypted.pdf", "truncated.pdf", "report.docx",
         "book.xlsx", "notes.odt", "bomb.docx", "invite.ics", "legacy.csv", "logo.png"]
for i, name in enumerate(names):
    m = EmailMessage()
    m["From"] = "Sender <sender@example.org>"
    m["To"] = "me@example.org"
    m["Subject"] = "message %d" % i
    m["Date"] = "Tue, 01 Dec 2026 10:%02d:00 +0000" % i
    m["Message-ID"] = "<att%d@example.org>" % i
    m.set_content("See the attached file.\n")
    data = open(os.path.join(fx, name), "rb").read()
    maintype, subtype = types[name.rsplit(".", 1)[1]].split("/")
    if name.endswith(".csv"):
        m.add_attachment(data, maintype=maintype, subtype=subtype, filename=name,
                         params={"charset": "windows-1252"})
    else:
        m.add_attachment(data, maintype=maintype, subtype=subtype, filename=name)
    open(os.path.join(out, "%02d.eml" % i), "wb").write(bytes(m))
PY

mkdir "$work/srv"
dovecot_start "$work/srv"
dovecot_load_maildir INBOX "$work"/mail/*.eml
syncd_init "$work" SYNC_WORKERS=2 EXTRACT_CPU_SECONDS=5
syncd --backfill > /dev/null || fail "backfill exit $?"
[ "$(syncd_sql "SELECT count(*) FROM messages")" = 12 ] || fail "a message was lost"
status() { syncd_sql "SELECT extract_status FROM attachments WHERE filename = '$1'"; }
[ "$(status plain.pdf)" = ok ] || fail "plain.pdf: $(status plain.pdf)"
[[ "$(status encrypted.pdf)" == encrypted:* ]] || fail "encrypted.pdf: $(status encrypted.pdf)"
[[ "$(status truncated.pdf)" == failed:* ]] || fail "truncated.pdf: $(status truncated.pdf)"
[[ "$(status bomb.docx)" == refused:* ]] || fail "bomb.docx: $(status bomb.docx)"
[[ "$(status logo.png)" == skipped:* ]] || fail "logo.png: $(status logo.png)"
# The same bytes are extracted once: the outcome sits beside the blob.
sha=$(syncd_sql "SELECT sha256 FROM attachments WHERE filename = 'plain.pdf'")
[ -f "$SYNCD_DATA/blobs/${sha:0:2}/${sha:2}.txt" ] || fail "no extraction cache for $sha"

rm -f "$work/port"
env MCP_AUTH=none MCP_LISTEN=127.0.0.1:0 MCP_INDEX="$SYNCD_DATA/index.db" DATA_DIR="$SYNCD_DATA" \
    MCP_PORT_FILE="$work/port" MCP_READ_ONLY=1 MCP_ATTACHMENT_MAX_BYTES=100000 \
    "$MB_BUILD_DIR/mcpd" 2>>"$work/mcpd.log" &
pid=$!
for _ in $(seq 1 100); do
	[ -s "$work/port" ] && break
	sleep 0.1
done
url=http://127.0.0.1:$(cat "$work/port")/mcp
search() { printf '{"method":"tools/call","params":{"name":"search_messages","arguments":{"query":%s}}}' \
    "$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1")"; }
call() { python3 "$src/tests/lib/mcp_http.py" "$url" "$@"; }
py() { python3 -c "import json,sys; r=json.loads(sys.stdin.read()); $1"; }

# Found by content (each format) and by name; the hit names the attachment.
expect_hit() {	# query filename matched
	call "$(search "$1")" > "$work/r.json"
	py "h=r['structuredContent']['results']; assert len(h)==1, h; a=h[0]['attachment']; \
assert a['name']=='$2' and a['matched']=='$3', a; \
assert '$3'=='name' or '**' in a['snippet'], a" < "$work/r.json" || fail "query '$1': $(cat "$work/r.json")"
}
expect_hit Zebulon plain.pdf text
expect_hit "bravo charlie" pages.pdf text
expect_hit 契約書 cjk.pdf text
expect_hit walrus report.docx text
expect_hit Quokka book.xlsx text
expect_hit narwhal notes.odt text
expect_hit Lovelace invite.ics text
expect_hit Besançon legacy.csv text
expect_hit "attachment:Zebulon" plain.pdf text
expect_hit "filename:xlsx" book.xlsx name
expect_hit "filename:logo" logo.png name
call "$(search "filename:pdf")" | py "assert len(r['structuredContent']['results'])==5, r" ||
    fail "filename:pdf does not find the five PDFs"
call "$(search "attachment:message")" | py "assert r['structuredContent']['results']==[], r" ||
    fail "attachment: matched outside attachments"
# The text block says where the match came from.
call "$(search Zebulon)" | py "assert 'matched in the text of attachment id' in r['content'][0]['text'], r" ||
    fail "hit text does not name the attachment"

# get_message lists the attachments with their text status.
mid=$(syncd_sql "SELECT message_id FROM attachments WHERE filename = 'encrypted.pdf'")
call "{\"method\":\"tools/call\",\"params\":{\"name\":\"get_message\",\"arguments\":{\"id\":$mid}}}" |
    py "a=r['structuredContent']['attachments'][0]; assert a['name']=='encrypted.pdf' and \
not a['text_available'] and a['text_status'].startswith('encrypted:') and a['id']>0, a" ||
    fail "get_message attachment list"

# get_attachment returns the text, fenced.
aid=$(syncd_sql "SELECT id FROM attachments WHERE filename = 'book.xlsx'")
call "{\"method\":\"tools/call\",\"params\":{\"name\":\"get_attachment\",\"arguments\":{\"id\":$aid}}}" |
    py "s=r['structuredContent']; assert s['text_available'] and 'Sheet: Summary' in s['text'] \
and s['name']=='book.xlsx', s; assert '<untrusted-mail' in r['content'][0]['text']" ||
    fail "get_attachment text"
call '{"method":"tools/call","params":{"name":"get_attachment","arguments":{"id":999999}}}' |
    py "assert r['isError'] and 'no attachment with id 999999' in r['content'][0]['text'], r" ||
    fail "get_attachment of a missing id"

# The resource: the exact bytes, and a clear error above the cap.
for f in plain.pdf book.xlsx; do
	aid=$(syncd_sql "SELECT id FROM attachments WHERE filename = '$f'")
	call "{\"method\":\"resources/read\",\"params\":{\"uri\":\"mail://attachment/$aid\"}}" |
	    py "import base64,hashlib; c=r['contents'][0]; \
print(hashlib.sha256(base64.b64decode(c['blob'])).hexdigest(), c['mimeType'])" > "$work/sha"
	[ "$(cut -d' ' -f1 "$work/sha")" = "$(sha256sum < "$work/fx/$f" | cut -d' ' -f1)" ] ||
	    fail "resource bytes of $f differ"
done
grep -q " application/vnd.openxmlformats-officedocument.spreadsheetml.sheet$" "$work/sha" ||
    fail "resource mime type: $(cat "$work/sha")"
aid=$(syncd_sql "SELECT id FROM attachments WHERE filename = 'bomb.docx'")
call "{\"method\":\"resources/read\",\"params\":{\"uri\":\"mail://attachment/$aid\"}}" |
    py "e=r['error']; assert 'bytes, over the 100000-byte cap' in e['message'], e" ||
    fail "over-cap resource error"
call '{"method":"resources/templates/list"}' |
    py "assert any(t['uriTemplate']=='mail://attachment/{id}' for t in r['resourceTemplates']), r" ||
    fail "no attachment resource template"

# An upgraded install: rows stored before extraction get their text from the
# blob on the next tick.  (The sqlite3 shell cannot write messages: its FTS
# needs the mb_cjk tokenizer; the attachment rows alone are reset.)
syncd_sql "UPDATE attachments SET extract_status = NULL, extracted_text = NULL
    WHERE filename IN ('plain.pdf', 'notes.odt')"
rm -f "$SYNCD_DATA/blobs/${sha:0:2}/${sha:2}.txt"
aid=$(syncd_sql "SELECT id FROM attachments WHERE filename = 'notes.odt'")
call "{\"method\":\"tools/call\",\"params\":{\"name\":\"get_attachment\",\"arguments\":{\"id\":$aid}}}" |
    py "s=r['structuredContent']; assert not s['text_available'] and \
s['text_status'].startswith('not extracted yet'), s" || fail "a not-yet-extracted attachment"
# Blob collection: an unreferenced old blob goes, a referenced old one stays.
orphan=ab$(printf '%062d' 7)
mkdir -p "$SYNCD_DATA/blobs/ab"
echo orphan > "$SYNCD_DATA/blobs/ab/${orphan:2}"
echo cache > "$SYNCD_DATA/blobs/ab/${orphan:2}.txt"
touch -d '3 hours ago' "$SYNCD_DATA/blobs/ab/${orphan:2}" "$SYNCD_DATA/blobs/${sha:0:2}/${sha:2}"
syncd --once || fail "tick exit $?"
grep -q "attachments: extracted 2 stored attachment(s); 0 left" "$SYNCD_LOG" ||
    fail "no re-extraction progress line"
[ "$(status plain.pdf)" = ok ] || fail "plain.pdf not re-extracted: $(status plain.pdf)"
expect_hit Zebulon plain.pdf text
expect_hit narwhal notes.odt text
# The message's attachment text (messages.att_text, stored packed: the sqlite3
# shell cannot read it) is what attachment: searches.
expect_hit attachment:narwhal notes.odt text
[ ! -e "$SYNCD_DATA/blobs/ab/${orphan:2}" ] || fail "unreferenced blob kept"
[ ! -e "$SYNCD_DATA/blobs/ab/${orphan:2}.txt" ] || fail "unreferenced blob's cache kept"
[ -f "$SYNCD_DATA/blobs/${sha:0:2}/${sha:2}" ] || fail "a referenced blob was removed"
grep -q "attachments: removed 1 blob(s)" "$SYNCD_LOG" || fail "no collection line"
ok=1
echo "ok: attachments"
