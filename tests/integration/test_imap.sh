#!/usr/bin/env bash
# The Mailbox interface (libmailbox/sync/imap_etpan.c) against a real Dovecot
# (tests/lib/dovecot.sh) and a scripted peer for faults (tests/lib/imap_peer.py),
# driven through build/tests/imap_probe.  What a user of syncd would check:
# TLS refused before any password is sent, folder names and roles right,
# messages byte-exact and still unread afterwards, one LOGIN per refusal,
# the password in no output, and no hang whatever the server does.
set -euo pipefail
src=${MB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${MB_BUILD_DIR:-$src/build}
probe=$build/tests/imap_probe
. "$src/tests/lib/dovecot.sh"
. "$src/tests/lib/testenv.sh"

testenv_begin peer_pid:TERM
pass() { echo "ok - $* [${SECONDS}s]"; }
expect_line() {	# file, fixed line
	grep -qxF -- "$2" "$1" || { cat "$1" >&2; fail "expected line '$2' in $1"; }
}

# A password with the characters IMAP quoting escapes, so the quoted form is
# a distinct needle in the leak check below.
export DOVECOT_PASSWORD="pw\"q\\$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
mkdir "$work/srv" "$work/msgs" "$work/exp" "$work/out" "$work/logs"
dovecot_start "$work/srv"
log=$work/logs

# Fixtures: 11 INBOX messages (one LF-only, one 8-bit UTF-8, one of 300 KB for
# the size cap), two \Seen \Flagged ones in "Entwürfe", one in "日本".
# exp/N.eml is what UID N must come back as: the CRLF form.
python3 - "$work" <<'PY'
import os, sys
w = sys.argv[1]
def msg(i, body, subject=None, eol=b"\r\n"):
    lines = [b"From: Sender %d <s%d@example.org>" % (i, i), b"To: alice@example.org",
             b"Subject: " + (subject or b"message %d" % i),
             b"Message-ID: <%d@fixture.example>" % i, b"Date: Mon, 1 Jan 2024 10:00:00 +0000",
             b"Content-Type: text/plain; charset=utf-8", b""] + body.split(b"\n")
    return eol.join(lines) + eol
msgs = [msg(i, b"body of message %d\nsecond line" % i) for i in range(1, 12)]
msgs[3] = msg(4, b"unix line ends\nin this one", eol=b"\n")
msgs[5] = msg(6, "Grüße aus Köln — 日本語".encode(), subject=b"=?utf-8?q?Gr=C3=BC=C3=9Fe?=")
msgs[8] = msg(9, b"\n".join(b"%06d big line of the large message......................" % n
                            for n in range(5000)))
for n, m in enumerate(msgs, 1):
    open(os.path.join(w, "msgs", "%02d.eml" % n), "wb").write(m)
    open(os.path.join(w, "exp", "%d.eml" % n), "wb").write(m.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
for n in (1, 2):
    open(os.path.join(w, "msgs", "draft%d.eml" % n), "wb").write(msg(100 + n, b"draft"))
open(os.path.join(w, "msgs", "jp.eml"), "wb").write(msg(200, b"japan"))
PY
dovecot_load_maildir INBOX "$work"/msgs/[0-9]*.eml
DOVECOT_LOAD_FLAGS=FS dovecot_load_maildir 'Entwürfe' "$work"/msgs/draft*.eml
dovecot_load_maildir '日本' "$work/msgs/jp.eml"

auth=(--user "$DOVECOT_USER" --password-file "$DOVECOT_PASSWORD_FILE")
tls=(--port "$DOVECOT_IMAPS_PORT" --tls implicit --ca-file "$DOVECOT_CA")
starttls=(--port "$DOVECOT_IMAP_PORT" --tls starttls --ca-file "$DOVECOT_CA")
run() {	# name, probe args...: stdout+stderr to $log/name, exit status to $log/name.rc
	local name=$1 rc=0
	shift
	"$probe" "$@" > "$log/$name" 2>&1 || rc=$?
	echo "$rc" > "$log/$name.rc"
	return 0
}
rc() { cat "$log/$1.rc"; }

# --- TLS -------------------------------------------------------------------
run tls "${auth[@]}" "${tls[@]}" login
[ "$(rc tls)" = 0 ] && expect_line "$log/tls" "ok condstore=1"
pass "implicit TLS with the test CA logs in (CONDSTORE seen)"
run starttls "${auth[@]}" "${starttls[@]}" login
[ "$(rc starttls)" = 0 ] && expect_line "$log/starttls" "ok condstore=1"
pass "STARTTLS logs in"
run starttls_localhost "${auth[@]}" "${starttls[@]}" --host localhost login
[ "$(rc starttls_localhost)" = 0 ] || fail "STARTTLS to localhost: $(cat "$log/starttls_localhost")"
pass "host name 'localhost' verified against the certificate's DNS name"

before=$(dovecot_login_attempts)
run wrong_host "${auth[@]}" "${tls[@]}" --host "$DOVECOT_WRONG_HOST" login
grep -q '^error protocol: .*not trusted.*name' "$log/wrong_host" || fail "wrong host: $(cat "$log/wrong_host")"
run wrong_host_starttls "${auth[@]}" "${starttls[@]}" --host "$DOVECOT_WRONG_HOST" login
grep -q '^error protocol: .*not trusted.*name' "$log/wrong_host_starttls" ||
    fail "wrong host (STARTTLS): $(cat "$log/wrong_host_starttls")"
run other_ca "${auth[@]}" --port "$DOVECOT_IMAPS_PORT" --ca-file "$DOVECOT_OTHER_CA" login
grep -q '^error protocol: .*not trusted.*issuer' "$log/other_ca" || fail "other CA: $(cat "$log/other_ca")"
run system_trust "${auth[@]}" --port "$DOVECOT_IMAP_PORT" --tls starttls login
grep -q '^error protocol: .*not trusted.*issuer' "$log/system_trust" ||
    fail "system trust only: $(cat "$log/system_trust")"
# A good login last: once its line is in the log, any earlier one would be.
run after_refusals "${auth[@]}" "${tls[@]}" login
[ "$(dovecot_wait_login_attempts $((before + 1)))" = $((before + 1)) ] ||
    fail "a LOGIN reached the server after a failed certificate check"
pass "wrong host name and unknown CA refused before LOGIN (server saw no login attempt)"

start=$(date +%s)
run remote_plain "${auth[@]}" --host 192.0.2.1 --port 143 --tls none --timeout 30 login
grep -q "^error configuration: plaintext IMAP to '192.0.2.1' refused" "$log/remote_plain" ||
    fail "plaintext to a remote host: $(cat "$log/remote_plain")"
# A connect attempt would wait out the 30 s timeout; 20 s leaves room for a
# loaded machine.  The configuration error above is the main proof.
(( $(date +%s) - start <= 20 )) || fail "plaintext refusal was not immediate (did it connect?)"
run local_plain "${auth[@]}" --port "$DOVECOT_IMAP_PORT" --tls none login
[ "$(rc local_plain)" = 0 ] || fail "plaintext to loopback: $(cat "$log/local_plain")"
pass "plaintext refused for a non-loopback host without connecting, allowed on loopback"

# --- LIST / EXAMINE / SEARCH ----------------------------------------------
run list "${auth[@]}" "${tls[@]}" list
for role in Drafts Sent Trash Junk Archive; do
	expect_line "$log/list" "$(printf 'folder\t%s\t\\%s\t1' "$role" "$role")"
done
expect_line "$log/list" "$(printf 'folder\tEntwürfe\t-\t1')"
expect_line "$log/list" "$(printf 'folder\t日本\t-\t1')"
expect_line "$log/list" "$(printf 'folder\tINBOX\t-\t1')"
pass "LIST: special-use roles, non-ASCII names decoded from modified UTF-7"

run examine "${auth[@]}" "${tls[@]}" examine INBOX
expect_line "$log/examine" "uidvalidity $(dovecot_status INBOX uidvalidity)"
expect_line "$log/examine" "uidnext 12"
expect_line "$log/examine" "exists 11"
hms=$(dovecot_status INBOX highestmodseq)
[ "$hms" -gt 0 ] && expect_line "$log/examine" "highestmodseq $hms"
run examine_jp "${auth[@]}" "${tls[@]}" examine '日本'
expect_line "$log/examine_jp" "exists 1"
run examine_missing "${auth[@]}" "${tls[@]}" examine 'No such folder'
grep -q "^error not found: .*'No such folder'" "$log/examine_missing" ||
    fail "missing folder: $(cat "$log/examine_missing")"
expect_line "$log/examine_missing" "after error: list ok"
pass "EXAMINE: uidvalidity, uidnext, exists, highestmodseq as Dovecot has them; NO is 'not found', session still usable"

v_before=$(sed -n 's/^uidvalidity //p' "$log/examine_jp")
dovecot_recreate_folder '日本'
run examine_jp2 "${auth[@]}" "${tls[@]}" examine '日本'
v_after=$(sed -n 's/^uidvalidity //p' "$log/examine_jp2")
[ -n "$v_after" ] && [ "$v_after" != "$v_before" ] || fail "uidvalidity $v_before -> '$v_after'"
expect_line "$log/examine_jp2" "exists 0"
pass "a deleted and re-created folder shows a new UIDVALIDITY ($v_before -> $v_after)"

run uids0 "${auth[@]}" "${tls[@]}" uids INBOX 0
expect_line "$log/uids0" "uids 11: 1 2 3 4 5 6 7 8 9 10 11"
run uids9 "${auth[@]}" "${tls[@]}" uids INBOX 9
expect_line "$log/uids9" "uids 2: 10 11"
run uids11 "${auth[@]}" "${tls[@]}" uids INBOX 11
expect_line "$log/uids11" "uids 0:"
pass "uids_above, including 'n:*' past the last UID (server answers the highest; filtered)"

# --- FETCH -----------------------------------------------------------------
rm -f "$DOVECOT_RAWLOG"/*
run fetch "${auth[@]}" "${tls[@]}" --size-cap 100000 --out-dir "$work/out" fetch INBOX 1 11
expect_line "$log/fetch" "fetched 11"
for n in 1 2 3 4 5 6 7 8 10 11; do
	cmp -s "$work/exp/$n.eml" "$work/out/$n.eml" || fail "UID $n not byte-exact"
	grep -q "^msg uid=$n size=$(stat -c %s "$work/exp/$n.eml") raw_len=$(stat -c %s "$work/exp/$n.eml") headers_only=0 flags=- keywords=- modseq=[1-9][0-9]* internaldate=[0-9]*$" \
	    "$log/fetch" || fail "UID $n attributes: $(grep "uid=$n " "$log/fetch")"
done
# The big one: the header only, byte-exact up to and including the blank line.
python3 - "$work/exp/9.eml" "$work/out/9.eml" <<'PY' || fail "UID 9 is not the header of the message"
import sys
full, got = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
assert got == full[: full.index(b"\r\n\r\n") + 4], (len(got), len(full))
PY
grep -q "^msg uid=9 size=$(stat -c %s "$work/exp/9.eml") raw_len=$(stat -c %s "$work/out/9.eml") headers_only=1 " \
    "$log/fetch" || fail "UID 9 not flagged headers_only"
now=$(date +%s)
while read -r d; do
	(( d > now - 600 && d <= now + 5 )) || fail "internaldate $d is not the delivery time (~$now)"
done < <(sed -n 's/.* internaldate=//p' "$log/fetch")
pass "fetch: 10 messages byte-exact, the one over the size cap headers only, dates right"

[ "$(dovecot_count_commands ' UID FETCH 1:11 \(UID RFC822.SIZE\)$')" = 1 ] || fail "size pass"

[ "$(dovecot_count_commands ' UID FETCH 9 .*BODY.PEEK\[HEADER\]\)$')" = 1 ] || fail "header run"
[ "$(dovecot_count_commands ' UID FETCH .*BODY.PEEK\[\]\)$')" = 2 ] || fail "body runs"
[ "$(dovecot_count_commands 'BODY\[|RFC822\)|RFC822.TEXT| SELECT | STORE |ESEARCH|RETURN \(|COMPRESS|SEARCH .*MODSEQ')" = 0 ] ||
    fail "a command that could change the mailbox or break libetpan was sent: $(cat "$DOVECOT_RAWLOG"/*.in)"
flags=$(dovecot_doveadm fetch -u "$DOVECOT_USER" 'uid flags' mailbox INBOX all)
[ "$(grep -c '^uid: ' <<<"$flags")" = 11 ] || fail "doveadm fetch: $flags"
! grep -q 'Seen' <<<"$flags" || fail "\\Seen set by the fetch: $flags"
run fetch_drafts "${auth[@]}" "${starttls[@]}" fetch 'Entwürfe' 1 2
grep -q '^msg uid=1 .* flags=\\Seen,\\Flagged ' "$log/fetch_drafts" || fail "flags: $(cat "$log/fetch_drafts")"
pass "fetch: EXAMINE + PEEK only (no SELECT/STORE/ESEARCH/COMPRESS), \\Seen unchanged, flags mapped"
# One UID (a push's range): one round trip, the body asked up to the cap + 1
# octets; the one over the cap gets its header the same way, in a second.
rm -f "$DOVECOT_RAWLOG"/*
rm -rf "$work/one" && mkdir "$work/one"
run fetch_one3 "${auth[@]}" "${tls[@]}" --size-cap 100000 --out-dir "$work/one" fetch INBOX 3 3
run fetch_one9 "${auth[@]}" "${tls[@]}" --size-cap 100000 --out-dir "$work/one" fetch INBOX 9 9
cmp -s "$work/exp/3.eml" "$work/one/3.eml" || fail "one UID: UID 3 not byte-exact"
grep -q "^msg uid=3 size=$(stat -c %s "$work/exp/3.eml") raw_len=$(stat -c %s "$work/exp/3.eml") headers_only=0 " \
    "$log/fetch_one3" || fail "one UID: UID 3 attributes: $(cat "$log/fetch_one3")"
cmp -s "$work/out/9.eml" "$work/one/9.eml" || fail "one UID: UID 9 is not its header"
grep -q "^msg uid=9 size=$(stat -c %s "$work/exp/9.eml") raw_len=$(stat -c %s "$work/one/9.eml") headers_only=1 " \
    "$log/fetch_one9" || fail "one UID: UID 9 not flagged headers_only: $(cat "$log/fetch_one9")"
[ "$(dovecot_count_commands ' UID FETCH [0-9]+ \(UID RFC822.SIZE\)$')" = 0 ] || fail "one UID: a size pass"
[ "$(dovecot_count_commands ' UID FETCH 3 \(.*BODY.PEEK\[\]<0.100001>\)$')" = 1 ] ||
    fail "one UID: UID 3 not asked up to the cap + 1 octets"
[ "$(dovecot_count_commands ' UID FETCH 3 ')" = 1 ] || fail "one UID: UID 3 took more than one round trip"
[ "$(dovecot_count_commands ' UID FETCH 9 ')" = 2 ] || fail "one UID: UID 9 took other than two round trips"
[ "$(dovecot_count_commands 'BODY\[|RFC822\)|RFC822.TEXT| SELECT | STORE ')" = 0 ] ||
    fail "one UID: a command that could change the mailbox: $(cat "$DOVECOT_RAWLOG"/*.in)"
! dovecot_doveadm fetch -u "$DOVECOT_USER" 'flags' mailbox INBOX uid 3 | grep -q Seen ||
    fail "one UID: \\Seen set by the fetch"
pass "fetch of one UID: one round trip, the message over the cap its header in a second"

# 2,000 messages of ~4 KB in ranges of 100: all arrive, every byte counted.
python3 - "$work/bulk" <<'PY'
import os, sys
d = sys.argv[1]
os.makedirs(d)
for i in range(2000):
    body = b"".join(b"line %04d of message %04d, filler filler filler filler filler\r\n" % (l, i)
                    for l in range(60))
    open(os.path.join(d, "%04d.eml" % i), "wb").write(
        b"From: bulk@example.org\r\nSubject: bulk %d\r\nMessage-ID: <%d@bulk>\r\n\r\n" % (i, i) + body)
PY
dovecot_load_maildir Bulk "$work"/bulk/*.eml
bytes=$(cat "$work"/bulk/*.eml | wc -c)
run bulk_tls "${auth[@]}" "${tls[@]}" --deadline-ms 120000 --size-cap 1000000 bench Bulk 100
grep -q "^bench messages=2000 bytes=$bytes " "$log/bulk_tls" || fail "bulk TLS: $(cat "$log/bulk_tls")"
run bulk_plain "${auth[@]}" --port "$DOVECOT_IMAP_PORT" --tls none --size-cap 1000000 bench Bulk 100
grep -q "^bench messages=2000 bytes=$bytes " "$log/bulk_plain" || fail "bulk plain: $(cat "$log/bulk_plain")"
echo "# $(grep ^bench "$log/bulk_plain") (plain)"
echo "# $(grep ^bench "$log/bulk_tls") (TLS)"
pass "2,000 messages in ranges of 100, plain and TLS (with a far deadline armed), every byte delivered"

# --- authentication and secrets ------------------------------------------
printf 'not-the-password"\\x' > "$work/wrong"
chmod 600 "$work/wrong"
before=$(dovecot_login_attempts)
run wrong_pw --debug --user "$DOVECOT_USER" --password-file "$work/wrong" "${tls[@]}" login
grep -q "^error authentication: .*login refused for user 'alice' \[AUTHENTICATIONFAILED\]" \
    "$log/wrong_pw" || fail "wrong password: $(cat "$log/wrong_pw")"
run after_wrong_pw "${auth[@]}" "${tls[@]}" login
n=$(dovecot_wait_login_attempts $((before + 2))) || true
[ "$n" = $((before + 2)) ] ||
    fail "wrong password: $((n - before - 1)) login attempts, want exactly 1"
pass "wrong password: authentication error with the server's code, exactly one LOGIN"

run debug_fetch --debug "${auth[@]}" "${starttls[@]}" fetch INBOX 1 3
grep -q '^<7>imap_probe: imap >>> <private: [0-9]* bytes>$' "$log/debug_fetch" ||
    fail "debug log lacks the private marker for LOGIN"
grep -q 'imap >>> .* UID FETCH 1:3' "$log/debug_fetch" || fail "debug log lacks the dialogue"
python3 - "$DOVECOT_USER" "$DOVECOT_PASSWORD" "$(cat "$work/wrong")" "$DOVECOT_LOG" \
    "$DOVECOT_RAWLOG" "$log" <<'PY' || fail "a password leaked (above)"
import base64, glob, os, sys
user, secrets, paths = sys.argv[1], sys.argv[2:4], sys.argv[4:]
files = []
for p in paths:
    files += [f for f in glob.glob(os.path.join(p, "*"))] if os.path.isdir(p) else [p]
bad = 0
for s in secrets:
    sb, ub = s.encode(), user.encode()
    forms = {"plain": sb, "quoted": sb.replace(b"\\", b"\\\\").replace(b'"', b'\\"'),
             "base64": base64.b64encode(sb),
             "sasl-plain": base64.b64encode(b"\0" + ub + b"\0" + sb),
             "sasl-plain-authz": base64.b64encode(ub + b"\0" + ub + b"\0" + sb)}
    for f in files:
        data = open(f, "rb").read()
        for name, needle in forms.items():
            if needle in data or needle.rstrip(b"=") in data:
                print("%s form of a password in %s" % (name, f)); bad += 1
print("checked %d files" % len(files))
sys.exit(1 if bad else 0)
PY
pass "no password in any form in probe output (debug level), Dovecot's log or rawlogs"

# --- scripted peer: faults on demand --------------------------------------
printf 'peer-secret' > "$work/peer_pw"
peer() {	# mode: start the peer, set $peer_port
	[ -z "$peer_pid" ] || { kill "$peer_pid"; wait "$peer_pid" 2>/dev/null || true; }
	peer_file=$work/peer-$1.port	# its transcript is $peer_file.log
	python3 "$src/tests/lib/imap_peer.py" --mode "$1" --port-file "$peer_file" >/dev/null &
	peer_pid=$!
	local deadline=$((SECONDS + 10))
	until [ -s "$peer_file" ]; do
		((SECONDS < deadline)) || fail "peer did not start"
		sleep 0.05
	done
	peer_port=$(cat "$peer_file")
}
# children_cpu_ms VAR: set VAR to the CPU time (user + system, ms) of this
# shell's children reaped so far.  `times` runs here, not in a $(...)
# subshell, whose own children start at zero.
children_cpu_ms() {
	times > "$work/times"
	printf -v "$1" '%s' "$(tail -n 1 "$work/times" |
	    awk '{ n = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); n += a[1] * 60000 + a[2] * 1000 } print int(n) }')"
}

peer_run() {	# name, seconds allowed, probe args...: also records the elapsed time
	local name=$1 allowed=$2 t0 rc=0
	shift 2
	t0=$(date +%s%N)
	timeout 60 "$probe" --user alice --password-file "$work/peer_pw" --tls none \
	    --port "$peer_port" "$@" > "$log/$name" 2>&1 || rc=$?
	echo "$rc" > "$log/$name.rc"
	local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	((ms <= allowed * 1000)) || fail "$name took ${ms} ms (allowed ${allowed} s)"
	[ "$rc" != 124 ] || fail "$name hung"
}

peer ok
peer_run peer_list 10 list
expect_line "$log/peer_list" "$(printf 'folder\tParent\t-\t0')"
expect_line "$log/peer_list" "$(printf 'folder\tParent/Gesendet\t\\Sent\t1')"
expect_line "$log/peer_list" "$(printf 'folder\tGone\t-\t0')"
peer_run peer_examine 10 examine INBOX
expect_line "$log/peer_examine" "uidnext 4"
expect_line "$log/peer_examine" "highestmodseq 0"
grep -q '^[^ ]* STATUS INBOX (UIDNEXT)$' "$peer_file.log" || fail "no STATUS for UIDNEXT"
peer_run peer_uids 10 uids INBOX 7
expect_line "$log/peer_uids" "uids 0:"
pass "peer: \\Noselect/\\NonExistent unselectable, lower-case role, STATUS when EXAMINE lacks UIDNEXT, n:* filtered"

peer_run peer_fetch 10 fetch INBOX 1 3
expect_line "$log/peer_fetch" 'msg uid=1 size=100 raw_len=100 headers_only=0 flags=\Seen keywords=- modseq=0 internaldate=1704099600'
expect_line "$log/peer_fetch" 'msg uid=2 size=100 raw_len=100 headers_only=0 flags=\Answered keywords=$Forwarded Junk modseq=0 internaldate=1704123000'
expect_line "$log/peer_fetch" 'msg uid=3 size=100 raw_len=100 headers_only=0 flags=- keywords=- modseq=0 internaldate=1704103200'
! grep -q 'MODSEQ' "$peer_file.log" || fail "MODSEQ asked of a server without CONDSTORE"
# One UID from a server that ignores the partial and sends all 100 octets of
# a message over a cap of 50: over the cap, so its header, as two passes give.
peer_run peer_fetch_one 10 --size-cap 50 fetch INBOX 2 2
# (raw_len 81: the peer's header of UID 2 through its blank line)
grep -q '^msg uid=2 size=100 raw_len=81 headers_only=1 ' "$log/peer_fetch_one" ||
    fail "peer: one UID over the cap: $(cat "$log/peer_fetch_one")"
grep -q ' UID FETCH 2 (.*BODY.PEEK\[\]<0.51>)$' "$peer_file.log" || fail "peer: one UID not asked up to 51 octets"
peer_run peer_fetch_small 10 --size-cap 1000 fetch INBOX 3 3
expect_line "$log/peer_fetch_small" 'msg uid=3 size=100 raw_len=100 headers_only=0 flags=- keywords=- modseq=0 internaldate=1704103200'
pass "peer: flags, keywords (\\Recent dropped), INTERNALDATE zones +0100/-0530/+0000; no MODSEQ without CONDSTORE"

peer auth_fail
peer_run peer_auth 10 login
grep -q '^error authentication: .*\[AUTHENTICATIONFAILED\]: Invalid credentials (peer)$' "$log/peer_auth" ||
    fail "peer auth: $(cat "$log/peer_auth")"
[ "$(grep -c ' LOGIN ' "$peer_file.log")" = 1 ] || fail "more than one LOGIN to the peer"
pass "peer: NO [AUTHENTICATIONFAILED] is an authentication error, one LOGIN"

peer bye_mid_fetch
peer_run peer_bye 10 fetch INBOX 1 3
grep -q '^error temporary: ' "$log/peer_bye" || fail "BYE mid-FETCH: $(cat "$log/peer_bye")"
pass "peer: BYE in the middle of a FETCH is a temporary error"

peer garbage
peer_run peer_garbage 10 fetch INBOX 1 3
grep -q '^error protocol: .*unparsable' "$log/peer_garbage" || fail "garbage: $(cat "$log/peer_garbage")"
grep -q '^after error: error protocol: .*session unusable' "$log/peer_garbage" ||
    fail "session still used after a parse error: $(cat "$log/peer_garbage")"
pass "peer: garbage response is a protocol error, and the session refuses further commands"

# libetpan 1.9.4 alone spins until the deadline when the peer closes
# mid-literal; end of file is an error at once now (the wrapped read): the
# error is the closed connection, not "deadline passed" (2 s) or the read
# timeout (30 s), and the probe burns no CPU waiting (a spin to the deadline
# costs about 2 s of it; CPU, not wall time, so a loaded machine cannot fail it).
peer close_mid_literal
children_cpu_ms cpu0
peer_run peer_close 5 --timeout 30 --deadline-ms 2000 fetch INBOX 1 3
children_cpu_ms cpu1
cpu=$((cpu1 - cpu0))
grep -q '^error temporary: .*the server closed the connection' "$log/peer_close" || fail "close mid-literal: $(cat "$log/peer_close")"
((cpu < 1000)) || fail "close mid-literal: the probe used ${cpu} ms of CPU (a spin until the deadline?)"
pass "peer: connection closed mid-literal is an error at once, no spin"

peer stall_mid_literal
peer_run peer_stall 5 --timeout 30 --deadline-ms 2000 fetch INBOX 1 3
grep -q '^error temporary: .*deadline passed' "$log/peer_stall" || fail "stall: $(cat "$log/peer_stall")"
grep -q '^after error: error ' "$log/peer_stall" || fail "session used after cancel: $(cat "$log/peer_stall")"
pass "peer: a server stalling mid-literal is cut off at the deadline (2 s, read timeout 30 s)"

# No greeting at all: the read timeout (2 s, up to two polls) ends it.
peer silent
peer_run peer_silent 10 --timeout 2 login
grep -q '^error temporary: ' "$log/peer_silent" || fail "silent server: $(cat "$log/peer_silent")"
pass "peer: a server that never greets is a temporary error within the read timeout"

# Every probe run ended as designed: 0, or 2 with an "error" line; none was
# killed, timed out or flagged by a sanitizer (a leak changes the status).
for f in "$log"/*.rc; do
	case $(cat "$f") in
	0) ;;
	2) grep -q '^error ' "${f%.rc}" || fail "$(basename "${f%.rc}"): status 2 without an error line" ;;
	*) cat "${f%.rc}" >&2; fail "$(basename "${f%.rc}"): exit status $(cat "$f")" ;;
	esac
done
! grep -l 'Sanitizer\|runtime error' "$log"/* || fail "sanitizer reports (files above)"
pass "every probe run exited 0 or 2, no sanitizer report"

ok=1
echo "PASS"
