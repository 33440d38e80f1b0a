#!/usr/bin/env bash
# mcpd's OAuth resource-server checks against a real authorization server:
# oidc-provider (tests/integration/oauth_as.mjs) on 127.0.0.1 issues RFC 9068
# JWT access tokens on the client_credentials grant; auth_check (the real
# auth.c, jwt.c and jwks.c, fetching the JWKS over HTTP after discovery)
# decides on each; then mcpd itself on the resource's port (step-up for the
# write tools).  Asserts the status and the exact WWW-Authenticate value a
# client would see, the JWKS refetch rules (key rotation, rate limit, periodic
# refresh), and that no token ever reaches the log.
set -euo pipefail
src=${MB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${MB_BUILD_DIR:-$src/build}
drv=$build/tests/auth_check
modules=$src/.deps/npm/node_modules
work=$(mktemp -d)
as_pid=
fails=0
passes=0

cleanup() {
	[ -n "$as_pid" ] && kill "$as_pid" 2>/dev/null && wait "$as_pid" 2>/dev/null
	if [ "$fails" -eq 0 ]; then
		rm -rf "$work"
	else
		echo "test_auth: logs kept in $work"
	fi
}
trap cleanup EXIT

[ -x "$drv" ] || { echo "test_auth: $drv not built"; exit 1; }
[ -d "$modules/oidc-provider" ] && [ -d "$modules/jose" ] ||
	{ echo "test_auth: oidc-provider or jose missing: run scripts/deps"; exit 1; }

# The resource: any loopback URL (the checks never connect to it).
resource="http://127.0.0.1:$((20000 + RANDOM % 20000))/mcp"
prm="${resource%/mcp}/.well-known/oauth-protected-resource/mcp"

# --- the authorization server ------------------------------------------------
cp "$src/tests/integration/oauth_as.mjs" "$work/"
ln -s "$modules" "$work/node_modules"
RESOURCE=$resource OUT=$work/facts.json node "$work/oauth_as.mjs" 2>"$work/as.log" &
as_pid=$!
for _ in $(seq 300); do
	[ -f "$work/facts.json" ] && break
	kill -0 "$as_pid" 2>/dev/null || { cat "$work/as.log"; exit 1; }
	sleep 0.1
done
[ -f "$work/facts.json" ] || { echo "test_auth: the AS did not start"; cat "$work/as.log"; exit 1; }

jget() {	# key path (a.b) from JSON on stdin
	node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{let v=JSON.parse(s);
		for (const k of process.argv[1].split(".")) v=v?.[k]; console.log(v ?? "")})' "$1"
}
fact() { jget "$1" <"$work/facts.json"; }
issuer=$(fact issuer)
endpoint=$(fact token_endpoint)

token() {	# client scope [resource] [endpoint]: a token from the token endpoint
	local args=(-sS --max-time 10 -d "client_id=$1" -d "client_secret=s3cret-$1"
		-d grant_type=client_credentials -d "scope=$2")
	[ -n "${3:-}" ] && args+=(-d "resource=$3")
	curl "${args[@]}" "${4:-$endpoint}" | jget access_token
}

# --- the decision driver, as a coprocess ---------------------------------------
start_driver() {	# env assignments...
	coproc DRV { env "$@" "$drv" 2>>"$work/driver.log"; }
}
ask() {
	printf '%s\n' "$1" >&"${DRV[1]}"
	IFS= read -r -t 60 reply <&"${DRV[0]}" || reply="(no answer)"
}
stop_driver() {
	local pid=$DRV_PID
	exec {DRV[1]}>&-
	wait "$pid" || { echo "test_auth: driver exited $?"; fails=$((fails + 1)); }
}
ok() { passes=$((passes + 1)); echo "ok: $1"; }
bad() { fails=$((fails + 1)); echo "FAIL: $1"; echo "  got:  $reply"; echo "  want: $2"; }
expect() {	# what, line, exact reply
	ask "$2"
	if [ "$reply" = "$3" ]; then ok "$1"; else bad "$1" "$3"; fi
}
expect_deny() {	# what, line, status, error_description ("" for no credentials)
	local want
	ask "$2"
	if [ -z "$4" ]; then
		want="deny status=$3 www-authenticate=Bearer resource_metadata=\"$prm\", scope=\"mail.read\""
	else
		want="deny status=$3 www-authenticate=Bearer error=\"invalid_token\", error_description=\"$4\", resource_metadata=\"$prm\", scope=\"mail.read\""
	fi
	if [ "${reply%% reason=*}" = "$want" ]; then ok "$1 (${reply##* reason=})"; else bad "$1" "$want"; fi
}
hits() { curl -sS --max-time 5 "$issuer/__test/jwks-hits"; }

# --- main run: issuer discovery, real tokens, forged tokens --------------------
start_driver MCP_AUTH=jwt MCP_RESOURCE_URL="$resource" MCP_OAUTH_ISSUER="$issuer"

expect_deny "no credentials: 401 without an error code" "@noauth" 401 ""
expect_deny "another scheme counts as no credentials" "@header Basic YWxpY2U6czNjcmV0" 401 ""

t_es=$(token es256 mail.read "$resource")
expect "ES256 token from the AS is accepted, sub and client_id known" "$t_es" \
	"allow status=200 sub=es256 client_id=es256 scope=mail.read write=0"
expect "the JWKS was fetched once, after discovery" "@stats" "fetches=1 failures=0"
[ "$(hits)" = 1 ] && ok "the AS saw one JWKS request" || { reply=$(hits); bad "AS JWKS hits" 1; }
for c in rs256 ps256 eddsa; do
	expect "${c^^} token from the AS is accepted, with the write scope" \
		"$(token "$c" "mail.read mail.write" "$resource")" \
		"allow status=200 sub=$c client_id=$c scope=mail.read mail.write write=1"
done
expect "jose-minted control token with the AS's key is accepted" "$(fact forged.good)" \
	"allow status=200 sub=forged-sub client_id=es256 scope=mail.read write=0"
expect "no refetch for known keys" "@stats" "fetches=1 failures=0"

expect_deny "expired token" "$(fact forged.expired)" 401 "token expired"
expect_deny "token not yet valid (nbf)" "$(fact forged.not_yet_valid)" 401 "token not yet valid"
expect_deny "token for another resource (aud)" \
	"$(token es256 mail.read "$(fact other_resource)")" 401 "token not issued for this resource"
expect_deny "token with another issuer, signed with the AS's key" "$(fact forged.wrong_iss)" \
	401 "wrong issuer"
expect_deny "a second provider's real token (other issuer, other keys)" \
	"$(token es256 mail.read "$resource" "$(fact token_endpoint_b)")" 401 "unknown signing key"
expect_deny "typ JWT" "$(fact forged.typ_jwt)" 401 "not an access token (typ)"
expect_deny "no typ" "$(fact forged.no_typ)" 401 "not an access token (typ)"
expect_deny "alg none" "$(fact forged.alg_none)" 401 "signing algorithm not accepted"
expect_deny "HS256 keyed with the RSA public key" "$(fact forged.hs256)" 401 \
	"signing algorithm not accepted"
expect_deny "the AS's kid, signed by another key" "$(fact forged.other_key)" 401 "bad signature"
expect_deny "forged kid" "$(fact forged.forged_kid)" 401 "unknown signing key"
expect "an unknown kid right after a fetch does not refetch" "@stats" "fetches=1 failures=0"
t_opaque=$(token es256 mail.read)
expect_deny "opaque token (requested without a resource)" "$t_opaque" 401 "malformed token"
expect_deny "garbage" "garbage" 401 "malformed token"
expect_deny "a bearer token in bad base64url" "eyJ!.eyJ.AAAA" 401 "malformed token"

# --- scopes ----------------------------------------------------------------------
t_w=$(token es256 mail.write "$resource")
# the write scope implies the read scope (a broader scope satisfies a narrower one)
expect "write-only token on a read operation" "$t_w" \
	"allow status=200 sub=es256 client_id=es256 scope=mail.write write=1"
t_o=$(token es256 "" "$resource")
expect "token without any scope: 403 insufficient_scope" "$t_o" \
	"deny status=403 www-authenticate=Bearer error=\"insufficient_scope\", scope=\"mail.read\", resource_metadata=\"$prm\" reason=scope mail.read not granted (has '')"
ask "@scope mail.write"
expect "read-only token on a write operation: 403 asking for both" "$t_es" \
	"deny status=403 www-authenticate=Bearer error=\"insufficient_scope\", scope=\"mail.write mail.read\", resource_metadata=\"$prm\" reason=scope mail.write not granted (has 'mail.read')"
expect "write token on a write operation" "$t_w" \
	"allow status=200 sub=es256 client_id=es256 scope=mail.write write=1"
ask "@scope -"

# --- on the wire: the module behind libmicrohttpd, as docs/auth.md wires it -----------
# It serves until its stdin closes: hold a FIFO open to it.
mkfifo "$work/http.in"
env MCP_AUTH=jwt MCP_RESOURCE_URL="$resource" MCP_OAUTH_ISSUER="$issuer" \
	"$build/tests/auth_http" <"$work/http.in" >"$work/http.port" 2>>"$work/http.log" &
http_pid=$!
exec {http_in}>"$work/http.in"
for _ in $(seq 300); do
	[ -s "$work/http.port" ] && break
	kill -0 "$http_pid" 2>/dev/null || break
	sleep 0.1
done
port=$(head -n1 "$work/http.port")
base=http://127.0.0.1:$port
http() {	# curl args...: sets code, hdr (WWW-Authenticate), body, cors
	local out
	out=$(curl -sS --max-time 10 -D "$work/h" -o "$work/b" -w '%{http_code}' "$@") || out=000
	code=$out
	hdr=$(tr -d '\r' <"$work/h" | sed -n 's/^[Ww][Ww][Ww]-[Aa]uthenticate: //p')
	cors=$(tr -d '\r' <"$work/h" | sed -n 's/^[Aa]ccess-[Cc]ontrol-[Aa]llow-[Oo]rigin: //p')
	body=$(cat "$work/b")
	reply="$code | $hdr | $cors | $body"
}
check() {	# what, want
	if [ "$reply" = "$2" ]; then ok "$1"; else bad "$1" "$2"; fi
}
http -X POST -H 'Content-Type: application/json' -d '{"jsonrpc":"2.0"}' "$base/mcp"
check "HTTP: POST /mcp without a token" \
	"401 | Bearer resource_metadata=\"$prm\", scope=\"mail.read\" |  | "
http -X POST -H "Authorization: Bearer $(fact forged.expired)" -d '{}' "$base/mcp"
check "HTTP: expired token" "401 | Bearer error=\"invalid_token\", error_description=\"token expired\", resource_metadata=\"$prm\", scope=\"mail.read\" |  | "
t_http=$(token es256 mail.read "$resource")
http -X POST -H "Authorization: Bearer $t_http" -d '{}' "$base/mcp"
check "HTTP: valid token" '200 |  |  | {"sub":"es256","client_id":"es256","write":false}'
http -X POST -H "Authorization: Bearer $t_http" -d '{}' "$base/mcp?tool=write"
check "HTTP: read token on a write tool" \
	"403 | Bearer error=\"insufficient_scope\", scope=\"mail.write mail.read\", resource_metadata=\"$prm\" |  | "
http -X POST -H "Authorization: Bearer $(token eddsa "mail.read mail.write" "$resource")" \
	-d '{}' "$base/mcp?tool=write"
check "HTTP: write token on a write tool" '200 |  |  | {"sub":"eddsa","client_id":"eddsa","write":true}'
meta="{\"resource\":\"$resource\",\"authorization_servers\":[\"$issuer\"],\"scopes_supported\":[\"mail.read\",\"mail.write\"],\"bearer_methods_supported\":[\"header\"],\"resource_name\":\"Mailbox (imap-mcp)\"}"
http "$base/.well-known/oauth-protected-resource/mcp"
check "HTTP: metadata at the path-inserted well-known URL, with CORS" "200 |  | * | $meta"
http "$base/.well-known/oauth-protected-resource"
check "HTTP: metadata at the root well-known URL" "200 |  | * | $meta"
exec {http_in}>&-
wait "$http_pid" || { echo "test_auth: auth_http exited $?"; fails=$((fails + 1)); }
grep -qF -- "${t_http##*.}" "$work/http.log" && { reply="token in http.log"; bad "HTTP log" "no token"; }

# --- key rotation ------------------------------------------------------------------
h0=$(hits)
curl -sS --max-time 5 -X POST "$issuer/__test/rotate" >/dev/null
t_new=$(token es256 mail.read "$resource")
expect_deny "new key within a minute of the last fetch: not refetched yet" "$t_new" 401 \
	"unknown signing key"
expect "still one fetch" "@stats" "fetches=1 failures=0"
expect "a minute later" "@advance 61" "clock +61"
expect "16 threads at once on the new key: one fetches, the others wait for it" \
	"@parallel 16 $t_new" "parallel allow=16 deny=0"
expect "the new key is cached" "$t_new" \
	"allow status=200 sub=es256 client_id=es256 scope=mail.read write=0"
expect "the rotation cost one more fetch" "@stats" "fetches=2 failures=0"
[ "$(hits)" = $((h0 + 1)) ] && ok "the AS saw one more JWKS request" ||
	{ reply=$(hits); bad "AS JWKS hits" $((h0 + 1)); }
expect_deny "a token signed with the retired key" "$t_es" 401 "unknown signing key"
expect_deny "forged kids do not make us refetch" "$(fact forged.forged_kid)" 401 \
	"unknown signing key"
expect "refetches are rate-limited" "@stats" "fetches=2 failures=0"

# --- time passes -------------------------------------------------------------------
expect "an hour later" "@advance 3700" "clock +3761"
expect_deny "the same token has expired" "$t_new" 401 "token expired"
expect "a stale key set is refetched in the request path" "@stats" "fetches=3 failures=0"
ask "@metadata"
want="$prm {\"resource\":\"$resource\",\"authorization_servers\":[\"$issuer\"],\"scopes_supported\":[\"mail.read\",\"mail.write\"],\"bearer_methods_supported\":[\"header\"],\"resource_name\":\"Mailbox (imap-mcp)\"}"
[ "$reply" = "$want" ] && ok "protected resource metadata" || bad "metadata" "$want"
stop_driver

# --- MCP_JWKS_URL set: no discovery; no leeway -------------------------------------
before=$(hits)
start_driver MCP_AUTH=jwt MCP_RESOURCE_URL="$resource/" MCP_OAUTH_ISSUER="$issuer" \
	MCP_JWKS_URL="$(fact jwks_uri)" MCP_JWT_LEEWAY=0 MCP_SCOPE_READ=mail.write
expect "configured JWKS URL, resource with a trailing slash, read scope renamed" \
	"$(token eddsa "mail.write" "$resource")" \
	"allow status=200 sub=eddsa client_id=eddsa scope=mail.write write=1"
stop_driver
[ "$(hits)" = $((before + 1)) ] && ok "one JWKS request, no discovery" ||
	{ reply=$(hits); bad "AS JWKS hits" $((before + 1)); }

# --- the issuer cannot be reached: 503, not 401 -------------------------------------
dead=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{
	console.log(s.address().port); s.close()})')
start_driver MCP_AUTH=jwt MCP_RESOURCE_URL="$resource" MCP_OAUTH_ISSUER="http://127.0.0.1:$dead"
ask "$(fact forged.good)"
case $reply in
"deny status=503 www-authenticate=- reason=cannot check tokens:"*) ok "issuer down: 503" ;;
*) bad "issuer down" "deny status=503 ..." ;;
esac
expect "one failed attempt, not retried at once" "$(fact forged.good)" "$reply"
expect "failures are counted" "@stats" "fetches=1 failures=1"
stop_driver

# --- key sets that must not be taken ---------------------------------------------------
refused_fetch() {	# what, reason pattern, env assignments...
	local what=$1 pat=$2
	shift 2
	start_driver MCP_AUTH=jwt MCP_RESOURCE_URL="$resource" "$@"
	ask "$(fact forged.good)"
	case $reply in
	"deny status=503 www-authenticate=- reason=cannot check tokens: no key set from the issuer yet: "*$pat*)
		ok "$what" ;;
	*) bad "$what" "deny status=503 ... $pat" ;;
	esac
	stop_driver
}
refused_fetch "a JWKS over the size cap" "more than 262144 bytes" \
	MCP_OAUTH_ISSUER="$issuer" MCP_JWKS_URL="$issuer/__test/big-jwks"
refused_fetch "a redirect is not followed" "HTTP status 302" \
	MCP_OAUTH_ISSUER="$issuer" MCP_JWKS_URL="$issuer/__test/redirect-jwks"
refused_fetch "discovery refuses metadata naming another issuer" "issuer is not '$issuer/'" \
	MCP_OAUTH_ISSUER="$issuer/"

# --- mcpd itself on the resource's port: a write tool with a read-scope token -------
# MCP step-up authorization (docs/auth.md): HTTP 403 with the insufficient_scope
# challenge naming the write scope, on the 2025 path and the 2026-07-28 one; the
# same call with the write scope gets past the check (to a syncd that is not there).
rport=${resource#http://127.0.0.1:}
rport=${rport%/mcp}
env MCP_AUTH=jwt MCP_LISTEN="127.0.0.1:$rport" MCP_RESOURCE_URL="$resource" \
	MCP_OAUTH_ISSUER="$issuer" MCP_INDEX="$work/absent.db" SYNCD_SOCKET="$work/no-syncd.sock" \
	MCP_PORT_FILE="$work/mcpd.port" "$build/mcpd" 2>>"$work/mcpd.log" &
mcpd_pid=$!
for _ in $(seq 100); do [ -s "$work/mcpd.port" ] && break; sleep 0.1; done
mbase=http://127.0.0.1:$rport
t_read=$(token es256 mail.read "$resource")
t_write=$(token es256 "mail.read mail.write" "$resource")
mcp() {	# token [curl args...]: POST to mcpd; sets code, hdr, body (see http above)
	local tok=$1; shift
	http -X POST -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' "$@" "$mbase/mcp"
}
init_body='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
flag='{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"flag_message","arguments":{"id":1,"add":["flagged"]}}}'
step_up="Bearer error=\"insufficient_scope\", scope=\"mail.write mail.read\", resource_metadata=\"$prm\""
mcp "$t_read" -d "$init_body"
msid=$(tr -d '\r' <"$work/h" | sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: //p')
mcp "$t_read" -H "Mcp-Session-Id: $msid" -d "$flag"
reply="$code | $hdr"
check "mcpd: read token on flag_message (2025-11-25): 403 step-up" "403 | $step_up"
case $body in *'"code":-32000'*'mail.write'*) ok "mcpd: the 403 body names the scope" ;;
*) bad "mcpd: 403 body" "a -32000 error naming mail.write" ;; esac
V=2026-07-28
modern="{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"flag_message\",\"arguments\":{\"id\":1,\"add\":[\"flagged\"]},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"$V\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}"
mcp "$t_read" -H "MCP-Protocol-Version: $V" -H 'Mcp-Method: tools/call' -H 'Mcp-Name: flag_message' \
	-d "$modern"
reply="$code | $hdr"
check "mcpd: read token on flag_message (2026-07-28): 403 step-up" "403 | $step_up"
mcp "$t_read" -H "Mcp-Session-Id: $msid" \
	-d '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"list_folders","arguments":{}}}'
reply=$code
check "mcpd: read token on a read tool" "200"
mcp "$t_write" -d "$init_body"
msid=$(tr -d '\r' <"$work/h" | sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: //p')
mcp "$t_write" -H "Mcp-Session-Id: $msid" -d "$flag"
reply="$code | $hdr"
check "mcpd: write token on flag_message gets past the scope check" "200 | "
kill "$mcpd_pid"; wait "$mcpd_pid" 2>/dev/null || true

# --- the log: refusals with reasons and sub, never a token ---------------------------
leaked=0
for t in "$t_es" "$t_new" "$t_w" "$t_opaque" "$(fact forged.expired)" "$(fact forged.good)" \
    "$t_read" "$t_write"; do
	grep -qF -- "$t" "$work/driver.log" "$work/mcpd.log" && leaked=1
	# Nor any of its three parts on their own (the signature is the secret part).
	grep -qF -- "${t##*.}" "$work/driver.log" "$work/mcpd.log" && leaked=1
done
reply="(token found in $work/driver.log)"
[ $leaked = 0 ] && ok "no token in the log" || bad "tokens logged" "none"
reply=$(grep -c 'refused (403) sub es256 client es256' "$work/driver.log" || true)
[ "$reply" -ge 1 ] && ok "403s are logged with who asked" || bad "403 log" ">= 1 line"
reply=$(grep -c 'refused (401): token expired' "$work/driver.log" || true)
[ "$reply" -ge 1 ] && ok "401s are logged with the reason" || bad "401 log" ">= 1 line"

echo "test_auth: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
