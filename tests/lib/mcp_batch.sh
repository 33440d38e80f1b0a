# shellcheck shell=bash
# mcp_batch URL [NAME...]: tool calls made in one SDK session (mcp_call.mjs
# batch), as a node process costs about half a second of CPU.  Reads one call
# a line on stdin, "NAME TOOL [JSON]" (TOOL "list": tools/list), in order, and
# saves each answer to $work/NAME.json; a line "bearer TOKEN" sends TOKEN
# with the calls after it (before one: MCP_BEARER_TOKEN).  A call that throws
# (an HTTP or JSON-RPC error: a single call's node would exit non-zero) fails
# the test, unless its NAME is given: then {"thrown": MESSAGE, "code": CODE}
# is its answer, for the test to check.  Needs $src, $work and fail().
mcp_batch() {
	local url=$1 name tool args token=${MCP_BEARER_TOKEN:-} names=() rc=0 threw=0
	shift
	while read -r name tool args; do
		[ -n "$name" ] || continue
		if [ "$name" = bearer ]; then token=$tool; continue; fi
		names+=("$name")
		rm -f "$work/$name.json"
		[ -n "$args" ] || args='{}'
		if [ "$tool" = list ]; then
			printf '{"out":"%s","token":"%s","list":true}\n' "$work/$name.json" "$token"
		else
			printf '{"out":"%s","token":"%s","tool":"%s","arguments":%s}\n' \
			    "$work/$name.json" "$token" "$tool" "$args"
		fi
	done > "${work:?}/batch.in"
	node "${src:?}/tests/integration/mcp_call.mjs" "$url" "$src/.deps/npm" batch \
	    < "$work/batch.in" 2> "$work/batch.err" || rc=$?
	for name in "${names[@]}"; do
		[ -s "$work/$name.json" ] || fail "batch: no answer to $name: $(cat "$work/batch.err")"
		grep -q '^{"thrown":' "$work/$name.json" || continue
		[[ " $* " == *" $name "* ]] || fail "batch: $name threw: $(cat "$work/$name.json")"
		threw=$((threw + 1))
	done
	[ "$rc" = 0 ] || [ "$threw" -gt 0 ] || fail "batch: mcp_call.mjs exited $rc: $(cat "$work/batch.err")"
}
