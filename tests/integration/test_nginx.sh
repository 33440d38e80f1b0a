#!/usr/bin/env bash
# The deployment's front door, end to end: real nginx (Debian's package, its
# own -p prefix, -c config, pid and logs in a temp dir, a random loopback
# port, a self-signed certificate) running the site of
# scripts/deploy/nginx-imap-mcp.conf (only the port, name, certificate and
# upstream changed) in front of mcpd with MCP_AUTH=jwt, and oidc-provider
# (oauth_as.mjs) as the authorization server.  Over HTTPS through the proxy:
#   - no token: 401 with WWW-Authenticate naming the RFC 9728 metadata URL;
#   - that metadata, fetched through the proxy, names the resource and the AS;
#   - the official MCP SDK client with a client_credentials token from the
#     AS's token endpoint (bearer header via requestInit, the certificate via
#     NODE_EXTRA_CA_CERTS): initialize, tools/list, a search with a known hit;
#   - paths other than /mcp and the metadata are not published (404).
# No system nginx is started or needed.  Env: MB_BUILD_DIR, MB_SOURCE_DIR.
set -euo pipefail
build=${MB_BUILD_DIR:?}
src=${MB_SOURCE_DIR:?}
modules=$src/.deps/npm/node_modules
work=$(mktemp -d /tmp/test_nginx.XXXXXX)
chmod 711 "$work"	# nginx's workers (nobody) reach their temp dirs inside
as_pid= mcpd_pid= nginx_pid=
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

stop() {	# pid
	[ -n "$1" ] || return 0
	kill -TERM "$1" 2>/dev/null || return 0
	for _ in $(seq 50); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}
cleanup() {
	local rc=$?
	stop "$nginx_pid"; stop "$mcpd_pid"; stop "$as_pid"
	if [ $rc -eq 0 ] && [ $fails -eq 0 ]; then
		rm -rf "$work"
	else
		echo "test_nginx: FAILED; work dir kept: $work (nginx/error.log, mcpd.log, as.log)"
	fi
}
trap cleanup EXIT

command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || { echo "no nginx: run scripts/deps"; exit 1; }
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
[ -d "$modules/oidc-provider" ] || { echo "no oidc-provider: run scripts/deps"; exit 1; }

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
wait_for() {	# file pid what
	for _ in $(seq 300); do
		[ -s "$1" ] && return 0
		kill -0 "$2" 2>/dev/null || { echo "$3 died at start"; return 1; }
		sleep 0.1
	done
	echo "$3 did not start"; return 1
}

nport=$(free_port)
public=https://localhost:$nport
resource=$public/mcp
prm=$public/.well-known/oauth-protected-resource/mcp

# --- the index: tests/fixtures/mcpd
"$build/tests/mkindex" "$work/index.db" "$src/tests/fixtures/mcpd" >/dev/null

# --- the authorization server
cp "$src/tests/integration/oauth_as.mjs" "$work/"
ln -s "$modules" "$work/node_modules"
RESOURCE=$resource OUT=$work/facts.json node "$work/oauth_as.mjs" 2>"$work/as.log" &
as_pid=$!
wait_for "$work/facts.json" "$as_pid" "the AS" || { cat "$work/as.log"; exit 1; }
jget() {	# key path (a.b) from JSON on stdin
	node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{let v=JSON.parse(s);
		for (const k of process.argv[1].split(".")) v=v?.[k]; console.log(v ?? "")})' "$1"
}
issuer=$(jget issuer < "$work/facts.json")
endpoint=$(jget token_endpoint < "$work/facts.json")

# --- mcpd: JWT auth, loopback, the proxy's Host allowed
MCP_AUTH=jwt MCP_RESOURCE_URL=$resource MCP_OAUTH_ISSUER=$issuer \
    MCP_LISTEN=127.0.0.1:0 MCP_PORT_FILE=$work/mcpd.port MCP_INDEX=$work/index.db \
    MCP_ALLOWED_HOSTS=localhost "$build/mcpd" 2>>"$work/mcpd.log" &
mcpd_pid=$!
wait_for "$work/mcpd.port" "$mcpd_pid" mcpd || { cat "$work/mcpd.log"; exit 1; }
mport=$(cat "$work/mcpd.port")

# --- nginx: the example site, with this test's port, name, certificate, upstream
mkdir -p "$work/nginx/logs" "$work/nginx/tmp"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -keyout "$work/nginx/cert.key" -out "$work/nginx/cert.pem" -subj "/CN=localhost" \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" 2>/dev/null
sed -e "s/^\([[:space:]]*listen\) 443 ssl http2;/\1 127.0.0.1:$nport ssl http2;/" \
    -e '/listen \[::\]:443/d' \
    -e "s/server_name mail-mcp.example.com;/server_name localhost;/" \
    -e "s|ssl_certificate .*;|ssl_certificate $work/nginx/cert.pem;|" \
    -e "s|ssl_certificate_key .*;|ssl_certificate_key $work/nginx/cert.key;|" \
    -e "s/server 127.0.0.1:8765;/server 127.0.0.1:$mport;/" \
    "$src/scripts/deploy/nginx-imap-mcp.conf" > "$work/nginx/site.conf"
grep -q "listen 127.0.0.1:$nport ssl" "$work/nginx/site.conf" || fail "the example's listen line changed shape"
grep -q "server 127.0.0.1:$mport;" "$work/nginx/site.conf" || fail "the example's upstream changed shape"
cat > "$work/nginx/nginx.conf" <<CONF
daemon off;
master_process on;
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log info;
events { worker_connections 64; }
http {
	access_log $work/nginx/access.log;
	client_body_temp_path $work/nginx/tmp/body;
	proxy_temp_path $work/nginx/tmp/proxy;
	fastcgi_temp_path $work/nginx/tmp/fastcgi;
	uwsgi_temp_path $work/nginx/tmp/uwsgi;
	scgi_temp_path $work/nginx/tmp/scgi;
	include $work/nginx/site.conf;
}
CONF
"$nginx_bin" -t -q -p "$work/nginx/" -e "$work/nginx/error.log" -c "$work/nginx/nginx.conf" ||
    { cat "$work/nginx/error.log"; exit 1; }
"$nginx_bin" -p "$work/nginx/" -e "$work/nginx/error.log" -c "$work/nginx/nginx.conf" &
nginx_pid=$!
for _ in $(seq 100); do
	curl -s -o /dev/null --cacert "$work/nginx/cert.pem" "$public/" && break
	kill -0 "$nginx_pid" 2>/dev/null || { cat "$work/nginx/error.log"; exit 1; }
	sleep 0.1
done
C=(curl -sS --max-time 10 --cacert "$work/nginx/cert.pem")

# --- no token: 401 and the challenge, through the proxy
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
status=$("${C[@]}" -o "$work/body" -D "$work/headers" -w '%{http_code}' -X POST \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    --data-binary "$init" "$resource")
[ "$status" = 401 ] || fail "no token through the proxy: HTTP $status, want 401"
www=$(tr -d '\r' < "$work/headers" | sed -n 's/^[Ww][Ww][Ww]-[Aa]uthenticate: //p')
[ "$www" = "Bearer resource_metadata=\"$prm\", scope=\"mail.read\"" ] ||
    fail "WWW-Authenticate through the proxy: '$www'"
grep -qi '^strict-transport-security:' "$work/headers" || fail "HSTS header from the site"

# --- RFC 9728 metadata through the proxy, at the URL the challenge named
meta=$("${C[@]}" "$prm") || fail "metadata fetch"
[ "$(jget resource <<<"$meta")" = "$resource" ] || fail "metadata resource: $meta"
[[ $(jget authorization_servers <<<"$meta") == *"$issuer"* ]] || fail "metadata authorization_servers: $meta"
status=$("${C[@]}" -o /dev/null -w '%{http_code}' "$public/.well-known/oauth-protected-resource")
[ "$status" = 200 ] || fail "root well-known metadata through the proxy: HTTP $status"

# --- paths not published
status=$("${C[@]}" -o /dev/null -w '%{http_code}' "$public/")
[ "$status" = 404 ] || fail "/ through the proxy: HTTP $status, want 404"
status=$("${C[@]}" -o /dev/null -w '%{http_code}' "$public/mcp/../etc")
[ "$status" = 404 ] || fail "other path: HTTP $status, want 404"

# --- a bad token through the proxy
status=$("${C[@]}" -o /dev/null -D "$work/headers" -w '%{http_code}' -X POST \
    -H 'Authorization: Bearer not.a.jwt' -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' --data-binary "$init" "$resource")
[ "$status" = 401 ] || fail "bad token: HTTP $status"
grep -qi 'error="invalid_token"' "$work/headers" || fail "bad token: no invalid_token"

# --- the SDK client with a real token, over HTTPS through the proxy
token=$("${C[@]}" -d client_id=es256 -d client_secret=s3cret-es256 -d grant_type=client_credentials \
    -d scope=mail.read -d "resource=$resource" "$endpoint" | jget access_token)
[ -n "$token" ] || fail "no token from the AS"
out=$(MCP_BEARER_TOKEN=$token NODE_EXTRA_CA_CERTS=$work/nginx/cert.pem MCP_DEPS=$src/.deps/npm \
    node "$src/scripts/mcp-search.mjs" "$resource" zebrafish 5 2>&1) || fail "SDK client: $out"
grep -q '^server: imap-mcp ' <<<"$out" || fail "initialize through the proxy: $out"
. "$src/tests/lib/tools.sh"
grep -qxF "tools: $(mcp_tool_names read)" <<<"$out" ||
    fail "tools/list through the proxy: $out"
grep -qE '^hit [0-9]+ \| 2024-03-01 \| INBOX \| .*alice@example\.com.* \| Budget review for 2024$' <<<"$out" ||
    fail "search through the proxy: $out"
[ "$(grep -c '^hit ' <<<"$out")" = 1 ] || fail "exactly one zebrafish hit: $out"

# The requests really went through nginx, and no token reached a log.
grep -q '"POST /mcp HTTP/1.1" 200' "$work/nginx/access.log" || fail "no 200 POST /mcp in nginx's access log"
! grep -qF -e "$token" "$work/mcpd.log" "$work/nginx/access.log" "$work/nginx/error.log" ||
    fail "the token appears in a log"

if ((fails)); then
	echo "---- client output"; echo "${out:-}"
	exit 1
fi
echo "test_nginx: ok"
