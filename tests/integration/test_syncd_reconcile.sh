#!/usr/bin/env bash
# What the user does to indexed mail in another client reaches the index on
# the next tick (docs/syncd.md "Flags and expunges"), against a real Dovecot:
#   CONDSTORE + QRESYNC: read, unread, flagged and a keyword arrive through
#   UID FETCH (CHANGEDSINCE n VANISHED); an expunged message and a message
#   moved away are deleted from VANISHED, and the moved one is indexed once,
#   in its new folder; syncd changes no flag upstream (invariant 1); the
#   quiet tick after that sends no FETCH and no SEARCH.
#   An expunge the mod-sequence no longer tells of (an index older than this
#   code) is found by counting, with one UID SEARCH, and only then; flags
#   changed before the upgrade are found by one full rescan (migration 0002).
#   Without CONDSTORE (a listener whose capabilities lack it): every tick
#   asks for the flags of a window of each folder (SYNC_FLAG_BUDGET), so a
#   flag set in another session with no new mail arrives with ONE --once;
#   the whole folder is UID FETCH 1:n (UID FLAGS), expunges are found by
#   it, and such a quiet tick sends one FLAGS fetch per folder and no
#   SEARCH; with a budget smaller than the folder the window goes round
#   over the following runs of --once (its cursor is kept in the index),
#   and no tick is answered the flags of more messages than the budget
#   (counted in Dovecot's rawlog).
set -euo pipefail
src=${MB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
MB_BUILD_DIR=${MB_BUILD_DIR:-$src/build}
. "$src/tests/lib/dovecot.sh"
. "$src/tests/lib/syncd.sh"
. "$src/tests/lib/testenv.sh"

testenv_begin

# 127.0.0.2 is the same server without CONDSTORE and QRESYNC (the last part).
DOVECOT_EXTRA_CONF='local 127.0.0.2 {
  protocol imap {
    imap_capability = IMAP4rev1 LITERAL+ SASL-IR LOGIN-REFERRALS ID ENABLE IDLE SORT UIDPLUS MOVE SPECIAL-USE
  }
}'
mkdir "$work/srv"
dovecot_start "$work/srv"
python3 "$src/tests/lib/mkmail.py" "$work/inbox:30:in" "$work/new:2:nw"
dovecot_load_maildir INBOX "$work"/inbox/*.eml
dovecot_create_folder Archive
u() { dovecot_doveadm "$@"; }
u flags add -u "$DOVECOT_USER" '\Seen' mailbox INBOX uid 5

syncd_init "$work" SYNC_RANGE_SIZE=10 SYNC_WORKERS=2 SYNC_FOLDERS=INBOX,Archive
syncd --backfill > /dev/null || fail "backfill exit $?"
diff <(server_uids INBOX) <(index_uids INBOX) > /dev/null || fail "INBOX not indexed"

row() {	# FOLDER UID COLUMN: the indexed value (current uidvalidity)
	syncd_sql "SELECT m.$3 FROM messages m JOIN folders f ON f.id = m.folder_id
	    WHERE f.name = '$1' AND m.uidvalidity = f.uidvalidity AND m.uid = $2"
}
unread() {	# mcpd's is:unread: the \Seen bit of the flags column
	syncd_sql "SELECT group_concat(uid) FROM (SELECT m.uid FROM messages m
	    JOIN folders f ON f.id = m.folder_id WHERE f.name = 'INBOX' AND m.flags & 1 = 0
	    AND m.uid <= 6 ORDER BY m.uid)"
}
[ "$(unread)" = "1,2,3,4,6" ] || fail "is:unread before: $(unread)"

# The user, in another client: reads 3, marks 5 unread, flags 4, labels 6,
# deletes 7 for good and moves 8 to Archive.
u flags add -u "$DOVECOT_USER" '\Seen' mailbox INBOX uid 3
u flags remove -u "$DOVECOT_USER" '\Seen' mailbox INBOX uid 5
u flags add -u "$DOVECOT_USER" '\Flagged' mailbox INBOX uid 4
# shellcheck disable=SC2016 # $Label1 is the keyword itself
u flags add -u "$DOVECOT_USER" '$Label1' mailbox INBOX uid 6
u expunge -u "$DOVECOT_USER" mailbox INBOX uid 7
u move -u "$DOVECOT_USER" Archive mailbox INBOX uid 8
flags_before=$(u fetch -u "$DOVECOT_USER" 'mailbox uid flags' ALL | sort)

syncd --once || fail "reconciling tick exit $?"
[ "$(unread)" = "1,2,4,5,6" ] || fail "is:unread after: $(unread)"
[ "$(row INBOX 4 'flags & 4')" = 4 ] || fail "\\Flagged not recorded"
# shellcheck disable=SC2016
[ "$(row INBOX 6 keywords)" = '$Label1' ] || fail "keyword: '$(row INBOX 6 keywords)'"
[ "$(row INBOX 7 uid)" = "" ] || fail "expunged UID 7 still indexed"
[ "$(row INBOX 8 uid)" = "" ] || fail "moved UID 8 still indexed in INBOX"
[ "$(syncd_sql "SELECT f.name FROM messages m JOIN folders f ON f.id = m.folder_id
    WHERE m.message_id = 'in-8@mkmail.test'")" = Archive ] || fail "moved message: not exactly one row, in Archive"
[ "$(syncd_sql "SELECT count(*) FROM messages WHERE message_id = 'in-7@mkmail.test'")" = 0 ] ||
    fail "the expunged message is still searchable"
diff <(server_uids INBOX) <(index_uids INBOX) > /dev/null || fail "INBOX: index != mailbox"
grep -q "folder 'INBOX': changes since the last tick (CHANGEDSINCE, VANISHED): flags of 4 messages updated, 2 expunged messages removed" \
    "$SYNCD_LOG" || fail "no reconciliation line (QRESYNC path)"
[ "$(dovecot_count_commands ' ENABLE CONDSTORE QRESYNC$')" -ge 1 ] || fail "QRESYNC not enabled"
[ "$(dovecot_count_commands ' UID FETCH 1:30 \(UID FLAGS\) \(CHANGEDSINCE [0-9]+ VANISHED\)$')" = 1 ] ||
    fail "no CHANGEDSINCE VANISHED fetch"
[ "$(syncd_sql "SELECT highestmodseq FROM folders WHERE name = 'INBOX'")" = \
    "$(dovecot_status INBOX highestmodseq)" ] || fail "HIGHESTMODSEQ not recorded"
# Invariant 1: syncd changed nothing upstream (\Seen above all).
[ "$(u fetch -u "$DOVECOT_USER" 'mailbox uid flags' ALL | sort)" = "$flags_before" ] ||
    fail "flags changed by the tick"
[ "$(dovecot_count_commands ' (SELECT|STORE|APPEND|EXPUNGE|MOVE|COPY) ')" = 0 ] ||
    fail "a writing command was sent"

# The quiet tick: EXAMINE, nothing else.
quiet_tick() {
	local searches fetches
	searches=$(dovecot_count_commands ' UID SEARCH ')
	fetches=$(dovecot_count_commands ' UID FETCH ')
	syncd --once || fail "$1: quiet tick exit"
	[ "$(dovecot_count_commands ' UID SEARCH ')" = "$searches" ] || fail "$1: a quiet tick sent SEARCH"
	[ "$(dovecot_count_commands ' UID FETCH ')" = "$fetches" ] || fail "$1: a quiet tick sent FETCH"
}
# Archive's watermark reaches the moved message's UID at the next tick's
# SEARCH, as for any new mail (docs/syncd.md, One tick); then all is quiet.
syncd --once || fail "settling tick exit"
quiet_tick "after QRESYNC"

# An expunge the mod-sequence does not tell of: as an index written before
# this code was, with HIGHESTMODSEQ recorded past the expunge.  The counts
# differ, so one UID SEARCH finds it; the next tick is quiet again.
u expunge -u "$DOVECOT_USER" mailbox INBOX uid 9
syncd_sql "UPDATE folders SET highestmodseq = $(dovecot_status INBOX highestmodseq) WHERE name = 'INBOX'"
searches=$(dovecot_count_commands ' UID SEARCH ')
syncd --once || fail "expunge-count tick exit"
[ "$(row INBOX 9 uid)" = "" ] || fail "expunged UID 9 still indexed"
[ "$(dovecot_count_commands ' UID SEARCH ')" = $((searches + 1)) ] || fail "want one UID SEARCH for the count"
grep -q "folder 'INBOX': expunge check: flags of 0 messages updated, 1 expunged message removed" "$SYNCD_LOG" ||
    fail "no expunge-check line"
quiet_tick "after the count"

# An index from before this code: migration 0002 forgot its HIGHESTMODSEQ,
# so the first tick rescans every flag once (an \Answered set long ago is
# seen), records HIGHESTMODSEQ, and the tick after it is quiet.
u flags add -u "$DOVECOT_USER" '\Answered' mailbox INBOX uid 11
syncd_sql "UPDATE folders SET highestmodseq = 0 WHERE name = 'INBOX'"
syncd --once || fail "upgrade tick exit"
[ "$(row INBOX 11 'flags & 2')" = 2 ] || fail "upgrade: \\Answered not recorded"
[ "$(grep -c "folder 'INBOX': full flag rescan: flags of 1 message updated, 0 expunged" "$SYNCD_LOG")" = 1 ] ||
    fail "upgrade: no rescan line"
quiet_tick "after the upgrade rescan"

# Without CONDSTORE: the same server through the listener that hides it.
sed -i 's/^IMAP_HOST=.*/IMAP_HOST=127.0.0.2/' "$SYNCD_CONF"
u flags add -u "$DOVECOT_USER" '\Seen' mailbox INBOX uid 1
u flags remove -u "$DOVECOT_USER" '\Flagged' mailbox INBOX uid 4
u expunge -u "$DOVECOT_USER" mailbox INBOX uid 10
dovecot_append INBOX "$work/new/nw00001.eml"	# UIDNEXT moves: the rescan is due
modseq_cmds=$(dovecot_count_commands 'ENABLE|CHANGEDSINCE|\(CONDSTORE\)')
rescans=$(dovecot_count_commands ' UID FETCH 1:30 \(UID FLAGS\)$')
syncd --once || fail "no-CONDSTORE tick exit $?"
[ "$(dovecot_count_commands 'ENABLE|CHANGEDSINCE|\(CONDSTORE\)')" = "$modseq_cmds" ] ||
    fail "CONDSTORE used on a server without it"
[ "$(row INBOX 1 'flags & 1')" = 1 ] || fail "no CONDSTORE: \\Seen not recorded"
[ "$(row INBOX 4 'flags & 4')" = 0 ] || fail "no CONDSTORE: \\Flagged not cleared"
[ "$(row INBOX 10 uid)" = "" ] || fail "no CONDSTORE: expunged UID 10 still indexed"
diff <(server_uids INBOX) <(index_uids INBOX) > /dev/null || fail "no CONDSTORE: INBOX: index != mailbox"
grep -q "folder 'INBOX': full flag rescan: flags of 2 messages updated, 1 expunged message removed" \
    "$SYNCD_LOG" || fail "no rescan line"
[ "$(dovecot_count_commands ' UID FETCH 1:30 \(UID FLAGS\)$')" = $((rescans + 1)) ] || fail "no flag rescan fetch"
syncd --once || fail "settling tick exit"	# the new mail's watermark, as above

# Flags answered to syncd so far (a FETCH of UID and FLAGS only: bodies come
# with more items), over every session's rawlog.
flags_answered() {
	cat "$DOVECOT_RAWLOG"/*.out 2>/dev/null | tr -d '\r' |
	    grep -cE '^[0-9.]+ \* [0-9]+ FETCH \(UID [0-9]+ FLAGS \([^)]*\)\)$' || true
}
# The quiet tick without CONDSTORE: nothing proves a folder unchanged, so
# each folder's flags are asked (INBOX and Archive: one UID FLAGS fetch
# each, nothing else fetched), and still no SEARCH.
searches=$(dovecot_count_commands ' UID SEARCH ')
fetches=$(dovecot_count_commands ' UID FETCH ')
flag_fetches=$(dovecot_count_commands ' UID FETCH [0-9:,]+ \(UID FLAGS\)$')
syncd --once || fail "quiet tick without CONDSTORE exit"
[ "$(dovecot_count_commands ' UID SEARCH ')" = "$searches" ] || fail "no CONDSTORE: a quiet tick sent SEARCH"
[ "$(dovecot_count_commands ' UID FETCH [0-9:,]+ \(UID FLAGS\)$')" = $((flag_fetches + 2)) ] ||
    fail "no CONDSTORE: want one flag fetch per folder in a quiet tick"
[ "$(dovecot_count_commands ' UID FETCH ')" = $((fetches + 2)) ] || fail "no CONDSTORE: a quiet tick fetched more than flags"

# A flag set in another session, no new mail: ONE tick brings it (it waited
# for new mail or the 24th daemon tick before, and for cron for ever).
u flags add -u "$DOVECOT_USER" '\Flagged' mailbox INBOX uid 20
u flags remove -u "$DOVECOT_USER" '\Seen' mailbox INBOX uid 3
[ "$(row INBOX 20 'flags & 4')" = 0 ] || fail "UID 20 flagged before the tick"
syncd --once || fail "flag tick without CONDSTORE exit"
[ "$(row INBOX 20 'flags & 4')" = 4 ] || fail "no CONDSTORE: \\Flagged set in another session not in the index after one tick"
[ "$(unread)" = "2,3,4,5,6" ] || fail "no CONDSTORE: is:unread after one tick: $(unread)"

# A budget smaller than the folder (INBOX has 27 indexed, Archive 1): the
# window goes round over the next runs of --once, never more than the
# budget's flags answered per tick, and a change at the top arrives once
# the window gets there.
echo "SYNC_FLAG_BUDGET=12" >> "$SYNCD_CONF"
inbox_n=$(syncd_sql "SELECT count(*) FROM messages m JOIN folders f ON f.id = m.folder_id
    WHERE f.name = 'INBOX' AND m.uidvalidity = f.uidvalidity")
[ "$inbox_n" = 27 ] || fail "INBOX has $inbox_n rows, not 27"
u flags add -u "$DOVECOT_USER" '\Flagged' mailbox INBOX uid 31
seen_at=
for t in 1 2 3; do
	before=$(flags_answered)
	syncd --once || fail "budget tick $t exit"
	answered=$(($(flags_answered) - before))
	[ "$answered" -le 12 ] || fail "budget tick $t: $answered flags answered, budget 12"
	[ "$answered" -ge 11 ] || fail "budget tick $t: only $answered flags answered"
	cursor=$(syncd_sql "SELECT flag_cursor FROM folders WHERE name = 'INBOX'")
	[ -n "$seen_at" ] || [ "$(row INBOX 31 'flags & 4')" != 4 ] || seen_at=$t
	if [ "$t" = 1 ]; then
		[ "$cursor" -gt 0 ] || fail "budget tick 1: the cursor did not move ($cursor)"
		[ -z "$seen_at" ] || fail "budget tick 1 already covered UID 31"
	fi
done
[ -n "$seen_at" ] || fail "UID 31's \\Flagged not in the index after 3 budget ticks"
grep -q "folder 'INBOX': flag window of 11 of 27 messages, next from UID" "$SYNCD_LOG" ||
    fail "no flag window line"
[ "$(dovecot_count_commands ' (SELECT|STORE|APPEND|EXPUNGE|MOVE|COPY) ')" = 0 ] ||
    fail "a writing command was sent"
syncd_log_clean "$SYNCD_LOG" || fail "sanitizer report"
ok=1
echo PASS
