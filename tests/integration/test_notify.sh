#!/usr/bin/env bash
# systemd's readiness and watchdog protocol (Type=notify, WatchdogSec=), with
# a python3 datagram listener standing in for systemd as NOTIFY_SOCKET:
#   - mcpd (path socket) and syncd (abstract socket, against a real Dovecot)
#     send READY=1 once serving, WATCHDOG=1 about every half of
#     WATCHDOG_USEC, and STOPPING=1 on SIGTERM;
#   - WATCHDOG_PID naming another process turns the watchdog off;
#   - syncd announces each migration it applies (STATUS, EXTEND_TIMEOUT_USEC)
#     before READY=1, and none on an index that has them all;
#   - without NOTIFY_SOCKET nothing is sent and nothing breaks (every other test).
# Env: MB_BUILD_DIR, MB_SOURCE_DIR.
set -euo pipefail
build=${MB_BUILD_DIR:?}
src=${MB_SOURCE_DIR:?}
work=$(mktemp -d /tmp/test_notify.XXXXXX)
pids=()
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
cleanup() {	# [STATUS]: the script's exit status (else $?)
	local rc=${1:-$?} p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	if [ $rc -eq 0 ] && [ $fails -eq 0 ]; then rm -rf "$work"; else echo "test_notify: FAILED; kept $work"; fi
}
trap cleanup EXIT

# listen ADDR OUT: every datagram received, one per line (newlines as '|').
listen() {
	python3 -u - "$1" "$2" <<'PY' &
import socket, sys
addr, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0" + addr[1:] if addr.startswith("@") else addr)
open(out + ".ready", "w").close()
with open(out, "a") as f:
    while True:
        d = s.recv(4096).decode()
        f.write(d.replace("\n", "|") + "\n"); f.flush()
PY
	pids+=($!)
	for _ in $(seq 100); do [ -e "$2.ready" ] && return 0; sleep 0.05; done
	echo "listener did not start"; exit 1
}
count() { grep -c -- "$1" "$2" || true; }
wait_line() {	# regex file timeout_s
	local deadline=$((SECONDS + $3))
	until grep -q -- "$1" "$2" 2>/dev/null; do
		((SECONDS < deadline)) || return 1
		sleep 0.05
	done
}

# --- mcpd, path socket, WATCHDOG_USEC=400 ms (a WATCHDOG=1 every 200 ms)
"$build/tests/mkindex" "$work/index.db" "$src/tests/fixtures/mcpd" >/dev/null
listen "$work/notify.sock" "$work/mcpd.msgs"
NOTIFY_SOCKET=$work/notify.sock WATCHDOG_USEC=400000 MCP_AUTH=none MCP_LISTEN=127.0.0.1:0 \
    MCP_PORT_FILE=$work/port MCP_INDEX=$work/index.db "$build/mcpd" 2>>"$work/mcpd.log" &
mpid=$!; pids+=($mpid)
wait_line '^READY=1' "$work/mcpd.msgs" 20 || fail "mcpd: no READY=1"
[ -s "$work/port" ] || fail "mcpd: READY=1 before the port file (not yet listening)"
sleep 2
n=$(count '^WATCHDOG=1$' "$work/mcpd.msgs")
((n >= 5 && n <= 14)) || fail "mcpd: $n WATCHDOG=1 in ~2 s at a 200 ms period"
curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$(cat "$work/port")/mcp" | grep -q 405 ||
    fail "mcpd does not answer after READY"
kill -TERM "$mpid"; wait "$mpid" || fail "mcpd exit status $?"
wait_line '^STOPPING=1$' "$work/mcpd.msgs" 5 || fail "mcpd: no STOPPING=1"
[ "$(count '^READY=1' "$work/mcpd.msgs")" = 1 ] || fail "mcpd: READY=1 more than once"

# --- WATCHDOG_PID of another process: READY, no WATCHDOG
listen "$work/notify2.sock" "$work/mcpd2.msgs"
NOTIFY_SOCKET=$work/notify2.sock WATCHDOG_USEC=200000 WATCHDOG_PID=1 MCP_AUTH=none \
    MCP_LISTEN=127.0.0.1:0 MCP_INDEX=$work/index.db "$build/mcpd" 2>>"$work/mcpd.log" &
mpid=$!; pids+=($mpid)
wait_line '^READY=1' "$work/mcpd2.msgs" 20 || fail "mcpd (WATCHDOG_PID): no READY=1"
sleep 0.6
[ "$(count WATCHDOG "$work/mcpd2.msgs")" = 0 ] || fail "mcpd: WATCHDOG=1 sent for WATCHDOG_PID=1"
kill -TERM "$mpid"; wait "$mpid" || true

# --- syncd daemon, abstract socket, against a real Dovecot
. "$src/tests/lib/dovecot.sh"
. "$src/tests/lib/syncd.sh"
mkdir -p "$work/dovecot"
dovecot_start "$work/dovecot" >/dev/null
# Dovecot first (cleanup removes its directory), keeping the exit status: a
# failing "(exit $rc)" here would end the trap under set -e before cleanup
# killed the listeners, and ctest would wait for them until its timeout.
trap 'rc=$?; dovecot_stop || true; cleanup $rc' EXIT
dovecot_load_maildir INBOX "$src"/tests/fixtures/mcpd/INBOX/*.eml
mkdir -p "$work/sync"
syncd_init "$work/sync" SYNC_INTERVAL=3600
mkdir -p "$SYNCD_DATA"
abstract="@imap-mcp-test-notify-$$-$RANDOM"
listen "$abstract" "$work/syncd.msgs"
NOTIFY_SOCKET=$abstract WATCHDOG_USEC=400000 "$build/syncd" --config "$SYNCD_CONF" 2>>"$SYNCD_LOG" &
spid=$!; pids+=($spid)
wait_line '^READY=1' "$work/syncd.msgs" 30 || fail "syncd: no READY=1"
# A new index: each migration is announced, with more start time asked of
# systemd (a rebuild of the full-text index takes about a minute at 300,000
# messages: past the default start timeout, syncd would be killed and the
# migration rolled back at every start), all before READY=1.
ready_at=$(grep -n '^READY=1' "$work/syncd.msgs" | head -1 | cut -d: -f1)
grep -n '^STATUS=migrating the index: 0016_packed_text|EXTEND_TIMEOUT_USEC=[0-9]*$' \
    "$work/syncd.msgs" | head -1 | cut -d: -f1 > "$work/mig_at" || true
[ -s "$work/mig_at" ] && (($(cat "$work/mig_at") < ready_at)) ||
	fail "syncd: migration 0016 not announced (STATUS and EXTEND_TIMEOUT_USEC) before READY=1"
migrations=$(count '^STATUS=migrating the index' "$work/syncd.msgs")
# The first tick runs; the watchdog keeps coming while it idles until the next.
for _ in $(seq 200); do
	[ "$(syncd_sql 'SELECT count(*) FROM messages' 2>/dev/null || echo 0)" = 7 ] && break
	sleep 0.1
done
[ "$(syncd_sql 'SELECT count(*) FROM messages')" = 7 ] || fail "syncd did not index the 7 messages"
before=$(count '^WATCHDOG=1$' "$work/syncd.msgs")
sleep 1.5
after=$(count '^WATCHDOG=1$' "$work/syncd.msgs")
((after - before >= 4)) || fail "syncd: $((after - before)) WATCHDOG=1 in 1.5 s idle at a 200 ms period"
kill -TERM "$spid"; wait "$spid" || fail "syncd exit status $?"
wait_line '^STOPPING=1$' "$work/syncd.msgs" 5 || fail "syncd: no STOPPING=1"
# Workers never notify (NotifyAccess=main would drop it anyway).
[ "$(count '^READY=1' "$work/syncd.msgs")" = 1 ] || fail "syncd: READY=1 more than once"
# Started again on the same index: nothing left to migrate, nothing announced.
NOTIFY_SOCKET=$abstract "$build/syncd" --config "$SYNCD_CONF" 2>>"$SYNCD_LOG" &
spid=$!; pids+=($spid)
for _ in $(seq 300); do [ "$(count '^READY=1' "$work/syncd.msgs")" = 2 ] && break; sleep 0.1; done
[ "$(count '^READY=1' "$work/syncd.msgs")" = 2 ] || fail "syncd (second start): no READY=1"
[ "$(count '^STATUS=migrating the index' "$work/syncd.msgs")" = "$migrations" ] ||
	fail "syncd (second start): a migration was announced again"
kill -TERM "$spid"; wait "$spid" || fail "syncd exit status $?"
syncd_log_clean "$SYNCD_LOG" || fail "sanitizer report in syncd's log"
((fails == 0)) || exit 1
echo "test_notify: ok"
