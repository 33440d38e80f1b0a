# shellcheck shell=bash
# Helpers for mcpd's integration tests.  Set $work (a fresh directory) first.
#
#	mcpd_test_init NAME	fails=0, no mcpd yet; on exit stop the mcpd in $pid and
#				remove $work, or keep it and name it when a test failed
#	fail WHAT		report a failure and count it in $fails
#	mcpd_start [KEY=VALUE...]	start $build/mcpd, read-only, without token checks,
#				on a loopback port over $work/index.db, with the
#				extra settings; sets $pid, $port and $base (its URL)

mcpd_test_init() {
	mcpd_test_name=$1
	pid=
	fails=0
	trap mcpd_test_cleanup EXIT
}

mcpd_test_cleanup() {
	local rc=$?
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	if [ $rc -eq 0 ] && [ "$fails" -eq 0 ]; then
		rm -rf "$work"
	else
		echo "$mcpd_test_name: FAILED; work dir kept: $work (mcpd.log there)"
	fi
}

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

mcpd_start() {
	rm -f "$work/port"
	env MCP_AUTH=none MCP_LISTEN=127.0.0.1:0 MCP_INDEX="$work/index.db" MCP_PORT_FILE="$work/port" \
	    MCP_ALLOWED_ORIGINS=https://claude.example MCP_THREADS=4 MCP_RATE_LIMIT=1000 MCP_READ_ONLY=1 "$@" \
	    "$build/mcpd" 2>>"$work/mcpd.log" &
	pid=$!
	for _ in $(seq 1 100); do	# deadline: 10 s
		[ -s "$work/port" ] && break
		kill -0 "$pid" 2>/dev/null || { echo "mcpd died at start"; cat "$work/mcpd.log"; exit 1; }
		sleep 0.1
	done
	[ -s "$work/port" ] || { echo "mcpd did not start"; exit 1; }
	port=$(cat "$work/port")
	base=http://127.0.0.1:$port
}

# Requests by hand (set $base first):
#	post BODY [curl args...]	POST BODY to /mcp; sets $status, $body, $headers
#	expect_status WANT WHAT, expect_body REGEX WHAT	count a failure unless so
#	init VERSION [curl args...]	initialize at VERSION; sets $sid
ACCEPT='Accept: application/json, text/event-stream'
CT='Content-Type: application/json'
post() {
	local data=$1; shift
	status=$(curl -s -o "$work/body" -D "$work/headers" -w '%{http_code}' -X POST \
	    "$@" --data-binary "$data" "$base/mcp")
	body=$(cat "$work/body")
	headers=$(cat "$work/headers")
}
expect_status() {	# want what
	[ "$status" = "$1" ] || fail "$2: HTTP $status, want $1 (body: ${body:0:200})"
}
expect_body() {	# regex what
	[[ $body =~ $1 ]] || fail "$2: body '${body:0:300}' does not match /$1/"
}
init() {	# version [curl args] -> $sid
	local v=$1; shift
	post "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"$v\",\"capabilities\":{},\"clientInfo\":{\"name\":\"curl\",\"version\":\"1\"}}}" \
	    -H "$ACCEPT" -H "$CT" "$@"
	sid=$(printf '%s' "$headers" | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')
}
