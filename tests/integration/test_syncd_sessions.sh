#!/usr/bin/env bash
# How hard a backfill works the IMAP server.  A worker keeps its session and
# its folder examined from range to range (docs/syncd.md, "Workers"): on
# Dovecot an EXAMINE costs time in proportion to the folder's size, so one
# per range made the server's work grow with the square of the mailbox.
#   - a backfill of 3 folders cut into many small ranges: the workers' EXAMINEs
#     are bounded by folders x workers, not by the number of ranges, and every
#     message is indexed once
#   - the quiet tick that follows is unchanged: one session, one EXAMINE per
#     folder, no SEARCH, no FETCH
#   - mail that arrives after a worker's EXAMINE, in a range above what its
#     session has seen, is fetched in the same run (a scripted peer that, as
#     Dovecot, shows new mail to a session only at a sync point)
set -euo pipefail
src=${MB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
MB_BUILD_DIR=${MB_BUILD_DIR:-$src/build}
. "$src/tests/lib/dovecot.sh"
. "$src/tests/lib/syncd.sh"
. "$src/tests/lib/testenv.sh"

testenv_begin peer:KILL
TESTENV_LOGS="$work/syncd.log $work/peer/syncd.log"

# wait_sessions_logged: Dovecot has written the sessions' rawlogs (it may
# do so a moment after the client saw the reply, and workers are stopped
# with SIGTERM, without a LOGOUT): until the directory stops growing, <= 5 s.
wait_sessions_logged() {
	local last=-1 now i
	for i in $(seq 50); do
		now=$(cat "$DOVECOT_RAWLOG"/* 2>/dev/null | wc -c)
		[ "$now" = "$last" ] && return 0
		last=$now
		sleep 0.1
	done
}

# examines_by_workers: EXAMINEs sent by sessions that did not LIST (the
# scheduler's session LISTs first; a worker's never does).
examines_by_workers() {
	local f n=0 c
	for f in "$DOVECOT_RAWLOG"/*.in; do
		[ -e "$f" ] || continue
		tr -d '\r' < "$f" | grep -qE ' LIST ' && continue
		c=$(tr -d '\r' < "$f" | grep -cE ' EXAMINE ' || true)
		n=$((n + c))
	done
	echo "$n"
}

mkdir "$work/srv"
dovecot_start "$work/srv"
python3 "$src/tests/lib/mkmail.py" "$work/inbox:150:in" "$work/arch:120:ar" "$work/lists:90:li"
dovecot_load_maildir INBOX "$work"/inbox/*.eml
dovecot_load_maildir Archive "$work"/arch/*.eml
dovecot_load_maildir Lists "$work"/lists/*.eml

folders=3 workers=3
syncd_init "$work" SYNC_RANGE_SIZE=10 SYNC_WORKERS=$workers SYNC_FOLDERS=INBOX,Archive,Lists
syncd --backfill > "$work/backfill.out" || fail "backfill exit $?"
grep -q "every folder is indexed" "$work/backfill.out" || fail "backfill did not converge"
for f in INBOX Archive Lists; do
	diff <(server_uids "$f") <(index_uids "$f") > /dev/null || fail "folder $f: index != mailbox"
done
[ "$(syncd_sql "SELECT count(DISTINCT message_id) FROM messages")" = 360 ] || fail "row count"
ranges=$(grep -cE "UIDs [0-9]+:[0-9]+: [0-9]+ messages written" "$SYNCD_LOG" || true)
# 15 + 12 + 9 ranges of 10 UIDs: many more than folders x workers.
[ "$ranges" -ge 36 ] || fail "only $ranges ranges: the bound below would prove nothing"
# Workers ran in one tick only (the second tick found nothing to fetch).
[ "$(grep -c "tick [0-9]* done: 0 messages written" "$SYNCD_LOG")" -ge 1 ] || fail "no quiet tick"
wait_sessions_logged
n=$(examines_by_workers)
[ "$n" -ge 1 ] || fail "no worker EXAMINE counted: the rawlog check is broken"
[ "$n" -le $((folders * workers)) ] ||
    fail "workers sent $n EXAMINEs for $ranges ranges (bound: $((folders * workers)))"
[ "$(dovecot_count_commands ' (SELECT|STORE|APPEND|EXPUNGE) ')" = 0 ] || fail "a writing command was sent"

# The quiet tick: one session, one EXAMINE per folder, no SEARCH or FETCH.
ls "$DOVECOT_RAWLOG" | sort > "$work/rawlog.before"
syncd --once || fail "quiet tick exit $?"
wait_sessions_logged
new=$(comm -13 "$work/rawlog.before" <(ls "$DOVECOT_RAWLOG" | sort) | grep '\.in$' || true)
[ "$(echo "$new" | grep -c .)" = 1 ] || fail "quiet tick opened $(echo "$new" | grep -c .) sessions"
quiet=$(tr -d '\r' < "$DOVECOT_RAWLOG/$new")
[ "$(grep -cE ' EXAMINE ' <<< "$quiet")" = $folders ] || fail "quiet tick EXAMINEs: $quiet"
grep -qE ' UID (SEARCH|FETCH) ' <<< "$quiet" && fail "quiet tick sent SEARCH or FETCH: $quiet"

# New mail after the worker's EXAMINE (the peer's new_mail mode: UID 4
# arrives once the first range is fetched, and a session sees it only after
# a NOOP or EXAMINE): the range 3:4 still brings it in, on the same session.
dir=$work/peer
mkdir "$dir"
(umask 077; printf 'peer-pass-word' > "$work/pw")
python3 "$src/tests/lib/imap_peer.py" --mode new_mail --port-file "$dir/port" > /dev/null 2>&1 &
peer=$!
for _ in $(seq 200); do [ -s "$dir/port" ] && break; sleep 0.05; done
[ -s "$dir/port" ] || fail "peer did not start"
backfill_log=$SYNCD_LOG
export SYNCD_LOG=$dir/syncd.log
DOVECOT_IMAP_PORT=$(cat "$dir/port") DOVECOT_USER=alice DOVECOT_PASSWORD_FILE=$work/pw \
    syncd_init "$dir" SYNC_FOLDERS=INBOX SYNC_WORKERS=1 SYNC_RANGE_SIZE=2
syncd --once || fail "peer: exit $?"
uids=$(syncd_sql "SELECT group_concat(uid) FROM (SELECT uid FROM messages ORDER BY uid)")
[ "$uids" = "1,2,3,4" ] || fail "peer: indexed UIDs $uids, want 1,2,3,4"
# Two ranges, one worker session: the scheduler's EXAMINE and the worker's.
[ "$(grep -c ' EXAMINE ' "$dir/port.log")" = 2 ] || fail "peer: EXAMINEs: $(grep -c ' EXAMINE ' "$dir/port.log")"

syncd_log_clean "$backfill_log" "$dir/syncd.log" || fail "sanitizer report"
ok=1
echo PASS
