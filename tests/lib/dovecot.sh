# shellcheck shell=bash
# A throwaway Dovecot for integration tests: source this file, then
#
#	dovecot_start "$dir"		# generate config, certs, users; start; wait for "* OK"
#	dovecot_load_maildir Folder a.eml b.eml ...
#	...
#	dovecot_stop			# also runs from an EXIT trap, even on failure
#
# DOVECOT_EXTRA_CONF, when set before dovecot_start, is appended to the
# generated config (e.g. a "local 127.0.0.2 { ... }" block).
# DOVECOT_OAUTH2_INTROSPECTION_URL, when set before dovecot_start, adds an
# oauth2 passdb for the SASL mechanisms XOAUTH2 and OAUTHBEARER that checks
# each token by RFC 7662 introspection (POST) at that URL (client credentials
# as user:password@ in it; the username is the answer's "sub").  Password
# logins keep the passwd-file passdb.
# DOVECOT_AUTH_MECHANISMS, when set before dovecot_start, replaces the
# mechanisms offered (default "plain login", and "oauthbearer xoauth2" too
# with the oauth2 passdb): e.g. "plain login xoauth2" for a server without
# OAUTHBEARER.
# DOVECOT_NAMESPACE=courier, when set before dovecot_start, gives the
# personal namespace Courier's shape instead of the default one: prefix
# "INBOX.", separator ".", and no special-use mailboxes (none created either;
# folders are INBOX.Name).
#
# dovecot_start exports, for the last instance started:
#	DOVECOT_IMAP_PORT	plain IMAP on 127.0.0.1 (STARTTLS offered, plaintext LOGIN allowed)
#	DOVECOT_IMAPS_PORT	implicit TLS on 127.0.0.1
#	DOVECOT_CA		PEM of the CA that signed the server certificate
#				(SAN DNS:localhost, IP:127.0.0.1)
#	DOVECOT_OTHER_CA	PEM of an unrelated CA (for "unknown CA" tests)
#	DOVECOT_WRONG_HOST	127.0.0.2: the same server, a name its certificate lacks
#	DOVECOT_USER		default alice (set DOVECOT_USER before starting to change)
#	DOVECOT_PASSWORD	set it before starting, or a random one is made
#	DOVECOT_PASSWORD_FILE	the password, no newline, mode 0600
#	DOVECOT_LOG		Dovecot's log (auth_verbose: one line per refused login)
#	DOVECOT_RAWLOG		directory of per-session rawlogs (*.in = what the client
#				sent after login, *.out = what the server answered)
#	DOVECOT_MAILDIR		the user's Maildir
#	DOVECOT_CONF		the generated dovecot.conf (for doveadm -c)
#
# dovecot_add_user NAME (after dovecot_start) adds another user with a password
# of its own in $DOVECOT_DIR/password-NAME (mode 0600) and an empty Maildir;
# the helpers below act on $DOVECOT_USER, so run them for that user as
# DOVECOT_USER=NAME dovecot_load_maildir ...
#
# Counting what a client did: dovecot_login_attempts (successful + refused
# logins, from the log) and dovecot_count_commands REGEX (client command lines
# after login, from the rawlogs).  Mail is owned by uid/gid 65534 when run as
# root (Dovecot refuses uid 0 for mail), else by the invoking user.
# Requires: dovecot-imapd (dovecot, doveadm), openssl, python3.

_DOVECOT_DIRS=()

_dovecot_die() {
	echo "dovecot.sh: $*" >&2
	return 1
}

_dovecot_certs() {	# ssl_dir
	local d=$1
	mkdir -p "$d"
	(
		cd "$d" || exit 1
		for ca in ca other_ca; do
			openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
			    -keyout "$ca.key" -out "$ca.pem" -days 3 -subj "/CN=imap-mcp test $ca" \
			    -addext "basicConstraints=critical,CA:TRUE" \
			    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null || exit 1
		done
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		    -keyout server.key -out server.csr -subj "/CN=localhost" 2>/dev/null || exit 1
		printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1" \
		    "extendedKeyUsage=serverAuth" "basicConstraints=critical,CA:FALSE" \
		    "keyUsage=critical,digitalSignature" > server.ext
		openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
		    -days 3 -extfile server.ext -out server.pem 2>/dev/null || exit 1
		chmod 600 ./*.key
	)
}

_dovecot_namespace() {	# the personal namespace block (DOVECOT_NAMESPACE)
	if [ "${DOVECOT_NAMESPACE:-}" = courier ]; then
		printf '%s\n' 'namespace inbox {' '  inbox = yes' '  prefix = INBOX.' \
		    '  separator = .' '}'
		return
	fi
	cat <<'NS'
namespace inbox {
  inbox = yes
  separator = /
  mailbox Drafts {
    special_use = \Drafts
    auto = create
  }
  mailbox Sent {
    special_use = \Sent
    auto = create
  }
  mailbox Trash {
    special_use = \Trash
    auto = create
  }
  mailbox Junk {
    special_use = \Junk
    auto = create
  }
  mailbox Archive {
    special_use = \Archive
    auto = create
  }
}
NS
}

_dovecot_oauth2_passdb() {	# dir: the oauth2 passdb block (DOVECOT_OAUTH2_INTROSPECTION_URL)
	[ -n "${DOVECOT_OAUTH2_INTROSPECTION_URL:-}" ] || return 0
	cat > "$1/oauth2.conf.ext" <<EXT
introspection_mode = post
introspection_url = $DOVECOT_OAUTH2_INTROSPECTION_URL
username_attribute = sub
active_attribute = active
active_value = true
EXT
	cat <<PASSDB
passdb {
  driver = oauth2
  mechanisms = xoauth2 oauthbearer
  args = $1/oauth2.conf.ext
}
PASSDB
}

_dovecot_write_conf() {	# dir imap_port imaps_port
	local d=$1 p=$2 ps=$3
	cat > "$d/dovecot.conf" <<CONF
# Generated by tests/lib/dovecot.sh
instance_name = mbtest-$(basename "$d")
base_dir = $d/run
state_dir = $d/state
log_path = $d/dovecot.log
info_log_path = $d/dovecot.log
debug_log_path = $d/dovecot.log
log_timestamp = "%Y-%m-%d %H:%M:%S "
listen = 127.0.0.1, 127.0.0.2
protocols = imap
$( [ "$(id -u)" -eq 0 ] || printf 'default_internal_user = %s\ndefault_internal_group = %s\ndefault_login_user = %s\n' \
    "$(id -un)" "$(id -gn)" "$(id -un)" )
first_valid_uid = 1
ssl = yes
ssl_cert = <$d/ssl/server.pem
ssl_key = <$d/ssl/server.key
disable_plaintext_auth = no
auth_mechanisms = ${DOVECOT_AUTH_MECHANISMS:-plain login${DOVECOT_OAUTH2_INTROSPECTION_URL:+ oauthbearer xoauth2}}
auth_verbose = yes
auth_verbose_passwords = no
auth_debug_passwords = no
auth_failure_delay = 0
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u $d/users
  mechanisms = plain login
}
$(_dovecot_oauth2_passdb "$d")
userdb {
  driver = passwd-file
  args = username_format=%u $d/users
}
mail_location = maildir:~/Maildir
rawlog_dir = $d/rawlog
$(_dovecot_namespace)
service imap-login {
  inet_listener imap {
    port = $p
  }
  inet_listener imaps {
    port = $ps
    ssl = yes
  }
}
service stats {
  unix_listener stats-reader {
    mode = 0666
  }
  unix_listener stats-writer {
    mode = 0666
  }
}
${DOVECOT_EXTRA_CONF:-}
CONF
}

# Wait (bounded) for "* OK" on 127.0.0.1:port; fails early if pid dies.
_dovecot_wait_greeting() {	# port pid timeout_s
	local port=$1 pid=$2 deadline=$((SECONDS + $3)) line
	while ((SECONDS < deadline)); do
		kill -0 "$pid" 2>/dev/null || return 1
		# A subshell: a failed redirection on exec would end this shell.
		line=$( (exec 3<>"/dev/tcp/127.0.0.1/$port" && read -r -t 2 l <&3 && echo "$l") \
		    2>/dev/null) || true
		[[ $line == "* OK"* ]] && return 0
		sleep 0.05
	done
	return 1
}

# dovecot_start DIR: DIR must exist (and be empty); everything goes inside it.
dovecot_start() {
	local d=$1 uid gid try p ps pid
	[ -d "$d" ] || _dovecot_die "dovecot_start: no directory '$d'" || return 1
	d=$(cd "$d" && pwd)
	# Login, auth and mail processes run as other users: they need to
	# traverse every ancestor (o+x, no read).  Fix the ones we own (a
	# mktemp -d parent is 0700); refuse when another user's is closed.
	chmod 755 "$d"
	local a=$d
	while a=$(dirname "$a"); [ "$a" != / ]; do
		[ "$(( 0$(stat -c %a "$a") & 1 ))" -eq 1 ] && continue
		if [ "$(stat -c %u "$a")" = "$(id -u)" ]; then
			chmod o+x "$a"
		else
			_dovecot_die "$a is not traversable by other users"
			return 1
		fi
	done
	if [ "$(id -u)" -eq 0 ]; then uid=65534 gid=65534; else uid=$(id -u) gid=$(id -g); fi
	: "${DOVECOT_USER:=alice}"
	if [ -z "${DOVECOT_PASSWORD:-}" ]; then
		DOVECOT_PASSWORD="pw-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
	fi
	case $DOVECOT_PASSWORD in *:*|*$'\n'*)
		_dovecot_die "password must not contain ':' or a newline (passwd-file)"; return 1;;
	esac
	_dovecot_certs "$d/ssl" || _dovecot_die "openssl failed" || return 1
	mkdir -p "$d/run" "$d/state" "$d/home/$DOVECOT_USER/Maildir" "$d/rawlog"
	chown -R "$uid:$gid" "$d/home" "$d/rawlog"
	(umask 077; printf '%s' "$DOVECOT_PASSWORD" > "$d/password")
	printf '%s:{PLAIN}%s:%s:%s::%s::\n' "$DOVECOT_USER" "$DOVECOT_PASSWORD" "$uid" "$gid" \
	    "$d/home/$DOVECOT_USER" > "$d/users"
	chmod 644 "$d/users"	# the auth process (user dovecot) reads it
	for try in 1 2 3 4 5 6; do
		p=$((20000 + RANDOM % 20000)) ps=$((20000 + RANDOM % 20000))
		[ "$p" -ne "$ps" ] || continue
		_dovecot_write_conf "$d" "$p" "$ps"
		: > "$d/dovecot.log"
		dovecot -F -c "$d/dovecot.conf" >>"$d/dovecot.log" 2>&1 &
		pid=$!
		echo "$pid" > "$d/dovecot.pid"
		_DOVECOT_DIRS+=("$d")
		_dovecot_install_trap
		if _dovecot_wait_greeting "$p" "$pid" 15; then
			break
		fi
		_dovecot_stop_dir "$d"
		pid=
		if ! grep -q "Address already in use" "$d/dovecot.log"; then
			cat "$d/dovecot.log" >&2
			_dovecot_die "dovecot did not start (log above)"
			return 1
		fi
	done
	[ -n "$pid" ] || _dovecot_die "no free port pair after $try tries" || return 1
	export DOVECOT_DIR=$d DOVECOT_CONF=$d/dovecot.conf DOVECOT_LOG=$d/dovecot.log
	export DOVECOT_IMAP_PORT=$p DOVECOT_IMAPS_PORT=$ps DOVECOT_PID=$pid
	export DOVECOT_CA=$d/ssl/ca.pem DOVECOT_OTHER_CA=$d/ssl/other_ca.pem
	export DOVECOT_WRONG_HOST=127.0.0.2
	export DOVECOT_USER DOVECOT_PASSWORD DOVECOT_PASSWORD_FILE=$d/password
	export DOVECOT_RAWLOG=$d/rawlog DOVECOT_MAILDIR=$d/home/$DOVECOT_USER/Maildir
	export DOVECOT_MAIL_UID=$uid DOVECOT_MAIL_GID=$gid
	# The implicit-TLS listener too, with the certificate checked.
	local greeting
	greeting=$(python3 - "$ps" "$DOVECOT_CA" <<'PY' 2>/dev/null
import socket, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[2])
with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10) as s:
    with ctx.wrap_socket(s, server_hostname="localhost") as t:
        print(t.makefile("rb").readline().decode().rstrip())
PY
	) || true
	if [[ $greeting != "* OK"* ]]; then
		_dovecot_die "imaps listener on $ps does not answer with a verified certificate"
		return 1
	fi
}

dovecot_add_user() {	# name
	local name=$1 pw
	case $name in *:*|*/*|"") _dovecot_die "dovecot_add_user: bad name '$name'"; return 1;; esac
	pw="pw-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
	mkdir -p "$DOVECOT_DIR/home/$name/Maildir"
	chown -R "$DOVECOT_MAIL_UID:$DOVECOT_MAIL_GID" "$DOVECOT_DIR/home/$name"
	(umask 077; printf '%s' "$pw" > "$DOVECOT_DIR/password-$name")
	# passwd-file is read again when it changes: no reload needed
	printf '%s:{PLAIN}%s:%s:%s::%s::\n' "$name" "$pw" "$DOVECOT_MAIL_UID" "$DOVECOT_MAIL_GID" \
	    "$DOVECOT_DIR/home/$name" >> "$DOVECOT_DIR/users"
	# ...but the auth process looks at the file at most once a second: a
	# lookup in the second of an earlier one says "User doesn't exist".
	# Wait until it knows the user.
	local i
	for i in $(seq 50); do
		dovecot_doveadm user "$name" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	_dovecot_die "dovecot_add_user: Dovecot does not know '$name' after 5 s"
}

_dovecot_stop_dir() {	# dir
	local d=$1 pid i
	[ -f "$d/dovecot.pid" ] || return 0
	pid=$(cat "$d/dovecot.pid")
	rm -f "$d/dovecot.pid"
	kill -0 "$pid" 2>/dev/null || return 0
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < 100; i++)); do	# up to 5 s, then KILL
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid" 2>/dev/null
		# A loaded machine can take a moment to tear it down: callers check it is gone.
		for ((i = 0; i < 40; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.05
		done
	fi
	wait "$pid" 2>/dev/null || true
}

# dovecot_stop [DIR]: stop one instance (default: every instance started here).
dovecot_stop() {
	local d
	if [ $# -gt 0 ]; then
		_dovecot_stop_dir "$1"
		return 0
	fi
	for d in "${_DOVECOT_DIRS[@]}"; do
		_dovecot_stop_dir "$d"
	done
}

# Chain onto any EXIT trap the caller set, so both run.
_dovecot_install_trap() {
	local prev
	[ -z "${_DOVECOT_TRAPPED:-}" ] || return 0
	_DOVECOT_TRAPPED=1
	prev=$(trap -p EXIT | sed -E "s/^trap -- '(.*)' EXIT$/\1/")
	# shellcheck disable=SC2064
	trap "dovecot_stop; ${prev:-:}" EXIT
}

dovecot_doveadm() {
	doveadm -c "$DOVECOT_CONF" "$@"
}

# dovecot_reload: the changed configuration read again, and Dovecot's auth
# answering again (a doveadm command right after a reload can meet its auth
# socket gone: exit 75, test_writes_edges).
dovecot_reload() {
	local i n
	n=$(grep -c "SIGHUP received" "$DOVECOT_LOG" || true)
	dovecot_doveadm reload
	# the master has taken the signal (so the auth answering next is the new one)
	for i in $(seq 50); do
		(($(grep -c "SIGHUP received" "$DOVECOT_LOG" || true) > n)) && break
		sleep 0.1
	done
	for i in $(seq 50); do
		dovecot_doveadm user "$DOVECOT_USER" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	_dovecot_die "dovecot_reload: Dovecot's auth does not answer after 5 s"
}

# dovecot_create_folder NAME (UTF-8; no error if it exists)
dovecot_create_folder() {
	local out
	if ! out=$(dovecot_doveadm mailbox create -u "$DOVECOT_USER" "$1" 2>&1); then
		case $out in *"already exists"*) ;; *) echo "$out" >&2; return 1;; esac
	fi
}

# dovecot_recreate_folder NAME: delete and create again (a new UIDVALIDITY).
dovecot_recreate_folder() {
	dovecot_doveadm mailbox delete -u "$DOVECOT_USER" -r "$1" >/dev/null 2>&1 || true
	dovecot_create_folder "$1"
}

# dovecot_load_maildir FOLDER FILE...: write each file (line ends made CRLF,
# which is exactly what IMAP FETCH returns) into the folder's Maildir, in
# argument order, so the next session sees them with ascending UIDs in that
# order.  DOVECOT_LOAD_FLAGS (e.g. "S" for \Seen, "FS") applies to all of them.
# Fast: no server round trip; 2,000 messages load in well under a second.
dovecot_load_maildir() {
	local folder=$1 path
	shift
	[ "$folder" = INBOX ] || dovecot_create_folder "$folder" || return 1
	path=$(dovecot_doveadm mailbox path -u "$DOVECOT_USER" "$folder") || return 1
	python3 - "$path" "$DOVECOT_DIR/.loadseq" "${DOVECOT_LOAD_FLAGS:-}" \
	    "$DOVECOT_MAIL_UID" "$DOVECOT_MAIL_GID" "$@" <<'PY'
import os, re, sys
path, seqfile, flags, uid, gid = sys.argv[1:6]
uid, gid = int(uid), int(gid)
try:
    seq = int(open(seqfile).read())
except FileNotFoundError:
    seq = 0
for sub in ("cur", "new", "tmp"):
    os.makedirs(os.path.join(path, sub), exist_ok=True)
    os.chown(os.path.join(path, sub), uid, gid)
for f in sys.argv[6:]:
    data = open(f, "rb").read()
    data = re.sub(rb"\r?\n", b"\r\n", data)
    seq += 1
    # Dovecot orders new Maildir files by the time in their name (then the
    # microseconds): a strictly growing fake time gives UIDs in load order.
    base = "%d.M%dP%d.mbtest,S=%d,W=%d" % (1500000000 + seq, seq, os.getpid(), len(data), len(data))
    tmp = os.path.join(path, "tmp", base)
    with open(tmp, "wb") as out:
        out.write(data)
    os.chown(tmp, uid, gid)
    os.rename(tmp, os.path.join(path, "cur", base + ":2," + "".join(sorted(flags))))
open(seqfile, "w").write(str(seq))
PY
}

# dovecot_cpu: seconds of CPU (user+system) the running Dovecot has used so
# far: its master and every descendant, living or reaped (an exited imap
# process's times move to the master's cutime/cstime and count once), to the
# clock tick (10 ms).  For benchmarks (scripts/bench-syncd, bench-flags).
dovecot_cpu() {
	python3 - "$DOVECOT_PID" <<'PY'
import os, sys
root = int(sys.argv[1])
parent, times = {}, {}
for d in os.listdir("/proc"):
    if not d.isdigit():
        continue
    try:
        s = open("/proc/%s/stat" % d).read()
    except OSError:
        continue
    f = s[s.rindex(")") + 2:].split()	# after "pid (comm) ": state is f[0]
    parent[int(d)] = int(f[1])
    times[int(d)] = sum(int(x) for x in f[11:15])	# utime stime cutime cstime
def under(p):
    while p > 1:
        if p == root:
            return True
        p = parent.get(p, 0)
    return False
print("%.2f" % (sum(t for p, t in times.items() if under(p)) / os.sysconf("SC_CLK_TCK")))
PY
}

# dovecot_append FOLDER FILE: save one message through Dovecot (doveadm save),
# as a live delivery would; the folder's UIDNEXT moves at once.
dovecot_append() {
	dovecot_doveadm save -u "$DOVECOT_USER" -m "$1" < "$2"
}

# dovecot_status FOLDER FIELD: one STATUS value (messages, uidnext,
# uidvalidity, highestmodseq, unseen...), as Dovecot sees it now.
dovecot_status() {
	dovecot_doveadm mailbox status -u "$DOVECOT_USER" "$2" "$1" | sed -n "s/.* $2=//p"
}

# dovecot_flags FOLDER UID: the message's stored flags, space-separated
# (\Recent, which is per session, left out).
dovecot_flags() {
	dovecot_doveadm fetch -u "$DOVECOT_USER" flags mailbox "$1" uid "$2" |
	    sed -n 's/^flags: *//p' | tr ' ' '\n' | grep -vx '\\Recent' | grep . | paste -sd ' ' || true
}

# dovecot_login_attempts: LOGIN/AUTHENTICATE attempts the server saw (accepted
# and refused).  Refused ones are auth_verbose lines ("Password mismatch",
# "unknown user"); accepted ones are imap-login "Login:" lines.
dovecot_login_attempts() {
	grep -cE 'imap-login: (Info: )?Login: user=|auth: (Info: )?passwd-file\(.*\): (Password mismatch|unknown user)' \
	    "$DOVECOT_LOG" || true
}

# dovecot_wait_login_attempts N [TIMEOUT_S]: wait (bounded, default 5 s) until
# the log shows at least N attempts; Dovecot's log process writes lines a
# moment after the client saw the reply.  Prints the count; fails on timeout.
dovecot_wait_login_attempts() {
	local want=$1 deadline=$((SECONDS + ${2:-5})) n
	while n=$(dovecot_login_attempts); ((n < want)); do
		((SECONDS < deadline)) || { echo "$n"; return 1; }
		sleep 0.05
	done
	echo "$n"
}

# dovecot_wait_commands REGEX N [TIMEOUT_S]: wait (bounded, default 5 s) until
# dovecot_count_commands REGEX reaches N; the rawlog of a session may be
# written a moment after the client saw the reply.  Prints the count; fails
# on timeout.
dovecot_wait_commands() {
	local want=$2 deadline=$((SECONDS + ${3:-5})) n
	while n=$(dovecot_count_commands "$1"); ((n < want)); do
		((SECONDS < deadline)) || { echo "$n"; return 1; }
		sleep 0.05
	done
	echo "$n"
}

# dovecot_count_commands REGEX: client lines sent after login that match the
# extended regex (tag included: use e.g. ' UID SEARCH ' or ' EXAMINE ').
dovecot_count_commands() {
	local n
	n=$(cat "$DOVECOT_RAWLOG"/*.in 2>/dev/null | tr -d '\r' | grep -cE "$1" || true)
	echo "${n:-0}"
}
