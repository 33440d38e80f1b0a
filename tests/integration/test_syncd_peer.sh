#!/usr/bin/env bash
# syncd against a scripted IMAP peer (tests/lib/imap_peer.py) that misbehaves
# in ways a real server will not on demand.  For each fault the worker fails
# or is killed, the range is retried with backoff, lands in dead_letters after
# SYNC_MAX_ATTEMPTS, and the run ends on its own: nothing hangs.
#   bye_mid_fetch, close_mid_literal, garbage: the worker reports and exits
#   (close_mid_literal at once, with its CPU time measured: no spin)
#   stall_mid_literal: the worker's deadline fires; the tick still ends
#   auth_fail: one LOGIN, no worker, exit status 77 (auth)
#   auth_fail_workers: the scheduler's LOGIN works, the first worker's is
#   refused: no other LOGIN that tick, exit status 77
#   every range dead-lettered: exit status 75 (partial)
set -euo pipefail
src=${MB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
MB_BUILD_DIR=${MB_BUILD_DIR:-$src/build}
. "$src/tests/lib/syncd.sh"
. "$src/tests/lib/testenv.sh"

testenv_begin peer:KILL
TESTENV_LOGS="$work/*/syncd.log"

(umask 077; printf 'peer-pass-word' > "$work/pw")

# start_peer MODE DIR: a fresh peer for one scenario; sets peer and port.
start_peer() {
	[ -z "$peer" ] || { kill -KILL "$peer" 2>/dev/null || true; wait "$peer" 2>/dev/null || true; }
	python3 "$src/tests/lib/imap_peer.py" --mode "$1" --port-file "$2/port" > /dev/null 2>&1 &
	peer=$!
	for _ in $(seq 200); do [ -s "$2/port" ] && break; sleep 0.05; done
	[ -s "$2/port" ] || fail "peer ($1) did not start"
	port=$(cat "$2/port")
}

# scenario MODE: syncd --once against a peer in MODE; leaves its dir in $dir.
scenario() {
	dir=$work/$1
	mkdir "$dir"
	start_peer "$1" "$dir"
	DOVECOT_IMAP_PORT=$port DOVECOT_USER=alice DOVECOT_PASSWORD_FILE=$work/pw \
	    SYNCD_LOG=$dir/syncd.log syncd_init "$dir" SYNC_FOLDERS=INBOX SYNC_RETRY_BACKOFF=0 \
	    SYNC_MAX_ATTEMPTS=3 SYNC_WORKERS="${WORKERS:-1}" SYNC_RANGE_TIMEOUT="${RANGE_TIMEOUT:-2}" \
	    SYNC_RANGE_SIZE="${RANGE_SIZE:-100}"
	export SYNCD_LOG=$dir/syncd.log
	start=$SECONDS
	rc=0
	# CPU seconds of syncd and every worker it reaped (bash's time counts
	# waited-for descendants), beside the wall time.
	TIMEFORMAT=%U+%S
	{ time SYNCD_TIMEOUT=60 syncd --once || rc=$?; } 2> "$dir/cpu"
	cpu=$(python3 -c "print(round($(cat "$dir/cpu"), 2))")
	elapsed=$((SECONDS - start))
	[ "$rc" != 124 ] || fail "$1: syncd hung (killed by timeout)"
}

# A connection closed inside a literal fails the attempt at once and burns
# no CPU while the range's deadline (5 s here) runs: three attempts cost
# well under a second of CPU in all (libetpan alone would spin on the
# closed socket until each deadline: about 15 CPU-seconds).
for mode in bye_mid_fetch close_mid_literal garbage; do
	if [ "$mode" = close_mid_literal ]; then RANGE_TIMEOUT=5 scenario "$mode"; else scenario "$mode"; fi
	if [ "$mode" = close_mid_literal ]; then
		echo "close_mid_literal: 3 attempts, ${cpu} CPU-s, ${elapsed} s"
		python3 -c "import sys; sys.exit(0 if $cpu < 1.5 else 1)" ||
		    fail "close_mid_literal: ${cpu} CPU-seconds for 3 attempts (a spin until the deadline)"
		[ "$elapsed" -lt 5 ] || fail "close_mid_literal: ${elapsed}s: the closed connection waited for the deadline"
		grep -q "the server closed the connection" "$SYNCD_LOG" || fail "close_mid_literal: the error does not say the server closed"
	fi
	# Every range dead-lettered: not a success for cron (75, partial).
	[ "$rc" = 75 ] || fail "$mode: exit $rc, want 75"
	[ "$(syncd_sql "SELECT folder_name, uidvalidity, first_uid, last_uid, attempts FROM dead_letters")" = "INBOX|42|1|100|3" ] ||
	    fail "$mode: dead_letters: $(syncd_sql "SELECT * FROM dead_letters")"
	[ "$(grep -c "dead letter: folder 'INBOX' uidvalidity 42 UIDs 1:100 failed 3 times" "$SYNCD_LOG")" = 1 ] ||
	    fail "$mode: want one dead-letter line"
	[ "$(syncd_sql "SELECT count(*) FROM messages")" = 0 ] || fail "$mode: a failed range wrote rows"
	# Three fetch attempts reached the peer, each on its own connection.
	[ "$(grep -c 'UID FETCH 1:100' "$dir/port.log")" = 3 ] || fail "$mode: fetch attempts: $(grep -c 'UID FETCH 1:100' "$dir/port.log")"
	grep -q "BODY.PEEK\[\]" "$dir/port.log" || fail "$mode: fetch without PEEK"
	grep -qE " (SELECT|STORE) " "$dir/port.log" && fail "$mode: a writing command"
done

# The fault persists (garbage, the last scenario, its peer still running)
# for two more ticks: still one dead letter for the range, with every
# attempt counted and its time refreshed (it used to add a row per tick).
syncd_sql "UPDATE dead_letters SET failed_at = 1"
for _ in 1 2; do
	rc=0
	SYNCD_TIMEOUT=60 syncd --once || rc=$?
	[ "$rc" = 75 ] || fail "persisting fault: exit $rc, want 75"
done
[ "$(syncd_sql "SELECT count(*) || '|' || sum(attempts) || '|' || (max(failed_at) > 1) FROM dead_letters")" = "1|9|1" ] ||
    fail "dead letters after 3 ticks of one fault: $(syncd_sql "SELECT * FROM dead_letters")"

# A peer that stalls mid-literal: the worker's deadline (2 s) fails the
# attempt; the stalled peer then serves nobody, so later workers cannot log
# in and the tick gives up, leaving the range queued.  It ends, quickly.
scenario stall_mid_literal
[ "$elapsed" -lt 40 ] || fail "stall: the tick took ${elapsed}s"
grep -qE "folder 'INBOX' uidvalidity 42 UIDs 1:100: attempt 1 of 3 failed" "$SYNCD_LOG" ||
    fail "stall: the stalled attempt was not failed"
[ "$(syncd_sql "SELECT attempts FROM work_queue")" = 1 ] || fail "stall: range not kept for retry"
grep -q "^queue: 1 range" <<< "$(syncd --status)" || fail "stall: status"

# A refused login: exactly one LOGIN, no worker, status 77 (auth), said loudly.
scenario auth_fail
[ "$rc" = 77 ] || fail "auth_fail: exit $rc, want 77"
[ "$(grep -c ' LOGIN ' "$dir/port.log")" = 1 ] || fail "auth_fail: LOGIN lines: $(grep -c ' LOGIN ' "$dir/port.log")"
grep -q "login refused: .*not retrying until the next tick" "$SYNCD_LOG" || fail "auth_fail: no log line"

# The scheduler's LOGIN works, then the server refuses: of four workers for
# three ranges, one LOGIN is tried and refused, and none after it until the
# next tick; the ranges stay queued with no attempt spent; status 77.
WORKERS=4 RANGE_SIZE=1 scenario auth_fail_workers
[ "$rc" = 77 ] || fail "auth_fail_workers: exit $rc, want 77"
[ "$(grep -c ' LOGIN ' "$dir/port.log")" = 2 ] ||
    fail "auth_fail_workers: LOGIN lines: $(grep -c ' LOGIN ' "$dir/port.log"), want 2 (scheduler + one worker)"
grep -q "no more logins until the next tick" "$SYNCD_LOG" || fail "auth_fail_workers: no log line"
[ "$(syncd_sql "SELECT count(*) || '/' || sum(attempts) FROM work_queue")" = "3/0" ] ||
    fail "auth_fail_workers: queue: $(syncd_sql "SELECT * FROM work_queue")"
grep -q "peer-pass-word" "$work"/*/syncd.log && fail "the password is in a log"

syncd_log_clean "$work"/*/syncd.log || fail "sanitizer report"
ok=1
echo PASS
