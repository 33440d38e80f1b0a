#!/usr/bin/env bash
# Several accounts in one mcpd (docs/mcpd.md, "Accounts"), end to end: one
# Dovecot with two users holding different mail, a syncd daemon per user
# (each its own settings, DATA_DIR and control socket), one mcpd with
# ACCOUNTS=work,home over HTTP with MCP_AUTH=jwt and real tokens from
# oidc-provider (tests/integration/oauth_as.mjs; the token subject is the
# client id).  es256 may read and write both accounts, eddsa only work.
# Asserts: a search over both finds the mail of both, each hit with its
# account; account: narrows it; list_accounts; eddsa gets "not found" for
# home's message, thread and attachment ids and mail:// resources, is refused
# account:home and es256's cursor, and cannot write home; writes land in the
# right user's mailbox, checked with doveadm.
set -euo pipefail
src=${MB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
MB_BUILD_DIR=${MB_BUILD_DIR:-$src/build}
. "$src/tests/lib/testenv.sh"
. "$src/tests/lib/dovecot.sh"
. "$src/tests/lib/syncd.sh"
. "$src/tests/lib/mcp_batch.sh"
modules=$src/.deps/npm/node_modules
[ -d "$modules/oidc-provider" ] || { echo "test_accounts: oidc-provider missing: run scripts/deps" >&2; exit 1; }

testenv_begin as_pid:TERM mcpd:TERM
chmod 755 "$work"
TESTENV_LOGS="$work/work/syncd.log $work/home/syncd.log $work/mcpd.log $work/as.log"

# --- Dovecot: alice's mail (account work) and bob's (account home) ----------
mkdir "$work/srv"
DOVECOT_USER=alice
dovecot_start "$work/srv"
dovecot_add_user bob
python3 "$src/tests/lib/mkmail.py" "$work/mail/alice:6:worknote:3" "$work/mail/bob:5:homenote:2"
dovecot_load_maildir INBOX "$work"/mail/alice/*.eml
DOVECOT_USER=bob dovecot_load_maildir INBOX "$work"/mail/bob/*.eml

# --- one syncd per account ------------------------------------------------------
start_syncd() {	# name user password_file [SETTING=value...]: a backfilled index and a daemon on its socket
	local dir=$work/$1
	mkdir -p "$dir"
	SYNCD_LOG=$dir/syncd.log
	syncd_init "$dir" IMAP_USER="$2" IMAP_PASSWORD_FILE="$3" SYNCD_SOCKET="$dir/control.sock" \
	    SYNCD_ALLOWED_UIDS=0 SYNC_INTERVAL=3600 "${@:4}"
	syncd --backfill > /dev/null || fail "$1: backfill"
	"$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" 2>>"$SYNCD_LOG" &
	testenv_track "$!"
	until_ok "[ -S '$dir/control.sock' ]" || fail "$1: no control socket"
}
# work knows its own address, home does not (awaiting_reply below)
start_syncd work alice "$DOVECOT_PASSWORD_FILE" MY_ADDRESSES=alice@example.org
start_syncd home bob "$DOVECOT_DIR/password-bob"
sql() { sqlite3 -batch -noheader "$work/$1/data/index.db" "$2"; }

# --- the authorization server and mcpd ------------------------------------------
port=$((20000 + RANDOM % 20000))
resource="http://127.0.0.1:$port/mcp"
cp "$src/tests/integration/oauth_as.mjs" "$work/"
ln -s "$modules" "$work/node_modules"
RESOURCE=$resource OUT=$work/facts.json node "$work/oauth_as.mjs" 2>"$work/as.log" &
as_pid=$!
until_ok "[ -s '$work/facts.json' ]" || fail "the authorization server did not start"
fact() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" \
    "$work/facts.json" "$1"; }
token() {	# client: a token with both scopes; its subject is the client id
	curl -sS --max-time 10 -d "client_id=$1" -d "client_secret=s3cret-$1" \
	    -d grant_type=client_credentials -d "scope=mail.read mail.write" -d "resource=$resource" \
	    "$(fact token_endpoint)" | python3 -c "import json,sys; print(json.load(sys.stdin)['access_token'])"
}
both=$(token es256)
one=$(token eddsa)

env MCP_AUTH=jwt MCP_LISTEN="127.0.0.1:$port" MCP_RESOURCE_URL="$resource" \
    MCP_OAUTH_ISSUER="$(fact issuer)" MCP_RATE_LIMIT=1000 \
    ACCOUNTS=work,home \
    ACCOUNT_WORK_NUMBER=0 ACCOUNT_WORK_INDEX="$work/work/data/index.db" \
    ACCOUNT_WORK_SYNCD_SOCKET="$work/work/control.sock" ACCOUNT_WORK_READERS=es256,eddsa \
    ACCOUNT_HOME_NUMBER=7 ACCOUNT_HOME_INDEX="$work/home/data/index.db" \
    ACCOUNT_HOME_SYNCD_SOCKET="$work/home/control.sock" ACCOUNT_HOME_READERS=es256 \
    MCP_PORT_FILE="$work/mcpd.port" "$MB_BUILD_DIR/mcpd" 2>>"$work/mcpd.log" &
mcpd=$!
until_ok "[ -s '$work/mcpd.port' ]" || fail "mcpd did not start"

jq_() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))" "$1"; }
read_resource() {	# token uri: the JSON-RPC answer of resources/read (2026-07-28, no session)
	curl -sS --max-time 20 -X POST "$resource" -H "Authorization: Bearer $1" \
	    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
	    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: resources/read' -H "Mcp-Name: $2" \
	    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\"params\":{\"uri\":\"$2\",\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}"
}
H=7000000000000	# home's ids: 7 x 10^12 + the id in its index
home_msg=$((H + $(sql home "SELECT id FROM messages WHERE subject='homenote message 2'")))
home_thread=$((H + $(sql home "SELECT thread_id FROM messages WHERE subject='homenote message 2'")))
home_att=$((H + $(sql home "SELECT min(id) FROM attachments")))

# The calls up to the cursor change nothing the others read (eddsa's flag is
# refused, checked after): one SDK session a token for them all.
mcp_batch "$resource" <<EOF
bearer $both
both search_messages {"query":"quick","limit":50}
home search_messages {"query":"quick account:home"}
accounts list_accounts
bearer $one
accounts_one list_accounts
bearer $both
get_home get_message {"id":$home_msg}
bearer $one
probe_get_message get_message {"id":$home_msg}
probe_get_thread get_thread {"id":$home_thread}
probe_get_attachment get_attachment {"id":$home_att}
probe_flag_message flag_message {"id":$home_msg,"add":["flagged"]}
one_home search_messages {"query":"quick account:home"}
one_homenote search_messages {"query":"homenote"}
bearer $both
page1 search_messages {"query":"quick","limit":2}
EOF

# --- a search over both accounts, merged --------------------------------------------
[ "$(jq_ 'd["structuredContent"]["total"]' < "$work/both.json")" = 11 ] ||
    fail "search over both: $(cat "$work/both.json")"
[ "$(jq_ 'sorted({h["account"] for h in d["structuredContent"]["results"]})' < "$work/both.json")" = "['home', 'work']" ] ||
    fail "search over both: accounts"
jq_ 'all((h["account"] == "home") == (h["id"] > '$H') and h["subject"].startswith(h["account"] + "note") for h in d["structuredContent"]["results"])' < "$work/both.json" |
    grep -qx True || fail "a hit's account or id does not match its mail: $(cat "$work/both.json")"
[ "$(jq_ 'sorted({h["account"] for h in d["structuredContent"]["results"]}), d["structuredContent"]["total"]' < "$work/home.json")" = "(['home'], 5)" ] ||
    fail "account:home: $(cat "$work/home.json")"
[ "$(jq_ '[(a["name"], a["number"], a["messages"], a["may_write"]) for a in d["structuredContent"]["accounts"]]' < "$work/accounts.json")" = \
    "[('work', 0, 6, True), ('home', 7, 5, True)]" ] || fail "list_accounts (es256): $(cat "$work/accounts.json")"
[ "$(jq_ '[a["name"] for a in d["structuredContent"]["accounts"]]' < "$work/accounts_one.json")" = "['work']" ] ||
    fail "list_accounts (eddsa): $(cat "$work/accounts_one.json")"

# --- eddsa, a reader of work only, finds nothing of home ------------------------------
[ "$(jq_ 'd["structuredContent"]["account"], d["structuredContent"]["subject"]' < "$work/get_home.json")" = \
    "('home', 'homenote message 2')" ] || fail "es256 get_message on home: $(cat "$work/get_home.json")"
for probe in "get_message no message with id" "get_thread no message with id" \
    "get_attachment no attachment with id" "flag_message no message with id"; do
	read -r tool want <<<"$probe"
	[ "$(jq_ 'd["isError"]' < "$work/probe_$tool.json")" = True ] && grep -q "$want" "$work/probe_$tool.json" ||
	    fail "eddsa $tool on home's id: $(cat "$work/probe_$tool.json")"
done
[ "$(DOVECOT_USER=bob dovecot_flags INBOX 2)" = "" ] || fail "eddsa's flag reached bob's mailbox"
for uri in "mail://message/$home_msg" "mail://attachment/$home_att"; do
	read_resource "$one" "$uri" > "$work/r.json"
	grep -q '"code":-32602' "$work/r.json" && grep -q 'Resource not found' "$work/r.json" ||
	    fail "eddsa reads $uri: $(cat "$work/r.json")"
	read_resource "$both" "$uri" > "$work/r.json"
	grep -q '"result"' "$work/r.json" || fail "es256 cannot read $uri: $(cat "$work/r.json")"
done
[ "$(jq_ 'd["isError"]' < "$work/one_home.json")" = True ] && grep -q 'its accounts: work' "$work/one_home.json" ||
    fail "eddsa account:home: $(cat "$work/one_home.json")"
[ "$(jq_ 'd["structuredContent"]["total"]' < "$work/one_homenote.json")" = 0 ] ||
    fail "eddsa's plain search sees home: $(cat "$work/one_homenote.json")"
cursor=$(jq_ 'd["structuredContent"]["next_cursor"]' < "$work/page1.json")
mcp_batch "$resource" <<EOF
bearer $both
page2 search_messages {"query":"quick","limit":2,"cursor":"$cursor"}
bearer $one
page2_one search_messages {"query":"quick","limit":2,"cursor":"$cursor"}
EOF
[ "$(jq_ 'd["isError"]' < "$work/page2.json")" = False ] || fail "es256's own cursor: $(cat "$work/page2.json")"
# refused either way: its offsets are for two accounts, and its hash for es256's two
[ "$(jq_ 'd["isError"]' < "$work/page2_one.json")" = True ] && grep -qE '(invalid|this) cursor' "$work/page2_one.json" ||
    fail "eddsa took es256's cursor: $(cat "$work/page2_one.json")"

# --- writes land in the right user's mailbox --------------------------------------
# The checks between these calls look at what none of the later calls changes.
mcp_batch "$resource" <<EOF
bearer $both
flag flag_message {"id":$home_msg,"add":["flagged"]}
draft create_draft {"to":["carol@example.org"],"subject":"plan","body":"hi"}
draft_home create_draft {"account":"home","to":["carol@example.org"],"subject":"plan","body":"hi"}
bearer $one
draft_one create_draft {"to":["dave@example.org"],"subject":"memo","body":"hi"}
draft_one_home create_draft {"account":"home","to":["dave@example.org"],"body":"x"}
bearer $both
recent list_recent_writes {"account":"home"}
flag_missing flag_message {"id":$((H + 999999)),"add":["flagged"]}
awaiting awaiting_reply {"days":0}
awaiting_home awaiting_reply {"account":"home"}
EOF
[ "$(jq_ 'd["structuredContent"]["outcome"], d["structuredContent"]["account"], d["structuredContent"]["id"]' < "$work/flag.json")" = \
    "('ok', 'home', $home_msg)" ] || fail "es256 flag on home: $(cat "$work/flag.json")"
DOVECOT_USER=bob dovecot_flags INBOX 2 | grep -q '\\Flagged' || fail "bob's UID 2 not \\Flagged"
DOVECOT_USER=alice dovecot_flags INBOX 2 | grep -q '\\Flagged' && fail "alice's UID 2 \\Flagged too"
[ "$(jq_ 'd["isError"]' < "$work/draft.json")" = True ] && grep -q 'name the account' "$work/draft.json" ||
    fail "create_draft without account for a writer of two: $(cat "$work/draft.json")"
[ "$(jq_ 'd["structuredContent"]["outcome"], d["structuredContent"]["account"]' < "$work/draft_home.json")" = "('ok', 'home')" ] ||
    fail "create_draft in home: $(cat "$work/draft_home.json")"
[ "$(jq_ 'd["structuredContent"]["outcome"], d["structuredContent"]["account"]' < "$work/draft_one.json")" = "('ok', 'work')" ] ||
    fail "eddsa's draft (one account it may write): $(cat "$work/draft_one.json")"
[ "$(jq_ 'd["isError"]' < "$work/draft_one_home.json")" = True ] || fail "eddsa saved a draft in home"
[ "$(DOVECOT_USER=bob dovecot_status Drafts messages)" = 1 ] || fail "bob's Drafts"
[ "$(DOVECOT_USER=alice dovecot_status Drafts messages)" = 1 ] || fail "alice's Drafts"
DOVECOT_USER=bob dovecot_doveadm fetch -u bob hdr mailbox Drafts all | grep -q '^Subject: plan' ||
    fail "bob's draft is not the one es256 saved"
[ "$(jq_ 'sorted({(w["account"], w["tool"]) for w in d["structuredContent"]["writes"]})' < "$work/recent.json")" = \
    "[('home', 'create_draft'), ('home', 'flag_message')]" ] || fail "list_recent_writes home: $(cat "$work/recent.json")"
# --- a write on an id of home that is in no index: the refusal names no other id
# (syncd knows only its own index's numbers, which are not the ids mcpd shows)
[ "$(jq_ 'd["isError"]' < "$work/flag_missing.json")" = True ] && grep -q 'no such message in the index' "$work/flag_missing.json" &&
    ! grep -q 'id 999999' "$work/flag_missing.json" || fail "a write on a missing id of home: $(cat "$work/flag_missing.json")"

# --- awaiting_reply: an account whose own addresses are unknown is left out and named,
# not an error that takes the other account's answer away; alone, it is the error
[ "$(jq_ 'd.get("isError", False)' < "$work/awaiting.json")" = False ] ||
    fail "awaiting_reply over both failed for home's sake: $(cat "$work/awaiting.json")"
grep -q 'Left out: account home,' "$work/awaiting.json" ||
    fail "awaiting_reply does not say home was left out: $(cat "$work/awaiting.json")"
[ "$(jq_ 'd.get("isError", False)' < "$work/awaiting_home.json")" = True ] ||
    fail "awaiting_reply on home alone: $(cat "$work/awaiting_home.json")"
kill -TERM "$mcpd"
wait "$mcpd" || fail "mcpd exited $? on SIGTERM"
mcpd=
syncd_log_clean "$work/work/syncd.log" "$work/home/syncd.log" "$work/mcpd.log" ||
    fail "sanitizer report"
ok=1
echo "test_accounts: ok"
