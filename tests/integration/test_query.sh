#!/usr/bin/env bash
# The query language end to end (docs/query.md): real Dovecot, `syncd
# --backfill`, real mcpd, the official MCP SDK client.  IMAP keywords set on
# the server by another IMAP session come back as hit labels and are found by
# label:; a keyword changed by that session is followed after a sync; the
# account's own addresses (MY_ADDRESSES) answer from:me and to:me; in:sent goes
# by the folder's special-use role; list:, larger:, id:, thread:, date: and
# total reach the index; an unknown prefix is a tool error naming the known
# ones.
set -euo pipefail
src=${MB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
MB_BUILD_DIR=${MB_BUILD_DIR:-$src/build}
. "$src/tests/lib/dovecot.sh"
. "$src/tests/lib/syncd.sh"
. "$src/tests/lib/testenv.sh"
deps=$src/.deps/npm

testenv_begin mcpd:TERM
chmod 755 "$work"

mkdir "$work/srv" "$work/in" "$work/sent"
dovecot_start "$work/srv"
mail() {	# FILE FROM TO SUBJECT DATE [HEADER...] -- body from stdin
	local f=$1 from=$2 to=$3 subj=$4 date=$5
	shift 5
	{
		printf 'From: %s\nTo: %s\nSubject: %s\nDate: %s\n' "$from" "$to" "$subj" "$date"
		printf '%s\n' "$@"
		printf 'MIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\n\n'
		cat
	} > "$f"
}
echo "The budget plan for March." | mail "$work/in/1.eml" "Alice <alice@example.org>" \
    "Me <ME@example.com>" "Budget plan" "Fri, 1 Mar 2024 10:00:00 +0000" \
    "Message-ID: <q1@example.org>" "List-Id: Dev list <dev.lists.example.org>"
python3 -c "print('budget reply ' + 'padding ' * 3000)" | mail "$work/in/2.eml" \
    "Bob <bob@example.org>" "carol@example.org" "Re: Budget plan" "Sat, 2 Mar 2024 10:00:00 +0000" \
    "Message-ID: <q2@example.org>" "In-Reply-To: <q1@example.org>"
echo "Lunch on Tuesday?" | mail "$work/in/3.eml" "carol@example.org" "someone@example.org" \
    "Lunch" "Mon, 1 May 2023 12:00:00 +0000" "Cc: me@example.com"
echo "Here are the budget numbers." | mail "$work/sent/1.eml" "me@example.com" \
    "bob@example.org" "Budget numbers" "Sun, 3 Mar 2024 09:00:00 +0000"
dovecot_load_maildir INBOX "$work"/in/1.eml "$work"/in/2.eml "$work"/in/3.eml
dovecot_load_maildir Sent "$work"/sent/1.eml

# Another session sets keywords, as a mail client would.
imap_store() {	# FOLDER UID +FLAGS|-FLAGS "(kw ...)"
	python3 - "$DOVECOT_IMAP_PORT" "$DOVECOT_USER" "$DOVECOT_PASSWORD" "$@" <<'PY'
import imaplib, sys
port, user, pw, folder, uid, op, flags = sys.argv[1:8]
m = imaplib.IMAP4('127.0.0.1', int(port)); m.login(user, pw)
m.select(folder)
typ, data = m.uid('STORE', uid, op, flags)
if typ != 'OK':
    sys.exit('STORE: %r' % (data,))
m.logout()
PY
}
imap_store INBOX 1 +FLAGS '($Label1 project-x)'
imap_store INBOX 2 +FLAGS '(done)'
dovecot_flags INBOX 1 | grep -qw project-x || fail "server: UID 1 has no project-x keyword"

syncd_init "$work" SYNC_FOLDERS=INBOX,Sent SYNC_WORKERS=1 LOG_LEVEL=info \
    MY_ADDRESSES=me@example.com
syncd --backfill > /dev/null || fail "backfill: $(tail -n 20 "$SYNCD_LOG")"
[ "$(syncd_sql 'SELECT count(*) FROM messages')" = 4 ] || fail "the index does not hold 4 messages"

rm -f "$work/port"
env TZ=UTC MCP_AUTH=none MCP_LISTEN=127.0.0.1:0 MCP_INDEX="$SYNCD_DATA/index.db" \
    MCP_PORT_FILE="$work/port" MCP_RATE_LIMIT=1000 MCP_READ_ONLY=1 \
    "$MB_BUILD_DIR/mcpd" 2>>"$work/mcpd.log" &
mcpd=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || fail "mcpd did not start: $(cat "$work/mcpd.log")"
url=http://127.0.0.1:$(cat "$work/port")/mcp
# search QUERY -> the answer's JSON ({isError, structuredContent, text})
search() { node "$src/tests/integration/mcp_call.mjs" "$url" "$deps" search_messages \
    "$(python3 -c 'import json,sys; print(json.dumps({"query": sys.argv[1]}))' "$1")"; }
py() { python3 -c "import json,sys; d=json.load(sys.stdin); s=d['structuredContent']; print($1)"; }
# expect: lines "QUERY<tab>subject,subject<tab>TOTAL" on stdin, each query's
# hits' subjects (in any order) and exact total; every query in one SDK session
# (mcp_call.mjs batch), the answers checked after.
expect() {
	local out
	cat > "$work/expect.tsv"
	python3 -c '
import json, sys
for line in open(sys.argv[1]):
    print(json.dumps({"tool": "search_messages", "arguments": {"query": line.split("\t")[0]}}))
' "$work/expect.tsv" | node "$src/tests/integration/mcp_call.mjs" "$url" "$deps" batch \
	    > "$work/expect.out" || fail "the batch of searches failed"
	out=$(python3 - "$work/expect.tsv" "$work/expect.out" <<'PY'
import json, sys
specs = open(sys.argv[1]).read().splitlines()
outs = open(sys.argv[2]).read().splitlines()
if len(specs) != len(outs):
    sys.exit("%d answers for %d queries" % (len(outs), len(specs)))
bad = []
for spec, line in zip(specs, outs):
    q, subjects, total = spec.split("\t")
    d = json.loads(line)
    s = d["structuredContent"]
    got = (",".join(sorted(h["subject"] for h in s["results"])) + " " + str(s["total"]) + " " +
           str(s["total_exact"])) if s else repr(d)
    want = "%s %s True" % (subjects, total)
    if got != want:
        bad.append("'%s': got '%s', want '%s'" % (q, got, want))
sys.exit("\n".join(bad) if bad else 0)
PY
	) || fail "$out"
}

# labels: set by the other session, shown in hits, searched by label:/tag:/keyword:
r=$(search 'label:project-x')
[ "$(py "sorted(s['results'][0]['labels'])" <<< "$r")" = "['\$Label1', 'project-x']" ] ||
    fail "labels of UID 1: $r"
py "s['results'][0]['labels']" <<< "$(search 'lunch')" | grep -qx '\[\]' || fail "Lunch has labels"
grep -q 'labels: ' <<< "$(py "d['text']" <<< "$r")" || fail "the text block lacks the labels: $r"
# relative dates: N days back from today reaches 2024-01-01 (mcpd runs with TZ=UTC)
days=$(( ($(date -u +%s) - $(date -u -d 2024-01-01 +%s)) / 86400 ))
tid=$(py "s['results'][0]['thread_id']" <<< "$(search 'id:q1@example.org')")
# labels, the account's own addresses, the Sent role, the List-Id, sizes, ids, dates
expect <<EOF
label:project-x	Budget plan	1
tag:\$LABEL1	Budget plan	1
budget keyword:done	Re: Budget plan	1
budget -label:done	Budget numbers,Budget plan	2
budget	Budget numbers,Budget plan,Re: Budget plan	3
from:me	Budget numbers	1
to:me	Budget plan,Lunch	2
budget -from:me	Budget plan,Re: Budget plan	2
in:sent	Budget numbers	1
in:inbox budget	Budget plan,Re: Budget plan	2
list:dev.lists	Budget plan	1
larger:10K	Re: Budget plan	1
smaller:10K budget	Budget numbers,Budget plan	2
id:<q2@example.org>	Re: Budget plan	1
date:2023	Lunch	1
date:2024-03-02..2024-03-03	Budget numbers,Re: Budget plan	2
older_than:${days}d	Lunch	1
newer_than:${days}d	Budget numbers,Budget plan,Re: Budget plan	3
thread:$tid	Budget plan,Re: Budget plan	2
EOF
grep -q '^2 messages match\.' <<< "$(py "d['text']" <<< "$(search "thread:$tid")")" ||
    fail "the text block does not give the total"

# an unknown prefix: a tool error that names the known ones
r=$(search 'project:x budget')
[ "$(py "d['isError']" <<< "$r")" = True ] || fail "project:x was searched: $r"
for p in label: newer_than: in: list: size:; do
	grep -q "$p" <<< "$r" || fail "the unknown-prefix error does not name $p: $r"
done

# the other session changes the keywords; a sync follows them
imap_store INBOX 1 -FLAGS '(project-x)'
imap_store INBOX 1 +FLAGS '(urgent)'
syncd --once > /dev/null || fail "sync: $(tail -n 20 "$SYNCD_LOG")"
expect <<EOF
label:project-x		0
label:urgent	Budget plan	1
EOF
syncd_log_clean "$SYNCD_LOG"
ok=1
echo "test_query: ok"
