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
