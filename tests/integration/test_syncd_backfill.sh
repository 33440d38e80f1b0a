#!/usr/bin/env bash
# syncd against a real Dovecot, as a user runs it: backfill indexes every
# message of every folder exactly once and marks nothing read; a quiet tick
# sends no SEARCH; new mail arrives with the next tick; a redelivered range
# writes no duplicate; a recreated folder (new UIDVALIDITY) is re-indexed
# while its old rows stay unserved, purged once it has converged; a deleted folder is skipped with a warning; a
# second syncd on the same data directory is refused; SIGHUP syncs now and
# SIGTERM stops the daemon cleanly; --status, --check-config and --rebuild say what they do;
# once caught up, a backfill and a daemon merge the full-text index into one segment;
# a backfill of 4,300 messages bounds every complete chunk of ids for the ranking.
set -euo pipefail
src=${MB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
MB_BUILD_DIR=${MB_BUILD_DIR:-$src/build}
. "$src/tests/lib/dovecot.sh"
. "$src/tests/lib/syncd.sh"
. "$src/tests/lib/testenv.sh"

testenv_begin daemon:KILL

mkdir "$work/srv"
dovecot_start "$work/srv"
python3 "$src/tests/lib/mkmail.py" "$work/inbox:260:in:50" "$work/arch:120:ar" "$work/uni:3:un" \
    "$work/new:2:nw"
dovecot_load_maildir INBOX "$work"/inbox/*.eml
dovecot_doveadm flags add -u "$DOVECOT_USER" '\Seen' mailbox INBOX uid 100:199
DOVECOT_LOAD_FLAGS=FS dovecot_load_maildir Archive "$work"/arch/*.eml
dovecot_load_maildir 'Entwürfe' "$work"/uni/*.eml
flags_before=$(dovecot_doveadm fetch -u "$DOVECOT_USER" 'mailbox uid flags' ALL | sort)

syncd_init "$work" SYNC_RANGE_SIZE=40 SYNC_WORKERS=3

# --check-config: effective settings, the password nowhere.
"$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" --check-config > "$work/check.out" ||
    fail "--check-config exit $?"
grep -q "^SYNC_RANGE_SIZE=40	# file" "$work/check.out" || fail "check-config: range size"
grep -q "^SYNC_WORKERS=3" "$work/check.out" || fail "check-config: workers"
grep -q "^# password: readable" "$work/check.out" || fail "check-config: password check"
grep -qF -e "$DOVECOT_PASSWORD" "$work/check.out" && fail "check-config printed the password"
SYNC_INTERVAL=0 "$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" --check-config > /dev/null 2>"$work/bad.err" &&
    fail "--check-config accepted SYNC_INTERVAL=0"
grep -q "SYNC_INTERVAL" "$work/bad.err" || fail "bad value error does not name the key"
# A folder list with no folder in it is an error naming the key, for every
# command (it used to sync nothing, silently); an empty one means every folder.
for v in ' , ' ','; do
	SYNC_FOLDERS=$v "$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" --check-config > /dev/null 2>"$work/bad.err" &&
	    fail "--check-config accepted SYNC_FOLDERS='$v'"
	grep -q "SYNC_FOLDERS: '$v' names no folder" "$work/bad.err" || fail "SYNC_FOLDERS='$v': $(cat "$work/bad.err")"
	SYNC_FOLDERS=$v syncd --once && fail "--once accepted SYNC_FOLDERS='$v'"
done
SYNC_FOLDERS= "$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" --check-config > /dev/null 2>&1 ||
    fail "an empty SYNC_FOLDERS is refused"

# A daemon tick queues at most SYNC_MAX_RANGES_PER_TICK new ranges.
SYNC_MAX_RANGES_PER_TICK=2 syncd --once || fail "capped tick exit $?"
grep -q "queued 2 ranges, the per-tick cap shared by the folders; the rest waits for the next tick" "$SYNCD_LOG" ||
    fail "no per-tick cap line"
[ "$(grep -cE "UIDs [0-9]+:[0-9]+: [0-9]+ messages written" "$SYNCD_LOG")" = 2 ] || fail "capped tick wrote other than 2 ranges"
[ "$(syncd_sql "SELECT count(*) FROM messages")" -le 80 ] || fail "capped tick wrote too much"

# Backfill (no cap): every folder, every UID, once.
syncd --backfill > "$work/backfill.out" || fail "backfill exit $?"
grep -q "every folder is indexed" "$work/backfill.out" || fail "backfill did not say it converged"
# Caught up, it merged the full-text index into one segment, and said so.
grep -q "^backfill: merging the full-text index" "$work/backfill.out" || fail "backfill did not merge the full-text index"
grep -q "full-text index merged into one segment in" "$SYNCD_LOG" || fail "no merge line in the log"
[ "$(syncd_sql "SELECT merged_max_id FROM fts_merge_state")" = "$(syncd_sql "SELECT max(id) FROM messages")" ] ||
    fail "the merge was not recorded"
# Every tick that wrote says where the scheduler's time went (staging,
# committing, ranking bounds, waiting for workers), and the parts fit in
# the tick's own time; a tick that wrote nothing says nothing of it.
awk '/ done: [1-9][0-9]* messages? written/ { t = $(NF - 1); want = 1; next }
    / time: / { if (!want) { print "a time line after a tick that wrote nothing"; bad = 1 }
	if ($0 !~ / time: staging [0-9]+\.[0-9] s, committing [0-9]+\.[0-9] s, ranking bounds [0-9]+\.[0-9] s, waiting for workers [0-9]+\.[0-9] s$/) {
		print "not the time line: " $0; bad = 1 }
	sum = 0; for (i = 1; i <= NF; i++) if ($i == "s," || $i == "s") sum += $(i - 1)
	if (sum > t + 0.3) { printf "parts %.1f s > tick %.1f s\n", sum, t; bad = 1 }
	want = 0; n++ }
    / done: 0 messages written/ { want = 0 }
    END { if (n == 0) { print "no time line"; bad = 1 }; exit bad }' "$SYNCD_LOG" > "$work/split.out" ||
    fail "tick time lines: $(cat "$work/split.out")"
for f in INBOX Archive 'Entwürfe'; do
	diff <(server_uids "$f") <(index_uids "$f") > /dev/null || fail "folder $f: index != mailbox"
done
[ "$(syncd_sql "SELECT count(*) FROM messages")" = 383 ] || fail "row count"
[ "$(syncd_sql "SELECT count(DISTINCT message_id) FROM messages")" = 383 ] || fail "duplicate rows"
[ "$(syncd_sql "SELECT subject FROM messages m JOIN folders f ON f.id = m.folder_id
    WHERE f.name = 'INBOX' AND m.uid = 150")" = "in message 150" ] || fail "subject of INBOX 150"
[ "$(syncd_sql "SELECT flags & 1 FROM messages m JOIN folders f ON f.id = m.folder_id
    WHERE f.name = 'INBOX' AND m.uid = 150")" = 1 ] || fail "\\Seen not recorded for INBOX 150"
[ "$(syncd_sql "SELECT flags & 1 FROM messages m JOIN folders f ON f.id = m.folder_id
    WHERE f.name = 'INBOX' AND m.uid = 10")" = 0 ] || fail "INBOX 10 recorded as seen"
# Invariant 1: nothing was marked read (or changed at all).
[ "$(dovecot_doveadm fetch -u "$DOVECOT_USER" 'mailbox uid flags' ALL | sort)" = "$flags_before" ] ||
    fail "flags changed by the backfill"
[ "$(dovecot_count_commands ' (SELECT|STORE|APPEND|EXPUNGE) ')" = 0 ] || fail "a writing command was sent"
# Attachments are content-addressed blobs with the right bytes.
sha=$(printf 'attachment of in message 100\n%.0s' $(seq 20) | sha256sum | cut -c1-64)
[ -f "$SYNCD_DATA/blobs/${sha:0:2}/${sha:2}" ] || fail "blob $sha missing"
[ "$(sha256sum < "$SYNCD_DATA/blobs/${sha:0:2}/${sha:2}" | cut -d' ' -f1)" = "$sha" ] || fail "blob bytes"
[ "$(syncd_sql "SELECT count(*) FROM attachments WHERE sha256 = '$sha'")" = 1 ] || fail "attachment row"
# The watermark reached the top of every folder.
[ "$(syncd_sql "SELECT count(*) FROM folders WHERE watermark + 1 != uidnext")" = 0 ] ||
    fail "watermark below the top after backfill"
syncd --status > "$work/status.out" || fail "--status exit"
grep -qE '^INBOX +260 +261 +260 ' "$work/status.out" || fail "status INBOX line: $(grep INBOX "$work/status.out")"
grep -q '^queue: 0 ranges' "$work/status.out" || fail "status queue"

# A quiet tick: EXAMINE only, no SEARCH, no FETCH, and nothing written.
searches=$(dovecot_count_commands ' UID SEARCH ')
fetches=$(dovecot_count_commands ' UID FETCH ')
syncd --once || fail "quiet tick exit"
[ "$(dovecot_count_commands ' UID SEARCH ')" = "$searches" ] || fail "a quiet tick sent SEARCH"
[ "$(dovecot_count_commands ' UID FETCH ')" = "$fetches" ] || fail "a quiet tick sent FETCH"
[ "$(grep -c "full-text index merged" "$SYNCD_LOG")" = 1 ] || fail "a quiet tick merged the index again"

# New mail is picked up by the next tick.
dovecot_append INBOX "$work/new/nw00001.eml"
dovecot_append INBOX "$work/new/nw00002.eml"
syncd --once || fail "tick after new mail"
diff <(server_uids INBOX) <(index_uids INBOX) > /dev/null || fail "new mail not indexed"
[ "$(syncd_sql "SELECT count(*) FROM messages WHERE subject LIKE 'nw message %'")" = 2 ] || fail "new subjects"

# A redelivered range (at-least-once) writes no duplicate and keeps row ids.
ids_before=$(syncd_sql "SELECT group_concat(id) FROM messages")
syncd_sql "INSERT INTO work_queue (folder_id, uidvalidity, first_uid, last_uid, created_at)
    SELECT id, uidvalidity, 1, 200, 0 FROM folders WHERE name = 'INBOX'"
syncd --once || fail "redelivery tick"
[ "$(syncd_sql "SELECT count(*) FROM work_queue")" = 0 ] || fail "redelivered range not consumed"
[ "$(syncd_sql "SELECT group_concat(id) FROM messages")" = "$ids_before" ] || fail "redelivery changed rows"
grep -q "folder 'INBOX' UIDs 1:200: 200 messages written" "$SYNCD_LOG" || fail "redelivered range not fetched"

# A recreated folder has a new UIDVALIDITY: re-indexed from UID 1; the old rows
# stay (unserved) until the new generation has converged, and go the tick after.
old_v=$(syncd_sql "SELECT uidvalidity FROM folders WHERE name = 'Archive'")
dovecot_recreate_folder Archive
dovecot_load_maildir Archive "$work"/arch/ar0000{1..3}.eml
syncd --once || fail "tick after recreate"
new_v=$(syncd_sql "SELECT uidvalidity FROM folders WHERE name = 'Archive'")
[ "$new_v" != "$old_v" ] || fail "uidvalidity not updated"
grep -q "folder 'Archive': uidvalidity changed from $old_v to $new_v" "$SYNCD_LOG" || fail "no uidvalidity line"
diff <(server_uids Archive) <(index_uids Archive) > /dev/null || fail "recreated folder not re-indexed"
[ "$(syncd_sql "SELECT count(*) FROM messages m JOIN folders f ON f.id = m.folder_id
    WHERE f.name = 'Archive' AND m.uidvalidity = $old_v")" = 120 ] || fail "old rows gone"

# A folder deleted upstream (and one that never existed) is skipped with a
# warning, and its queued ranges are dropped rather than retried.
# (Junk is listed but no longer configured: its queued range goes too.)
syncd_sql "INSERT INTO work_queue (folder_id, uidvalidity, first_uid, last_uid, created_at)
    SELECT id, uidvalidity, 1, 3, 0 FROM folders WHERE name IN ('Entwürfe', 'Junk')"
dovecot_doveadm mailbox delete -u "$DOVECOT_USER" -r 'Entwürfe'
echo "SYNC_FOLDERS=INBOX, Archive,Entwürfe ,Nowhere" >> "$SYNCD_CONF"
syncd --once || fail "tick with deleted folders exit $?"
grep -q "folder 'Entwürfe': not found upstream; skipped" "$SYNCD_LOG" || fail "no warning for deleted folder"
grep -q "folder 'Nowhere': not found upstream; skipped" "$SYNCD_LOG" || fail "no warning for missing folder"
[ "$(syncd_sql "SELECT count(*) FROM work_queue")" = 0 ] || fail "deleted or unconfigured folder's range still queued"
grep -q "folder 'Junk': dropped 1 queued range" "$SYNCD_LOG" || fail "unconfigured folder's range not dropped"
[ "$(syncd_sql "SELECT count(*) FROM dead_letters")" = 0 ] || fail "deleted folder's range dead-lettered"
[ "$(syncd_sql "SELECT count(*) FROM messages m JOIN folders f ON f.id = m.folder_id
    WHERE f.name = 'Entwürfe'")" = 3 ] || fail "deleted folder's rows should stay (hidden) for now"
[ "$(syncd_sql "SELECT absent_ticks FROM folders WHERE name = 'Entwürfe'")" = 1 ] ||
    fail "deleted folder not marked absent"
[ "$(syncd_sql "SELECT count(*) FROM messages m JOIN folders f ON f.id = m.folder_id
    WHERE f.name = 'Archive' AND m.uidvalidity = $old_v")" = 0 ] || fail "Archive's old generation not purged"

# One syncd per data directory; SIGTERM stops a daemon with status 0.
# With no merge on record (an index from before syncd kept one), the daemon
# merges once it has caught up, a step at a time between its other work.
syncd_sql "DELETE FROM fts_merge_state"
: > "$work/daemon.log"
"$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" 2> "$work/daemon.log" &
daemon=$!
for _ in $(seq 100); do grep -q "tick 1 done" "$work/daemon.log" && break; sleep 0.1; done
grep -q "tick 1 done" "$work/daemon.log" || fail "daemon did not tick"
for _ in $(seq 100); do grep -q "full-text index merged" "$work/daemon.log" && break; sleep 0.1; done
grep -q "full-text index merged into one segment" "$work/daemon.log" || fail "the daemon did not merge"
timeout 30 "$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" --backfill > /dev/null 2> "$work/second.err" &&
    fail "second syncd was not refused"
grep -q "another syncd (pid $daemon) is using" "$work/second.err" || fail "refusal message: $(cat "$work/second.err")"
# SIGHUP: "sync now" (mail just arrived; do not wait for SYNC_INTERVAL).
python3 "$src/tests/lib/mkmail.py" "$work/hup:1:hp"
dovecot_append INBOX "$work/hup/hp00001.eml"
kill -HUP "$daemon"
for _ in $(seq 100); do grep -q "tick 2 done" "$work/daemon.log" && break; sleep 0.1; done
grep -q "tick 2 done" "$work/daemon.log" || fail "SIGHUP did not start a tick"
[ "$(syncd_sql "SELECT count(*) FROM messages WHERE subject = 'hp message 1'")" = 1 ] || fail "SIGHUP tick missed new mail"
kill -TERM "$daemon"
rc=0
wait "$daemon" || rc=$?
daemon=
[ "$rc" = 0 ] || fail "daemon exit status $rc after SIGTERM"
grep -q "SIGTERM: finishing" "$work/daemon.log" || fail "daemon did not log the SIGTERM"

# --rebuild empties the index and backfills it again.
syncd --rebuild > /dev/null || fail "rebuild exit"
diff <(server_uids INBOX) <(index_uids INBOX) > /dev/null || fail "INBOX after rebuild"
[ "$(syncd_sql "SELECT count(*) FROM messages")" = 266 ] || fail "rows after rebuild: $(syncd_sql "SELECT count(*) FROM messages")"

# Ranking bounds: a backfill lets the chunks of 2,048 ids gather while its
# ranges are in flight (the builder reads neighbours with one statement a
# term) and bounds every complete chunk by its end.
python3 "$src/tests/lib/mkmail.py" "$work/bulk:4300:bk"
dovecot_load_maildir INBOX "$work"/bulk/*.eml
syncd --backfill > /dev/null || fail "bulk backfill exit"
chunks=$(( ($(syncd_sql "SELECT max(id) FROM messages") + 1) / 2048 ))
[ "$chunks" -ge 2 ] || fail "bulk backfill: fewer than two chunks of ids"
built=$(syncd_sql "SELECT count(*) FROM rank_chunks WHERE chunk < $chunks AND blocks = 131071")
[ "$built" = "$chunks" ] || fail "bulk backfill: $built of $chunks complete chunks bounded"
[ "$(syncd_sql "SELECT count(DISTINCT chunk) FROM rank_bounds WHERE term = 'bk'")" = "$chunks" ] ||
    fail "bulk backfill: a chunk without the fronts of a frequent word"

syncd_log_clean "$SYNCD_LOG" "$work"/*.log || fail "sanitizer report"
ok=1
echo PASS
