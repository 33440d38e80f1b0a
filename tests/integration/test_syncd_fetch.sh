#!/usr/bin/env bash
# Fetch what is missing (docs/syncd.md "One tick", step 5), against a real
# Dovecot: after a backfill of a 37-message folder, one new mail is fetched
# alone (its body, and its size probe), not with the 37 bodies already
# indexed in its 100-UID bucket; two new mails are one range of two; the
# index ends exactly the server's.  The per-tick range cap is shared by the
# folders that need it.  SYNC_SINCE indexes only mail from a day on.
set -euo pipefail
src=${MB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
MB_BUILD_DIR=${MB_BUILD_DIR:-$src/build}
. "$src/tests/lib/dovecot.sh"
. "$src/tests/lib/syncd.sh"
. "$src/tests/lib/testenv.sh"

testenv_begin

mkdir "$work/srv"
dovecot_start "$work/srv"
python3 "$src/tests/lib/mkmail.py" "$work/m:40:sm"
dovecot_load_maildir Small "$work"/m/sm000{01..37}.eml
syncd_init "$work" SYNC_FOLDERS=Small SYNC_WORKERS=2
syncd --backfill > /dev/null || fail "backfill exit $?"
diff <(server_uids Small) <(index_uids Small) > /dev/null || fail "Small not indexed"

# bodies: messages fetched whole so far, every session (each message of a
# body FETCH answer is one "BODY[] {n}" literal in the server's output).
bodies() { cat "$DOVECOT_RAWLOG"/*.out 2>/dev/null | tr -d '\r' | grep -cE ' \* [0-9]+ FETCH .*BODY\[\] \{' || true; }

# One new mail: one body fetched, and the size probe names that UID only.
before=$(bodies)
dovecot_append Small "$work/m/sm00038.eml"
syncd --once || fail "tick exit $?"
dovecot_wait_commands ' UID FETCH 38 .*BODY\.PEEK\[\]' 1 > /dev/null ||
    fail "no body FETCH of UID 38 alone: $(cat "$DOVECOT_RAWLOG"/*.in | tr -d '\r' | grep ' UID FETCH ' | tail -3)"
n=$(($(bodies) - before))
echo "one new mail in a folder of 37: $n bodies fetched"
[ "$n" = 1 ] || fail "one new mail fetched $n bodies"
# The range runs to the bucket's end (38:100: mail arriving meanwhile comes
# too); UIDs that do not exist cost nothing.
dovecot_count_commands ' UID FETCH 38:100 \(UID RFC822\.SIZE\)' | grep -qx 1 || fail "the size probe was not of 38:100"
diff <(server_uids Small) <(index_uids Small) > /dev/null || fail "Small after the new mail"

# Two more: one range of just those two, two bodies.
before=$(bodies)
dovecot_append Small "$work/m/sm00039.eml"
dovecot_append Small "$work/m/sm00040.eml"
syncd --once || fail "second tick exit $?"
n=$(($(bodies) - before))
[ "$n" = 2 ] || fail "two new mails fetched $n bodies"
dovecot_count_commands ' UID FETCH 39:40 .*BODY\.PEEK\[\]' | grep -qx 1 || fail "no body FETCH of 39:40"
dovecot_count_commands ' UID FETCH 1:[0-9]+ .*BODY\.PEEK\[\]' | grep -qx 1 || fail "a bucket was fetched again from UID 1"
diff <(server_uids Small) <(index_uids Small) > /dev/null || fail "Small after two new mails"
# The per-tick range cap is shared across folders: with two folders to
# backfill and a cap of 4, a daemon-mode tick queues ranges of both, not 4
# of the first while the other waits for it to finish.
python3 "$src/tests/lib/mkmail.py" "$work/a:60:aa" "$work/b:60:bb"
dovecot_load_maildir Alpha "$work"/a/*.eml
dovecot_load_maildir Beta "$work"/b/*.eml
echo "=== syncd --once (shared cap)" >> "$SYNCD_LOG"
SYNC_FOLDERS=Alpha,Beta SYNC_RANGE_SIZE=10 SYNC_MAX_RANGES_PER_TICK=4 syncd --once ||
    fail "capped tick exit $?"
a=$(index_uids Alpha | wc -l) b=$(index_uids Beta | wc -l)
echo "one capped tick: Alpha $a, Beta $b messages"
[ "$a" -gt 0 ] && [ "$b" -gt 0 ] || fail "the cap was not shared: Alpha $a, Beta $b"
[ $((a + b)) = 40 ] || fail "the cap (4 ranges of 10) was not used whole: $((a + b))"
# SYNC_SINCE: only mail received on or after the day (INTERNALDATE, Maildir:
# the file's time), by UID SEARCH SINCE; the older mail never counts as a
# gap, the watermark reaches the top and the next tick changes nothing.
python3 "$src/tests/lib/mkmail.py" "$work/d:6:dd"
dovecot_load_maildir Dated "$work"/d/*.eml
dated_path=$(dovecot_doveadm mailbox path -u "$DOVECOT_USER" Dated)
mapfile -t files < <(ls "$dated_path"/cur | sort)
for k in 0 1 2; do touch -d 2019-06-01 "$dated_path/cur/${files[$k]}"; done
rc=0; SYNC_SINCE=2020-02-30 syncd --once || rc=$?
[ "$rc" = 78 ] || fail "SYNC_SINCE=2020-02-30: exit $rc, want 78"
grep -q "SYNC_SINCE: '2020-02-30' is not a day" "$SYNCD_LOG" || fail "no SYNC_SINCE error line"
echo "=== syncd --once (SYNC_SINCE)" >> "$SYNCD_LOG"
SYNC_FOLDERS=Dated SYNC_SINCE=2020-01-01 syncd --once || fail "SYNC_SINCE tick exit $?"
[ "$(index_uids Dated | paste -sd,)" = "4,5,6" ] || fail "SYNC_SINCE indexed $(index_uids Dated | paste -sd,)"
dovecot_count_commands ' UID SEARCH UID 1:\* SINCE 1-Jan-2020' | grep -qx 1 || fail "no UID SEARCH SINCE"
SYNC_FOLDERS=Dated SYNC_SINCE=2020-01-01 syncd --once || fail "second SYNC_SINCE tick exit $?"
[ "$(syncd_sql "SELECT watermark FROM folders WHERE name='Dated'")" = 6 ] || fail "watermark not at the top"
[ "$(index_uids Dated | paste -sd,)" = "4,5,6" ] || fail "second SYNC_SINCE tick: $(index_uids Dated | paste -sd,)"
grep -q "folder 'Dated': UID [0-9]* is in the mailbox but not in the index" "$SYNCD_LOG" &&
    fail "the older mail was taken for a gap"
syncd_log_clean || fail "sanitizer"
ok=1
echo "PASS: test_syncd_fetch"
