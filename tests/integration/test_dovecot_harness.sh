#!/usr/bin/env bash
# The Dovecot harness itself (tests/lib/dovecot.sh): what other integration
# tests rely on.  Loaded messages come back byte-exact and in load order,
# folder re-creation changes UIDVALIDITY, the log and rawlog counters count,
# and the server is gone after the script exits, even when it fails.
set -euo pipefail
src=${MB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$src/tests/lib/dovecot.sh"

work=$(mktemp -d)
ok=0
trap 'if [ $ok = 1 ]; then rm -rf "$work"; else echo "kept $work" >&2; fi' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir "$work/srv" "$work/msgs"
dovecot_start "$work/srv"
pid=$DOVECOT_PID
[ "$(stat -c %a "$DOVECOT_PASSWORD_FILE")" = 600 ] || fail "password file mode"
[ "$(cat "$DOVECOT_PASSWORD_FILE")" = "$DOVECOT_PASSWORD" ] || fail "password file content"

# LF-only on disk in the fixture; the loader makes them CRLF, as FETCH returns.
for i in 3 1 2; do
	printf 'From: a@example.org\nSubject: msg %s\nMessage-ID: <%s@harness>\n\nbody %s\nline two\n' \
	    "$i" "$i" "$i" > "$work/msgs/$i.eml"
done
dovecot_load_maildir INBOX "$work/msgs/3.eml" "$work/msgs/1.eml" "$work/msgs/2.eml"
DOVECOT_LOAD_FLAGS=S dovecot_load_maildir 'Entwürfe' "$work/msgs/1.eml"

python3 - "$work/msgs" <<'PY' || fail "imaplib checks"
import imaplib, os, re, sys
d = sys.argv[1]
m = imaplib.IMAP4("127.0.0.1", int(os.environ["DOVECOT_IMAP_PORT"]))
m.login(os.environ["DOVECOT_USER"], os.environ["DOVECOT_PASSWORD"])
typ, lst = m.list()
names = b"\n".join(lst).decode()
for role in ("Drafts", "Sent", "Trash", "Junk", "Archive"):
    assert re.search(r"\\%s\) \"/\" %s" % (role, role), names), (role, names)
assert "Entw&APw-rfe" in names, names
m.select("INBOX", readonly=True)
typ, data = m.uid("FETCH", "1:*", "(UID BODY.PEEK[])")
got = [x for x in data if isinstance(x, tuple)]
assert len(got) == 3, data
for (meta, body), want in zip(got, ("3", "1", "2")):
    exp = open(os.path.join(d, want + ".eml"), "rb").read().replace(b"\n", b"\r\n")
    assert body == exp, (meta, body, exp)
m.select('"Entw&APw-rfe"', readonly=True)
typ, data = m.uid("FETCH", "1", "(FLAGS)")
assert b"\\Seen" in data[0], data
m.logout()
bad = imaplib.IMAP4("127.0.0.1", int(os.environ["DOVECOT_IMAP_PORT"]))
try:
    bad.login(os.environ["DOVECOT_USER"], "wrong")
    raise SystemExit("wrong password accepted")
except imaplib.IMAP4.error:
    pass
PY
[ "$(dovecot_wait_login_attempts 2)" = 2 ] || fail "login attempts: $(dovecot_login_attempts), want 2"
[ "$(dovecot_wait_commands ' UID FETCH ' 2)" = 2 ] || fail "UID FETCH count"
[ "$(dovecot_wait_commands ' EXAMINE ' 2)" = 2 ] || fail "EXAMINE count"
[ "$(dovecot_flags INBOX 1)" = "" ] || fail "INBOX uid 1 flags: $(dovecot_flags INBOX 1)"

v1=$(dovecot_status 'Entwürfe' uidvalidity)
dovecot_recreate_folder 'Entwürfe'
v2=$(dovecot_status 'Entwürfe' uidvalidity)
[ "$v1" != "$v2" ] || fail "uidvalidity unchanged after recreate ($v1)"
dovecot_append 'Entwürfe' "$work/msgs/2.eml"
[ "$(dovecot_status 'Entwürfe' messages)" = 1 ] || fail "append"
[[ $v2 =~ ^[0-9]+$ ]] || fail "uidvalidity '$v2'"

# A failing script still stops its server (EXIT trap, by PID).
mkdir "$work/srv2"
child_pid=$(bash -c '. "$1"; dovecot_start "$2" >/dev/null; echo "$DOVECOT_PID"; exit 3' _ \
    "$src/tests/lib/dovecot.sh" "$work/srv2") && fail "child should fail" || true
[ -n "$child_pid" ] || fail "child did not start a server"
kill -0 "$child_pid" 2>/dev/null && fail "server $child_pid outlived its failing script"

dovecot_stop
kill -0 "$pid" 2>/dev/null && fail "dovecot_stop left $pid running"
ok=1
echo "PASS"
