# shellcheck shell=bash
# Helpers for the write tools' end-to-end tests (a syncd daemon, mcpd, the
# official MCP SDK client).  Source after tests/lib/testenv.sh (testenv_begin
# done), tests/lib/syncd.sh and syncd_init.
#
#	call URL TOOL [JSON]	one tool call through the SDK client (mcp_call.mjs);
#				MCP_BEARER_TOKEN from the environment
#	jq_ EXPR		evaluate a Python expression over the JSON on stdin (d)
#	idx SQL			query the index (syncd_sql)
#	id_of FOLDER UID	that message's messages.id
#	last_log COLUMN		that column of the newest write_log row
#	answered FILE OUTCOME [PATTERN]
#				the tool answer saved in FILE has OUTCOME (and text
#				matching PATTERN), and so has the newest write_log row
#	start_syncd SOCKET	the daemon of $SYNCD_CONF; sets $daemon; waits for SOCKET
#	stop_syncd		SIGTERM it and check it exits 0
#	ticks_done		ticks finished so far, from $SYNCD_LOG
#	tick			SIGHUP the daemon and wait for its tick to finish
#	start_mcpd NAME INDEX SOCKET [KEY=VALUE...]
#				mcpd without token checks on a loopback port (MCP_LISTEN
#				may be given); sets $url; log in $work/NAME.log
deps=$src/.deps/npm

call() {
	local url=$1; shift
	node "$src/tests/integration/mcp_call.mjs" "$url" "$deps" "$@"
}
jq_() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))" "$1"; }
idx() { syncd_sql "$1"; }
id_of() {
	idx "SELECT m.id FROM messages m JOIN folders f ON f.id=m.folder_id WHERE f.name='$1' AND m.uid=$2"
}
last_log() { idx "SELECT $1 FROM write_log ORDER BY id DESC LIMIT 1"; }
answered() {
	[ "$(jq_ 'd["structuredContent"]["outcome"]' < "$1")" = "$2" ] || fail "want $2: $(cat "$1")"
	[ -z "${3:-}" ] || grep -q -- "$3" "$1" || fail "want '$3': $(cat "$1")"
	[ "$(last_log outcome)" = "$2" ] || fail "write_log: $(last_log outcome), want $2"
}

start_syncd() {
	local path=$1
	echo "=== syncd daemon" >> "$SYNCD_LOG"
	"$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" 2>>"$SYNCD_LOG" &
	daemon=$!
	testenv_track "$daemon"
	until_ok '[ -S "$path" ]' || fail "no control socket at $path"
}
stop_syncd() {
	kill -TERM "$daemon"
	wait "$daemon" || fail "syncd exited $? on SIGTERM"
	daemon=
}
ticks_done() { grep -c "tick [0-9]* done" "$SYNCD_LOG" || true; }
tick() {
	local before
	before=$(ticks_done)
	kill -HUP "$daemon"
	until_ok '[ "$(ticks_done)" -gt "$before" ]' || fail "no tick after SIGHUP"
}

start_mcpd() {
	local name=$1 index=$2 sock=$3
	shift 3
	rm -f "$work/$name.port"
	env MCP_AUTH=none MCP_LISTEN=127.0.0.1:0 MCP_INDEX="$index" MCP_PORT_FILE="$work/$name.port" \
	    SYNCD_SOCKET="$sock" MCP_RATE_LIMIT=1000 "$@" "$MB_BUILD_DIR/mcpd" 2>>"$work/$name.log" &
	testenv_track "$!"
	until_ok '[ -s "$work/$name.port" ]' || fail "$name did not start: $(tail -3 "$work/$name.log")"
	url=http://127.0.0.1:$(cat "$work/$name.port")/mcp
}
