#!/usr/bin/env bash
# The overview tools and labels end to end: real Dovecot, syncd, mcpd and
# the official MCP SDK client (docs/mcpd.md "Overviews").  Keywords set on
# the server by another session (doveadm), before the backfill and after it,
# come back as labels in get_message and as count_messages groups;
# count_messages filters with the search language; find_contacts finds a
# person by a name fragment with the mail exchanged both ways;
# awaiting_reply names the thread the account answered last (waiting on
# others) and the one a stranger wrote last (waiting on me).
set -euo pipefail
# (grep reads a pipe to its end here, no -q: pipefail would see the writer's SIGPIPE)
src=${MB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
MB_BUILD_DIR=${MB_BUILD_DIR:-$src/build}
. "$src/tests/lib/dovecot.sh"
. "$src/tests/lib/syncd.sh"
. "$src/tests/lib/mcp_batch.sh"

work=$(mktemp -d)
chmod 755 "$work"
ok=0
mcpd=
cleanup() {
	[ -z "$mcpd" ] || kill -TERM "$mcpd" 2>/dev/null || true
	wait 2>/dev/null || true
	if [ $ok = 1 ]; then rm -rf "$work"; else echo "kept $work" >&2; tail -n 30 "$work/syncd.log" >&2 || true; fi
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# mail FILE FROM TO SUBJECT DATE MSGID [IN-REPLY-TO]
mail() {
	{
		printf 'From: %s\nTo: %s\nSubject: %s\nDate: %s\nMessage-ID: <%s>\n' "$2" "$3" "$4" "$5" "$6"
		[ -z "${7:-}" ] || printf 'In-Reply-To: <%s>\n' "$7"
		printf 'MIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\n\nAbout %s.\n' "$4"
	} > "$1"
}
mkdir "$work/in" "$work/sent" "$work/srv"
mail "$work/in/1.eml" 'Anna Bell <anna@acme.example>' 'Me <me@example.org>' 'invoice 2023' \
    'Tue, 10 Jan 2023 10:00:00 +0000' a1@t
mail "$work/in/2.eml" 'Anna <Anna@Acme.example>' 'me@example.org' 'invoice 2024' \
    'Mon, 12 Feb 2024 10:00:00 +0000' a2@t
mail "$work/in/3.eml" 'Bob <bob@other.example>' 'me@example.org' 'lunch?' \
    'Tue, 13 Feb 2024 10:00:00 +0000' b1@t
mail "$work/sent/1.eml" 'Me <me@example.org>' 'Anna Bell <anna@acme.example>' 'Re: invoice 2024' \
    'Wed, 14 Feb 2024 10:00:00 +0000' m1@t a2@t

dovecot_start "$work/srv"
dovecot_load_maildir INBOX "$work"/in/1.eml "$work"/in/2.eml "$work"/in/3.eml
dovecot_load_maildir Sent "$work"/sent/1.eml
u() { dovecot_doveadm "$@"; }
u flags add -u "$DOVECOT_USER" 'project-x' mailbox INBOX uid 1

syncd_init "$work" SYNC_FOLDERS=INBOX,Sent MY_ADDRESSES=me@example.org SYNC_INTERVAL=3600
syncd --backfill > /dev/null || fail "backfill exit $?"
# another client labels a second message after the backfill: the next tick brings it
# shellcheck disable=SC2016 # $Important is the keyword itself
u flags add -u "$DOVECOT_USER" 'project-x $Important' mailbox INBOX uid 2
syncd --once > /dev/null || fail "tick exit $?"

rm -f "$work/port"
env MCP_AUTH=none MCP_LISTEN=127.0.0.1:0 MCP_INDEX="$SYNCD_DATA/index.db" MCP_PORT_FILE="$work/port" \
    MCP_RATE_LIMIT=1000 "$MB_BUILD_DIR/mcpd" 2>>"$work/mcpd.log" &
mcpd=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || fail "mcpd did not start: $(cat "$work/mcpd.log")"
url=http://127.0.0.1:$(cat "$work/port")/mcp
jq_() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))" "$1"; }
id_of() {	# folder uid -> messages.id
	syncd_sql "SELECT m.id FROM messages m JOIN folders f ON f.id=m.folder_id WHERE f.name='$1' AND m.uid=$2"
}

# every call reads the index alone: all in two SDK sessions, the second for the cursor
mcp_batch "$url" <<EOF
list list
labelled get_message {"id":$(id_of INBOX 2)}
unlabelled get_message {"id":$(id_of INBOX 3)}
by_label count_messages {"group_by":"label"}
by_year count_messages {"group_by":"year","query":"invoice"}
by_folder count_messages {"group_by":"folder","query":"from:anna"}
by_domain count_messages {"group_by":"sender_domain","limit":1}
EOF
for t in count_messages find_contacts awaiting_reply; do
	[ "$(jq_ "[t for t in d if t['name']=='$t'][0]['annotations']['readOnlyHint']" < "$work/list.json")" = True ] ||
	    fail "tools/list: $t is not listed read-only"
done

# labels: both keywords set by the other session, in the data and, fenced, in the text
[ "$(jq_ 'sorted(d["structuredContent"]["labels"])' < "$work/labelled.json")" = "['\$Important', 'project-x']" ] ||
    fail "get_message labels: $(cat "$work/labelled.json")"
jq_ 'd["text"]' < "$work/labelled.json" | grep '^Labels: ' > /dev/null || fail "get_message text names no labels"
[ "$(jq_ 'd["structuredContent"]["labels"]' < "$work/unlabelled.json")" = "[]" ] ||
    fail "an unlabelled message has labels"

# count_messages
[ "$(jq_ '[(r["key"], r["count"]) for r in d["structuredContent"]["results"]]' < "$work/by_label.json")" = \
    "[('project-x', 2), ('\$Important', 1)]" ] || fail "count by label: $(cat "$work/by_label.json")"
[ "$(jq_ '(d["structuredContent"]["total"], d["structuredContent"]["ungrouped"])' < "$work/by_label.json")" = "(4, 2)" ] ||
    fail "count by label: totals"
[ "$(jq_ '[(r["key"], r["count"]) for r in d["structuredContent"]["results"]]' < "$work/by_year.json")" = \
    "[('2024', 2), ('2023', 1)]" ] || fail "count invoice by year: $(cat "$work/by_year.json")"
[ "$(jq_ '[(r["key"], r["count"]) for r in d["structuredContent"]["results"]]' < "$work/by_folder.json")" = \
    "[('INBOX', 2)]" ] || fail "count from:anna by folder: $(cat "$work/by_folder.json")"
[ "$(jq_ '(d["structuredContent"]["results"][0]["key"], d["structuredContent"]["groups"])' < "$work/by_domain.json")" = \
    "('acme.example', 3)" ] || fail "count by sender_domain: $(cat "$work/by_domain.json")"
cursor=$(jq_ 'd["structuredContent"]["next_cursor"]' < "$work/by_domain.json")
mcp_batch "$url" <<EOF
page2 count_messages {"group_by":"sender_domain","limit":1,"cursor":"$cursor"}
other_cursor count_messages {"group_by":"sender","limit":1,"cursor":"$cursor"}
nope count_messages {"group_by":"year","query":"folder:Nope"}
bell find_contacts {"query":"BELL"}
contacts find_contacts {}
others awaiting_reply {"days":0,"direction":"others"}
me awaiting_reply {"days":0,"direction":"me"}
both awaiting_reply {}
century awaiting_reply {"days":36500}
EOF
[ "$(jq_ 'd["structuredContent"]["results"][0]["count"]' < "$work/page2.json")" = 1 ] || fail "count: second page"
[ "$(jq_ 'd["isError"]' < "$work/other_cursor.json")" = True ] || fail "a cursor of another grouping was taken"
grep 'no folder named' "$work/nope.json" > /dev/null ||
    fail "count: an unknown folder is not said"

# find_contacts: Anna by a fragment of a name, her mail both ways, her names
[ "$(jq_ '[(c["address"], c["received_from"], c["sent_to"], c["messages"]) for c in d["structuredContent"]["results"]]' < "$work/bell.json")" = \
    "[('anna@acme.example', 2, 1, 3)]" ] || fail "find_contacts bell: $(cat "$work/bell.json")"
[ "$(jq_ 'sorted(d["structuredContent"]["results"][0]["names"])' < "$work/bell.json")" = "['Anna', 'Anna Bell']" ] ||
    fail "find_contacts names"
[ "$(jq_ 'd["structuredContent"]["results"][0]["first_date"]' < "$work/bell.json")" = 2023-01-10T10:00:00Z ] ||
    fail "find_contacts first_date"
jq_ 'd["text"]' < "$work/bell.json" | grep 'untrusted-mail nonce=' > /dev/null || fail "find_contacts text is not fenced"
jq_ '[c["address"] for c in d["structuredContent"]["results"]]' < "$work/contacts.json" | grep 'me@example.org' > /dev/null &&
    fail "find_contacts lists the account's own address"

# awaiting_reply
[ "$(jq_ '[(t["subject"], t["waiting_on"], t["messages"]) for t in d["structuredContent"]["results"]]' < "$work/others.json")" = \
    "[('Re: invoice 2024', 'others', 2)]" ] || fail "awaiting others: $(cat "$work/others.json")"
[ "$(jq_ '[t["subject"] for t in d["structuredContent"]["results"]]' < "$work/me.json")" = "['lunch?', 'invoice 2023']" ] ||
    fail "awaiting me: $(cat "$work/me.json")"
[ "$(jq_ 'len(d["structuredContent"]["results"])' < "$work/both.json")" = 3 ] || fail "awaiting both: $(cat "$work/both.json")"
[ "$(jq_ 'len(d["structuredContent"]["results"])' < "$work/century.json")" = 0 ] || fail "awaiting: a cutoff a century back"
ok=1
echo "ok: overview tools and labels"
