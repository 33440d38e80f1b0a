#!/usr/bin/env bash
# Push (docs/syncd.md "Push"): a watcher holds INBOX in IDLE, and what
# another client does reaches the index within seconds, with no tick.
# Real Dovecot, a daemon with SYNC_INTERVAL=3600 (one tick, at the start):
#   a watched folder the ticks do not sync is refused with a warning;
#   Dovecot offers NOTIFY, so one connection watches INBOX and Archive;
#   mail APPENDed by another session is found by search_messages through
#   mcpd; only the new UID is fetched; the next push, within the minute
#   the worker and the scheduler's session are kept, makes one EXAMINE, no
#   LOGIN and one NOOP (the worker's: the scheduler's session, used seconds
#   ago, EXAMINEs at once); a burst of 30
#   APPENDs is a few fetches (at most 10), not 30; a flag change and an
#   expunge reach the index; a killed connection (doveadm kick) is
#   re-established and --status counts it, and the kept worker and the
#   scheduler's kept session, kicked too, log in again with nothing failed; a LOGIN refused on reconnect stops
#   the watcher after that one LOGIN.
#   Through a listener without NOTIFY: one watcher per folder; with
#   SYNC_PUSH_KEEP=5 the push's two sessions log out when the five seconds
#   are up, and the next push logs them in again; with 0, when it ends.
# The scripted peer (tests/lib/imap_peer.py), for what Dovecot will not do:
#   IDLE works with a bare ENABLE reply (as iCloud answers); mail arriving
#   between a targeted sync's EXAMINE and its search is fetched with no
#   listing of every UID; IDLE answered
#   with BAD, and a server without IDLE, fall back to the tick with one log
#   line; a DONE never answered is noticed within the deadline and the
#   watcher reconnects.
set -euo pipefail
src=${MB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
MB_BUILD_DIR=${MB_BUILD_DIR:-$src/build}
. "$src/tests/lib/dovecot.sh"
. "$src/tests/lib/syncd.sh"
. "$src/tests/lib/testenv.sh"

testenv_begin daemon:TERM mcpd:TERM peer:KILL
TESTENV_LOG_DROP='imap (<<<|>>>)'

# wait_for SECONDS WHAT CMD...: run CMD until it succeeds, at most SECONDS
# (CMD is run again each time: give it a function, not a "$(...)" value).
wait_for() {
	local limit=$1 what=$2 deadline
	shift 2
	deadline=$(($(date +%s%N) / 1000000 + limit * 1000))
	until "$@"; do
		(($(date +%s%N) / 1000000 < deadline)) || fail "$what: not within ${limit}s"
		sleep 0.1
	done
}
logged() { grep -q -- "$1" "$SYNCD_LOG"; }
count_log() { grep -c -- "$1" "$SYNCD_LOG" || true; }

# ---------------------------------------------------------------- Dovecot
# 127.0.0.2 is the same server without NOTIFY (the last Dovecot part).
DOVECOT_EXTRA_CONF='local 127.0.0.2 {
  protocol imap {
    imap_capability = IMAP4rev1 LITERAL+ SASL-IR LOGIN-REFERRALS ID ENABLE IDLE SORT UIDPLUS MOVE SPECIAL-USE CONDSTORE QRESYNC
  }
}'
mkdir "$work/srv"
dovecot_start "$work/srv"
python3 "$src/tests/lib/mkmail.py" "$work/inbox:5:in"
dovecot_load_maildir INBOX "$work"/inbox/*.eml

syncd_init "$work" SYNC_WORKERS=1 SYNC_FOLDERS=INBOX,Archive SYNC_WATCH=INBOX,Archive,Junk \
    SYNC_INTERVAL=3600
start_daemon() {
	echo "=== syncd daemon" >> "$SYNCD_LOG"
	"$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" 2>>"$SYNCD_LOG" &
	daemon=$!
}
start_daemon
wait_for 20 "the watcher idling" logged "watch 'INBOX': idling (IDLE), 5 messages"
wait_for 10 "the catch-up sync after connecting" logged "watch 'INBOX': 0 messages written"
# Junk is not synced by the ticks, so a push must not index it either.
logged "SYNC_WATCH: 'Junk' is not in SYNC_FOLDERS; not watched" || fail "Junk watched"
wait_for 10 "NOTIFY in use" logged "watch: NOTIFY: one connection watches 2 folders"

rm -f "$work/port"
env MCP_AUTH=none MCP_LISTEN=127.0.0.1:0 MCP_INDEX="$SYNCD_DATA/index.db" MCP_PORT_FILE="$work/port" \
    SYNCD_SOCKET="$work/syncd.sock" MCP_RATE_LIMIT=1000 "$MB_BUILD_DIR/mcpd" 2>>"$work/mcpd.log" &
mcpd=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || fail "mcpd did not start"
url=http://127.0.0.1:$(cat "$work/port")/mcp
hits() {	# QUERY: how many messages search_messages returns (JSON-RPC over HTTP)
	python3 - "$url" "$1" <<'PY'
import http.client, json, sys, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
H = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
def post(obj, sid=None):
    h = dict(H, **({"Mcp-Session-Id": sid} if sid else {}))
    c.request("POST", u.path, json.dumps(obj), h)
    r = c.getresponse()
    return r, r.read()
r, _ = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}})
sid = r.getheader("Mcp-Session-Id")
post({"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
_, body = post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
    "name": "search_messages", "arguments": {"query": sys.argv[2]}}}, sid)
print(len(json.loads(body)["result"]["structuredContent"]["results"]))
PY
}
has_hits() { [ "$(hits "$1")" = "$2" ]; }

# append N WORD [FOLDER]: another client APPENDs N messages (to INBOX) in one session.
append() {
	python3 - "$DOVECOT_IMAP_PORT" "$DOVECOT_USER" "$DOVECOT_PASSWORD_FILE" "$1" "$2" "${3:-INBOX}" <<'PY'
import imaplib, sys
port, user, pwfile, n, word, folder = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6]
m = imaplib.IMAP4("127.0.0.1", int(port))
m.login(user, open(pwfile).read())
for i in range(n):
    msg = ("From: pusher@example.org\r\nTo: alice@example.org\r\nSubject: %s %d\r\n"
           "Message-ID: <%s-%d@push.test>\r\n\r\nbody %s number %d\r\n" % (word, i, word, i, word, i))
    typ, _ = m.append(folder, None, None, msg.encode())
    assert typ == "OK", typ
m.logout()
PY
}

# 1. New mail: searchable through mcpd, without a tick, and only UID 6 fetched.
append 1 zebrafinch
wait_for 20 "the APPENDed message in search_messages" has_hits zebrafinch 1
logged "tick 2" && fail "a tick ran (SYNC_INTERVAL=3600): the mail came by a tick, not by push"
bodies() { dovecot_count_commands " UID FETCH ${1:-[0-9:]+} \(UID FLAGS INTERNALDATE"; }
[ "$(bodies 6)" = 1 ] || fail "UID 6 not fetched alone"
[ "$(bodies)" = 2 ] || fail "indexed mail fetched again: $(bodies) body fetches"
status=$("$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" --status)
grep -qE '^  Archive +via NOTIFY ' <<< "$status" || fail "--status: Archive not via NOTIFY: $status"

# 1b. The next mail within the minute: the worker that fetched UID 6 is still
# logged in with INBOX examined, so it fetches UID 7 after a NOOP.  One
# EXAMINE for this push (the scheduler's) where a fresh worker made two: on
# Dovecot each EXAMINE after new mail re-reads a Maildir's whole listing (a
# second and more at 333,000 messages; docs/benchmarks.md, "Push into a big
# folder").  The scheduler's session is kept that minute too, and EXAMINEs
# again on it: no LOGIN for this push at all (Dovecot's EXAMINE in a session
# that had the folder open costs a third of a fresh session's there), and,
# used seconds ago, no NOOP before its EXAMINE (SCHED_KEPT_FRESH_MS).
examines=$(dovecot_count_commands ' EXAMINE INBOX') noops=$(dovecot_count_commands ' NOOP$')
logins=$(dovecot_login_attempts)
append 1 secondfinch
wait_for 20 "the second APPENDed message in search_messages" has_hits secondfinch 1
[ "$(bodies 7)" = 1 ] || fail "UID 7 not fetched alone"
[ $(($(dovecot_count_commands ' EXAMINE INBOX') - examines)) = 1 ] ||
    fail "the second push made $(($(dovecot_count_commands ' EXAMINE INBOX') - examines)) EXAMINEs, want 1"
[ $(($(dovecot_count_commands ' NOOP$') - noops)) = 1 ] ||
    fail "the second push sent $(($(dovecot_count_commands ' NOOP$') - noops)) NOOPs, want the kept worker's alone"
dovecot_wait_login_attempts $((logins + 1)) >/dev/null || fail "no LOGIN from the APPENDing client"
sleep 0.5	# Dovecot's log lags its replies
[ "$(dovecot_login_attempts)" = $((logins + 1)) ] ||
    fail "the second push logged in $(($(dovecot_login_attempts) - logins - 1)) times, want 0"

# NOTIFY: Archive's new mail comes over INBOX's connection (one IDLE session).
append 1 archivedbird Archive
wait_for 20 "the message APPENDed to Archive in search_messages" has_hits archivedbird 1
[ "$(dovecot_count_commands ' IDLE$')" = 1 ] || fail "want one IDLE session, got $(dovecot_count_commands ' IDLE$')"
[ "$(dovecot_count_commands ' NOTIFY SET \(selected \(MessageNew MessageExpunge FlagChange\)\) \(mailboxes "Archive" ')" = 1 ] ||
    fail "no NOTIFY SET for Archive"

# 2. A burst of 30 (a mailing list delivering at once): a few fetches, not 30.
fetches=$(bodies)
append 30 burstword
n_indexed() { [ "$(index_uids INBOX | wc -l)" = "$1" ]; }
wait_for 20 "the whole burst indexed" n_indexed 37
burst=$(($(bodies) - fetches))
((burst >= 1 && burst <= 10)) || fail "the burst of 30 took $burst fetches"

# 3. Another client flags UID 2 and expunges UID 3: the watcher hears it.
row() { syncd_sql "SELECT $2 FROM messages m JOIN folders f ON f.id = m.folder_id
    WHERE f.name = 'INBOX' AND m.uidvalidity = f.uidvalidity AND m.uid = $1"; }
row_is() { [ "$(row "$1" "$2")" = "$3" ]; }	# UID COLUMN VALUE
dovecot_doveadm flags add -u "$DOVECOT_USER" '\Flagged' mailbox INBOX uid 2
wait_for 10 "the \\Flagged flag in the index" row_is 2 'flags & 4' 4
dovecot_doveadm expunge -u "$DOVECOT_USER" mailbox INBOX uid 3
wait_for 10 "the expunge in the index" row_is 3 uid ""
logged "tick 2" && fail "a tick ran"
logged "watch 'INBOX': flags" || fail "no flags event logged"
logged "watch 'INBOX': expunge" || fail "no expunge event logged"

# 4. The connection killed: re-established, and the next mail still arrives.
dovecot_doveadm kick "$DOVECOT_USER" >/dev/null
wait_for 15 "the watcher reconnecting" logged "watch 'INBOX': reconnected (1 reconnect), idling"
append 1 afterkick
wait_for 20 "mail after the kick" has_hits afterkick 1
# the kept worker's session was kicked too: it logged in again, no attempt spent
logged "attempt 1 of" && fail "a range failed after the kick: $(grep -- 'attempt 1 of' "$SYNCD_LOG")"
# and so was the scheduler's kept session: its EXAMINE (or, kept long, its
# NOOP) found it gone, and the sync ran again on a new session
logged "the last push's session is gone" || fail "the scheduler's kicked session not noticed"
logged "watch 'INBOX': sync:" && fail "a targeted sync failed after the kick: $(grep -- "watch 'INBOX': sync:" "$SYNCD_LOG")"
status=$("$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" --status)
grep -qE '^  INBOX +idle +[0-9-]+ [0-9:]+Z +[0-9-]+ [0-9:]+Z +new mail +1$' <<< "$status" ||
    fail "--status: no 'INBOX idle ... new mail 1' line: $status"

# 5. A refused LOGIN on reconnect: that one LOGIN, then the watcher stops.
attempts=$(dovecot_login_attempts)
sed -i "s/^\($DOVECOT_USER:{PLAIN}\)[^:]*/\1changed-password/" "$work/srv/users"
dovecot_doveadm kick "$DOVECOT_USER" >/dev/null
wait_for 15 "the refused login logged" logged "watch 'INBOX': login refused"
dovecot_wait_login_attempts $((attempts + 1)) >/dev/null || fail "no LOGIN after the kick"
sleep 4	# the backoff would have tried again by now (1, then 2 s)
[ "$(dovecot_login_attempts)" = $((attempts + 1)) ] ||
    fail "want exactly one LOGIN after the refusal, got $(($(dovecot_login_attempts) - attempts))"
"$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" --status | grep -qE '^  INBOX +stopped \(login refused\)' ||
    fail "--status does not show the watch stopped"

kill -TERM "$daemon"
rc=0; wait "$daemon" || rc=$?
daemon=
[ "$rc" = 0 ] || fail "daemon exit $rc"
[ ! -e "$SYNCD_DATA/watch.status" ] || fail "watch.status left behind"
"$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" --status | grep -q '^watch: none' ||
    fail "--status shows a watch of a stopped daemon"
kill -TERM "$mcpd"; wait "$mcpd" 2>/dev/null || true
mcpd=
syncd_log_clean "$SYNCD_LOG"

# Without NOTIFY (the 127.0.0.2 listener): a watcher per folder, each idling.
sed -i "s/^\($DOVECOT_USER:{PLAIN}\)[^:]*/\1$DOVECOT_PASSWORD/" "$work/srv/users"
mkdir "$work/plain"
SYNCD_LOG=$work/plain/syncd.log syncd_init "$work/plain" IMAP_HOST=127.0.0.2 SYNC_WORKERS=1 \
    SYNC_FOLDERS=INBOX,Archive SYNC_WATCH=INBOX,Archive SYNC_INTERVAL=3600 SYNC_PUSH_KEEP=5
export SYNCD_LOG=$work/plain/syncd.log
start_daemon
wait_for 20 "no NOTIFY: INBOX idling" logged "watch 'INBOX': idling"
wait_for 10 "no NOTIFY: Archive idling" logged "watch 'Archive': idling"
logged "NOTIFY: one connection" && fail "NOTIFY used through a listener without it"
archived() { [ "$(index_uids Archive | wc -l)" = 2 ]; }
append 1 plainbird Archive
wait_for 10 "no NOTIFY: the message APPENDed to Archive indexed" archived
# SYNC_PUSH_KEEP=5: after the push the scheduler's session and the worker stay
# logged in (four sessions with the two watchers), then log out when the five
# seconds are up, and the next push logs both in again.
sessions() { dovecot_doveadm who -1 "$DOVECOT_USER" 2>/dev/null | grep -c "^$DOVECOT_USER " || true; }
sessions_are() { [ "$(sessions)" = "$1" ]; }
wait_for 3 "the push's two sessions kept beside the two watchers" sessions_are 4
wait_for 15 "the kept sessions logged out after SYNC_PUSH_KEEP" sessions_are 2
logins=$(dovecot_login_attempts)
append 1 plainbird Archive
archived() { [ "$(index_uids Archive | wc -l)" = 3 ]; }
wait_for 10 "no NOTIFY: the second message APPENDed to Archive indexed" archived
sleep 0.5	# Dovecot's log lags its replies
[ "$(dovecot_login_attempts)" = $((logins + 3)) ] ||
    fail "want the APPENDing client's LOGIN, the scheduler's and the worker's, got $(($(dovecot_login_attempts) - logins))"
kill -TERM "$daemon"
wait "$daemon" || fail "no NOTIFY: daemon exit $?"
# SYNC_PUSH_KEEP=0: the push's sessions log out when it ends (within the 3 s
# that five seconds of keeping would fail).
sed -i 's/^SYNC_PUSH_KEEP=.*/SYNC_PUSH_KEEP=0/' "$SYNCD_CONF"
grep -qx 'SYNC_PUSH_KEEP=0' "$SYNCD_CONF" || fail "SYNC_PUSH_KEEP not rewritten"
idles=$(count_log "watch 'Archive': idling")
start_daemon
idled_again() { [ "$(count_log "watch 'Archive': idling")" -gt "$idles" ]; }
wait_for 20 "no NOTIFY: Archive idling again" idled_again
wait_for 10 "no NOTIFY: the tick's session gone" sessions_are 2
append 1 plainbird Archive
archived() { [ "$(index_uids Archive | wc -l)" = 4 ]; }
wait_for 10 "no NOTIFY: the third message APPENDed to Archive indexed" archived
wait_for 3 "SYNC_PUSH_KEEP=0: the push's sessions logged out" sessions_are 2
kill -TERM "$daemon"
wait "$daemon" || fail "no NOTIFY: daemon exit $?"
daemon=
syncd_log_clean "$SYNCD_LOG"
dovecot_stop

# ------------------------------------------------------- the scripted peer
(umask 077; printf 'peer-pass-word' > "$work/pw")
# peer_daemon MODE [KEY=VALUE...]: a fresh peer and a daemon watching its INBOX.
peer_daemon() {
	local dir=$work/$1 mode=$1
	shift
	mkdir "$dir"
	python3 "$src/tests/lib/imap_peer.py" --mode "$mode" --port-file "$dir/port" > /dev/null 2>&1 &
	peer=$!
	for _ in $(seq 200); do [ -s "$dir/port" ] && break; sleep 0.05; done
	[ -s "$dir/port" ] || fail "peer ($mode) did not start"
	DOVECOT_IMAP_PORT=$(cat "$dir/port") DOVECOT_USER=alice DOVECOT_PASSWORD_FILE=$work/pw \
	    SYNCD_LOG=$dir/syncd.log syncd_init "$dir" SYNC_FOLDERS=INBOX SYNC_WATCH=INBOX \
	    SYNC_WORKERS=1 SYNC_INTERVAL=3600 "$@"
	export SYNCD_LOG=$dir/syncd.log
	transcript=$dir/port.log
	start_daemon
}
peer_stop() {
	kill -TERM "$daemon"
	wait "$daemon" || fail "$1: daemon exit $?"
	daemon=
	kill -KILL "$peer"; wait "$peer" 2>/dev/null || true
	peer=
	syncd_log_clean "$SYNCD_LOG"
}
idles() { grep -c ' IDLE$' "$transcript" || true; }
idled() { [ "$(idles)" -ge "$1" ]; }

# IDLE on a server that answers ENABLE with a bare OK: message 4 arrives
# during the IDLE and is indexed without a tick.
peer_daemon idle
uids_are() { [ "$(index_uids INBOX | paste -sd,)" = "$1" ]; }
wait_for 15 "peer: message 4 indexed" uids_are 1,2,3,4
grep -q ' ENABLE ' "$transcript" || fail "peer: ENABLE not sent (the case under test)"
logged "tick 2" && fail "peer: a tick ran"
peer_stop idle

# Message 5 arriving between the targeted sync's EXAMINE and its UID SEARCH
# (a burst into a busy folder): both indexed, and the expunge check counts
# only the new UIDs EXISTS counted, so it lists no UIDs; counting 5 too, it
# found a row "missing" and listed every UID of the folder (at 333,000
# messages, a second of the server's and syncd's work a push).
peer_daemon idle_search_ahead
wait_for 15 "search_ahead: messages 4 and 5 indexed" uids_are 1,2,3,4,5
grep -q ' UID FETCH 4:5 (UID FLAGS INTERNALDATE' "$transcript" ||
    fail "search_ahead: 4 and 5 not fetched as one range (the case under test)"
grep -q ' UID SEARCH UID 4:\*$' "$transcript" || fail "search_ahead: no targeted UID SEARCH"
after=$(sed -n '/ UID SEARCH UID 4:\*$/,$p' "$transcript")
! grep -q ' UID SEARCH UID 1:\*' <<< "$after" ||
    fail "search_ahead: every UID listed after the targeted sync's UID SEARCH: $after"
peer_stop idle_search_ahead

# IDLE answered with BAD, and a server without IDLE: one line, the tick alone.
peer_daemon idle_bad
wait_for 15 "idle_bad: the fallback line" logged "watch 'INBOX': .*IDLE refused.*waits for the tick"
sleep 3
[ "$(count_log "waits for the tick")" = 1 ] || fail "idle_bad: want one fallback line"
[ "$(idles)" = 1 ] || fail "idle_bad: IDLE sent $(idles) times"
peer_stop idle_bad
peer_daemon ok
wait_for 15 "no IDLE: the fallback line" logged "watch 'INBOX': server does not offer IDLE; new mail in it waits for the tick"
sleep 2
[ "$(count_log "waits for the tick")" = 1 ] || fail "no IDLE: want one fallback line"
[ "$(idles)" = 0 ] || fail "no IDLE: IDLE sent anyway"
peer_stop ok

# DONE never answered: renewing after 5 s, the 10 s deadline notices it, and
# the watcher reconnects and idles again.
peer_daemon idle_stall_done SYNC_WATCH_RENEW=5
wait_for 15 "stall: idling" logged "watch 'INBOX': idling"
start=$SECONDS
wait_for 25 "stall: the unanswered DONE noticed" logged "connection lost (127.0.0.1: DONE: deadline passed"
# 5 s to the renewal, then 10 s for DONE: less than 10 s would be no deadline.
((SECONDS - start >= 10)) || fail "stall: noticed after $((SECONDS - start)) s, before the deadline"
wait_for 10 "stall: the watcher idling again" idled 2
peer_stop idle_stall_done

ok=1
echo "test_syncd_watch: ok"
