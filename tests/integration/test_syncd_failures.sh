#!/usr/bin/env bash
# syncd when things go wrong, against a real Dovecot:
#  - a wrong password costs exactly one LOGIN per tick (no worker starts, no
#    retry) and says so;
#  - a range that fails every time is retried, then lands in dead_letters
#    with one log line naming folder, uidvalidity and UID range, while the
#    other ranges are written; the next tick picks it up again once the
#    fault is gone;
#  - a worker killed mid-range costs that range an attempt, and the range
#    is written by its replacement;
#  - the password appears in no log line in any of its forms, at debug
#    level, on every path above.
set -euo pipefail
src=${MB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
MB_BUILD_DIR=${MB_BUILD_DIR:-$src/build}
. "$src/tests/lib/dovecot.sh"
. "$src/tests/lib/syncd.sh"
. "$src/tests/lib/testenv.sh"

testenv_begin

# A password with the characters that change its quoted and base64 forms.
export DOVECOT_PASSWORD='s3cr"et\Pw!x9'
mkdir "$work/srv"
dovecot_start "$work/srv"
python3 "$src/tests/lib/mkmail.py" "$work/m:150:fl:7" "$work/big:600:bg:0:16"
dovecot_load_maildir INBOX "$work"/m/fl00{001..120}.eml
dovecot_load_maildir Faulty "$work"/m/fl00{121..150}.eml
syncd_init "$work" SYNC_RETRY_BACKOFF=0 SYNC_MAX_ATTEMPTS=3 SYNC_WORKERS=2 "SYNC_FOLDERS=INBOX,Faulty"

# 1. A wrong password: one LOGIN per tick, no workers, exit status 77 (auth).
(umask 077; printf 'not-the-password' > "$work/wrong")
sed -i "s|^IMAP_PASSWORD_FILE=.*|IMAP_PASSWORD_FILE=$work/wrong|" "$SYNCD_CONF"
before=$(dovecot_login_attempts)
rc=0; syncd --once || rc=$?
[ "$rc" = 77 ] || fail "a refused login exited $rc, want 77"
[ "$(dovecot_login_attempts)" = $((before + 1)) ] || fail "logins after one tick: $(( $(dovecot_login_attempts) - before ))"
syncd --once && fail "a refused login exited 0"
[ "$(dovecot_login_attempts)" = $((before + 2)) ] || fail "logins after two ticks: $(( $(dovecot_login_attempts) - before ))"
grep -q "login refused: .*not retrying until the next tick" "$SYNCD_LOG" || fail "no login-refused line"
grep -q "worker\[" "$SYNCD_LOG" && fail "a worker started after a refused login"
[ "$(syncd_sql "SELECT count(*) FROM messages")" = 0 ] || fail "rows written without a login"
# A backfill stops too, loudly, instead of spinning.
rc=0; syncd --backfill > /dev/null || rc=$?
[ "$rc" = 77 ] || fail "backfill with a refused login exited $rc, want 77"
[ "$(dovecot_login_attempts)" = $((before + 3)) ] || fail "backfill retried the login"
sed -i "s|^IMAP_PASSWORD_FILE=.*|IMAP_PASSWORD_FILE=$DOVECOT_PASSWORD_FILE|" "$SYNCD_CONF"
# A group-readable password file is refused before any connection.
chmod 640 "$work/wrong"
rc=0; IMAP_PASSWORD_FILE=$work/wrong syncd --once || rc=$?
[ "$rc" = 78 ] || fail "group-readable password file: exit $rc, want 78 (config)"
grep -q "mode 0640 lets group or others read it" "$SYNCD_LOG" || fail "no mode refusal line"
[ "$(dovecot_login_attempts)" = $((before + 3)) ] || fail "logged in with a refused password file"

# 2. A range that fails every time.  Faulty's UID 6 (fl00126) has an
# attachment; a plain file where its blob directory belongs makes storing it
# fail, in a way no permission bit can bypass.
sha=$(printf 'attachment of fl message 126\n%.0s' $(seq 20) | sha256sum | cut -c1-64)
mkdir -p "$SYNCD_DATA/blobs"
: > "$SYNCD_DATA/blobs/${sha:0:2}"
# INBOX is written, Faulty's range dead-lettered: a partial run, status 75.
rc=0; syncd --once || rc=$?
[ "$rc" = 75 ] || fail "tick with a failing range exit $rc, want 75"
v=$(syncd_sql "SELECT uidvalidity FROM folders WHERE name = 'Faulty'")
[ "$(syncd_sql "SELECT folder_name, uidvalidity, first_uid, last_uid, attempts FROM dead_letters")" = "Faulty|$v|1|100|3" ] ||
    fail "dead_letters: $(syncd_sql "SELECT * FROM dead_letters")"
[ "$(grep -c "dead letter: folder 'Faulty' uidvalidity $v UIDs 1:100 failed 3 times" "$SYNCD_LOG")" = 1 ] ||
    fail "want exactly one dead-letter line"
[ "$(grep -c "folder 'Faulty' uidvalidity $v UIDs 1:100: attempt [12] of 3 failed" "$SYNCD_LOG")" = 2 ] ||
    fail "want two retry lines"
[ "$(syncd_sql "SELECT count(*) FROM work_queue")" = 0 ] || fail "dead range still queued"
diff <(server_uids INBOX) <(index_uids INBOX) > /dev/null || fail "INBOX not written beside the failing range"
[ "$(index_uids Faulty | wc -l)" = 0 ] || fail "part of a failed range was written"
grep -q "folder 'Faulty' uidvalidity $v UIDs 1:100, 3 attempts: blob:" <<< "$(syncd --status)" || fail "status lacks the dead letter"
# The fault gone, the next tick finds the gap again and fills it.
rm "$SYNCD_DATA/blobs/${sha:0:2}"
syncd --once || fail "tick after the fault"
diff <(server_uids Faulty) <(index_uids Faulty) > /dev/null || fail "Faulty not indexed after the fault"

# 3. A worker killed mid-range: its range is retried and written.  The kill
# hook (SYNCD_TEST_WORKER_STOP_FILE, docs/syncd.md) makes the first worker to
# take the file stop itself after sending 10 rows of its range, so the kill
# lands mid-range every time, with rows the scheduler holds and must drop.
# (Killing at a range seen handed out raced the worker: on a loaded machine
# it had finished both of Big's ranges before the kill, and nothing was
# retried.)
dovecot_load_maildir Big "$work"/big/*.eml
sed -i 's/^SYNC_FOLDERS=.*/SYNC_FOLDERS=Big/' "$SYNCD_CONF"
echo "SYNC_RANGE_SIZE=300" >> "$SYNCD_CONF"
echo "=== syncd --backfill (a worker killed mid-range)" >> "$SYNCD_LOG"
stop_file="$work/stop-one-worker"
: > "$stop_file"
SYNCD_TEST_WORKER_STOP_FILE=$stop_file "$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" \
    --backfill > /dev/null 2>> "$SYNCD_LOG" &
sd=$!
stopped=
for _ in $(seq 1200); do
	for w in $(pgrep -P "$sd" || true); do
		if [ "$(ps -o stat= -p "$w" 2>/dev/null | cut -c1)" = T ]; then
			stopped=$w
			break
		fi
	done
	[ -n "$stopped" ] && break
	kill -0 "$sd" 2>/dev/null || break
	sleep 0.05
done
if [ -z "$stopped" ]; then
	kill "$sd" 2>/dev/null || true
	fail "no worker stopped itself mid-range (the kill hook)"
fi
[ ! -e "$stop_file" ] || fail "a worker stopped but the stop file is still there"
kill -KILL "$stopped"
rc=0
wait "$sd" || rc=$?
[ "$rc" = 0 ] || fail "backfill after a killed worker exit $rc"
# How the loss shows depends on which the scheduler sees first: the signal or EOF.
retried="folder 'Big' uidvalidity [0-9]+ UIDs [0-9]+:[0-9]+: attempt 1 of 3 failed: (killed by signal 9|closed its socket)"
grep -qE "$retried" "$SYNCD_LOG" || fail "the killed worker's range was not retried"
diff <(server_uids Big) <(index_uids Big) > /dev/null || fail "Big not complete after a killed worker"
[ "$(syncd_sql "SELECT count(*) FROM dead_letters WHERE folder_name = 'Big'")" = 0 ] || fail "Big dead-lettered"

# 4. The password, in every form it could take, is in no log line.
b64() { printf '%s' "$1" | base64 -w0; }
quoted=${DOVECOT_PASSWORD//\\/\\\\}
quoted=${quoted//\"/\\\"}
for needle in "$DOVECOT_PASSWORD" "$quoted" "$(b64 "$DOVECOT_PASSWORD")" \
    "$(printf '\0%s\0%s' "$DOVECOT_USER" "$DOVECOT_PASSWORD" | base64 -w0)" \
    "$(printf '%s\0%s\0%s' "$DOVECOT_USER" "$DOVECOT_USER" "$DOVECOT_PASSWORD" | base64 -w0)"; do
	grep -qF -- "$needle" "$SYNCD_LOG" && fail "password form '$needle' in the log"
	grep -qF -- "${needle%%=*}" "$SYNCD_LOG" && fail "unpadded password form in the log"
done
# The wrong password of part 1 was the password then: hidden just the same.
grep -qF "not-the-password" "$SYNCD_LOG" && fail "the refused password is in the log"
grep -q "imap >>> <private" "$SYNCD_LOG" || fail "the debug log has no LOGIN line to check"
[ "$(grep -c . "$SYNCD_LOG")" -gt 200 ] || fail "debug log suspiciously short"

syncd_log_clean "$SYNCD_LOG" "$work"/*.log || fail "sanitizer report"
ok=1
echo PASS
