#!/usr/bin/env bash
# Crash and resume (docs/syncd.md "The crash hook", like isync's -Tj): a backfill of 5,000 messages is
# interrupted again and again, and restarted each time:
#  - at chosen commit points through SYNCD_TEST_CRASH_AT_COMMIT (odd points
#    die with a transaction open, even ones just after a COMMIT);
#  - with kill -9 of the scheduler at ten random moments (its workers die with it,
#    PR_SET_PDEATHSIG, and leave no lock behind);
#  - with SIGINT (Ctrl-C), which stops cleanly and says how to resume.
# At the end the index holds exactly the mailbox, each message once, and a
# further tick changes nothing and sends no SEARCH.
set -euo pipefail
src=${MB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
MB_BUILD_DIR=${MB_BUILD_DIR:-$src/build}
. "$src/tests/lib/dovecot.sh"
. "$src/tests/lib/syncd.sh"
. "$src/tests/lib/testenv.sh"

testenv_begin sd:KILL

mkdir "$work/srv"
dovecot_start "$work/srv"
python3 "$src/tests/lib/mkmail.py" "$work/m:5000:cr:97"
dovecot_load_maildir INBOX "$work"/m/cr0{0001..3750}.eml
dovecot_load_maildir Archive "$work"/m/cr0{3751..5000}.eml
# info level: 5,000 messages of debug IMAP traces would only slow this down.
syncd_init "$work" SYNC_RANGE_SIZE=50 SYNC_WORKERS=4 SYNC_RETRY_BACKOFF=0 LOG_LEVEL=info

rows() { syncd_sql "SELECT count(*) FROM messages" 2>/dev/null || echo 0; }

# 1. Crash at commit points, odd and even; each run resumes the last.
crashes=0
for n in 3 4 9 10 18; do
	rc=0
	SYNCD_TEST_CRASH_AT_COMMIT=$n syncd --backfill > /dev/null || rc=$?
	if [ "$rc" = 86 ]; then
		crashes=$((crashes + 1))
		grep -q "test hook: exiting at commit point $n" "$SYNCD_LOG" || fail "crash $n not logged"
	else
		[ "$rc" = 0 ] || fail "backfill (crash at $n) exit $rc"
	fi
	# The dead scheduler's workers follow it (PR_SET_PDEATHSIG).
	for _ in $(seq 100); do pgrep -f "$SYNCD_CONF" > /dev/null || break; sleep 0.05; done
	pgrep -f "$SYNCD_CONF" > /dev/null && fail "workers outlived the crash at $n"
	[ "$(syncd_sql "SELECT count(*) - count(DISTINCT folder_id || ':' || uidvalidity || ':' || uid) FROM messages")" = 0 ] ||
	    fail "duplicates after crash at $n"
done
[ "$crashes" -ge 4 ] || fail "only $crashes runs reached their crash point"
echo "after commit-point crashes: $(rows) rows"

# 2. kill -9 at random moments, ten times, restarting each time.
for i in $(seq 10); do
	"$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" --backfill > /dev/null 2>> "$SYNCD_LOG" &
	sd=$!
	sleep "0.$((RANDOM % 9 + 1))"
	kill -KILL "$sd" 2>/dev/null || true
	wait "$sd" 2>/dev/null || true
	sd=
	for _ in $(seq 100); do pgrep -f "$SYNCD_CONF" > /dev/null || break; sleep 0.05; done
	pgrep -f "$SYNCD_CONF" > /dev/null && fail "workers outlived kill -9 number $i"
	echo "after kill -9 number $i: $(rows) rows"
done

# 3. Ctrl-C: a clean stop that says how to resume.
if [ "$(rows)" -lt 5000 ]; then
	"$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" --backfill > "$work/int.out" 2>> "$SYNCD_LOG" &
	sd=$!
	sleep 0.3
	kill -INT "$sd" 2>/dev/null || true
	rc=0
	wait "$sd" || rc=$?
	sd=
	[ "$rc" = 0 ] || fail "SIGINT exit $rc"
	grep -qE "run it again to resume|every folder is indexed" "$work/int.out" || fail "SIGINT output: $(cat "$work/int.out")"
fi

# 4. Run to the end: exactly the mailbox, once.
syncd --backfill > "$work/final.out" || fail "final backfill exit $?"
grep -q "every folder is indexed" "$work/final.out" || fail "final backfill did not converge"
for f in INBOX Archive; do
	diff <(server_uids "$f") <(index_uids "$f") > /dev/null || fail "$f: index != mailbox"
done
[ "$(rows)" = 5000 ] || fail "rows: $(rows)"
[ "$(syncd_sql "SELECT count(DISTINCT message_id) FROM messages")" = 5000 ] || fail "duplicate messages"
[ "$(syncd_sql "SELECT count(*) FROM work_queue")" = 0 ] || fail "queue not empty"
[ "$(syncd_sql "SELECT count(*) FROM dead_letters")" = 0 ] || fail "dead letters after crashes"
[ "$(syncd_sql "SELECT count(*) FROM attachments")" = 51 ] || fail "attachments: $(syncd_sql "SELECT count(*) FROM attachments")"
# The FTS index followed every write, crashes included.
syncd_sql "PRAGMA integrity_check" | grep -qx ok || fail "integrity_check"

# 5. A rerun changes nothing: no SEARCH, no FETCH, the same rows.
before=$(syncd_sql "SELECT group_concat(id || ':' || uid) FROM messages")
searches=$(dovecot_count_commands ' UID SEARCH ')
fetches=$(dovecot_count_commands ' UID FETCH ')
syncd --once || fail "quiet tick after the backfill"
[ "$(dovecot_count_commands ' UID SEARCH ')" = "$searches" ] || fail "quiet tick searched"
[ "$(dovecot_count_commands ' UID FETCH ')" = "$fetches" ] || fail "quiet tick fetched"
[ "$(syncd_sql "SELECT group_concat(id || ':' || uid) FROM messages")" = "$before" ] || fail "rerun changed rows"

syncd_log_clean "$SYNCD_LOG" "$work"/*.log || fail "sanitizer report"
ok=1
echo PASS
