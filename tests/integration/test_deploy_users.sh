#!/usr/bin/env bash
# The documented two-user deployment (docs/setup.md) with its write tools on:
# syncd and mcpd run as two different users of one group, each with the
# user-namespace, user, group and umask settings of its shipped unit
# (scripts/deploy/*.service) reproduced here, because CI machines run no
# systemd: PrivateUsers=yes becomes a user namespace that maps root and the
# unit's own user and group to themselves and nothing else, as systemd's does.
# A flag_message through mcpd must reach syncd's control socket, pass its
# SO_PEERCRED check against SYNCD_ALLOWED_UIDS naming mcpd's user, and change
# the mailbox; write_log records mcpd's real uid.  Also: the settings the
# docs tell a user to write name only users the docs create.
# Then a second account, as docs/setup.md ("Adding a second account") adds
# it: another mailbox (bob's, beside alice's), a syncd with the paths, umask and
# users of the template imap-mcp-syncd@.service for the instance "home"
# (under this test's directories in place of /var/lib and /run), inside the
# first account's directories as there; mcpd, its unit unchanged, restarted
# with ACCOUNTS: it lists both accounts, a search finds each account's mail
# under its name, and a write on an id of "home" changes the second mailbox,
# not the first.
set -euo pipefail
src=${MB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
MB_BUILD_DIR=${MB_BUILD_DIR:-$src/build}
. "$src/tests/lib/dovecot.sh"
. "$src/tests/lib/syncd.sh"
deps=$src/.deps/npm
units=$src/scripts/deploy

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (setpriv, user namespaces)"; exit 0; }

# The two service users and their group, as numbers (no passwd entries needed).
sync_uid=64101 mcpd_uid=64102 group_gid=64100

work=$(mktemp -d)
chmod 755 "$work"
ok=0
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [ $ok = 1 ]; then rm -rf "$work"; else
		echo "kept $work" >&2
		tail -n 30 "$work/syncd.log" "$work/mcpd.log" >&2 2>/dev/null || true
	fi
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# unit_value UNIT KEY: the last value the unit file gives KEY (empty if none).
unit_value() {
	sed -n "s/^$2=//p" "$units/$1" | tail -n 1
}

# run_as_unit UNIT UID GID CMD...: run CMD in the background the way systemd
# would start UNIT with User=UID Group=GID; adds its pid to pids.
run_as_unit() {
	local unit=$1 uid=$2 gid=$3
	shift 3
	local umask_v
	umask_v=$(unit_value "$unit" UMask)
	local inner=(setpriv --reuid="$uid" --regid="$gid" --clear-groups --
	    sh -c "umask ${umask_v:-0022}; exec \"\$@\"" sh "$@")
	if [ "$(unit_value "$unit" PrivateUsers)" = yes ]; then
		# The namespace is made first; root writes its maps from outside
		# (several lines need CAP_SETUID in the parent namespace), then
		# a fifo lets the child go on to drop to the unit's user.
		local go=$work/go.$RANDOM
		mkfifo "$go"
		unshare --user -- sh -c 'read -r _ < "$1"; shift; exec "$@"' sh "$go" \
		    "${inner[@]}" &
		local pid=$! self
		pids+=("$pid")
		self=$(readlink /proc/self/ns/user)
		for _ in $(seq 100); do
			[ "$(readlink "/proc/$pid/ns/user" 2>/dev/null)" != "$self" ] && break
			sleep 0.02
		done
		# A map must arrive in one write(2).
		python3 -c 'import os, sys
for f, i in (("uid_map", sys.argv[2]), ("gid_map", sys.argv[3])):
    fd = os.open("/proc/%s/%s" % (sys.argv[1], f), os.O_WRONLY)
    os.write(fd, ("0 0 1\n%s %s 1\n" % (i, i)).encode())
    os.close(fd)' "$pid" "$uid" "$gid"
		echo go > "$go"
		rm -f "$go"
	else
		"${inner[@]}" &
		pids+=($!)
	fi
}

# --- the docs: what they tell a user to write names only users they create
grep -q '^SYNCD_ALLOWED_UIDS=imap-mcp$' "$src/docs/setup.md" ||
    fail "docs/setup.md's syncd.conf does not allow mcpd's user (imap-mcp) on the control socket"
for u in $(sed -n 's/^#\{0,1\}SYNCD_ALLOWED_UIDS=//p' "$src/.env.example" | tr ',' ' '); do
	grep -q "adduser .* $u\$" "$src/docs/setup.md" ||
	    fail ".env.example names user $u, which docs/setup.md never creates"
done
[ "$(unit_value imap-mcp-syncd.service User)" = imap-mcp-sync ] &&
    [ "$(unit_value imap-mcp-mcpd.service User)" = imap-mcp ] ||
    fail "the units' users are not the ones docs/setup.md creates"

# --- the mailbox and the two users' directories
mkdir "$work/srv"
dovecot_start "$work/srv"
python3 "$src/tests/lib/mkmail.py" "$work/inbox:4:in"
dovecot_load_maildir INBOX "$work"/inbox/*.eml

# StateDirectory (0750) and RuntimeDirectory (0750), both sync:group.
install -d -m 0750 -o $sync_uid -g $group_gid "$work/state" "$work/run"
install -m 0600 -o $sync_uid -g $group_gid "$DOVECOT_PASSWORD_FILE" "$work/imap-password"
install -d -m 0700 -o $mcpd_uid -g $group_gid "$work/mcpd"
SYNCD_LOG=$work/syncd.log syncd_init "$work" DATA_DIR="$work/state" \
    IMAP_PASSWORD_FILE="$work/imap-password" SYNCD_SOCKET="$work/run/syncd.sock" \
    SYNCD_ALLOWED_UIDS=$mcpd_uid SYNC_INTERVAL=3600 LOG_LEVEL=info
chmod 0644 "$SYNCD_CONF"

# The first backfill, as docs/setup.md runs it (systemd-run: the user, the group, the umask).
setpriv --reuid=$sync_uid --regid=$group_gid --clear-groups -- sh -c \
    "umask $(unit_value imap-mcp-syncd.service UMask); exec \"\$@\"" sh \
    "$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" --backfill 2>>"$SYNCD_LOG" ||
    fail "backfill as the sync user"
[ "$(stat -c %a "$work/state/index.db")" = 640 ] || fail "index.db is not 0640"

run_as_unit imap-mcp-syncd.service $sync_uid $group_gid \
    "$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" 2>>"$SYNCD_LOG"
for _ in $(seq 100); do [ -S "$work/run/syncd.sock" ] && break; sleep 0.1; done
[ -S "$work/run/syncd.sock" ] || fail "syncd made no control socket"

run_as_unit imap-mcp-mcpd.service $mcpd_uid $group_gid env MCP_AUTH=none \
    MCP_LISTEN=127.0.0.1:0 MCP_INDEX="$work/state/index.db" MCP_PORT_FILE="$work/mcpd/port" \
    SYNCD_SOCKET="$work/run/syncd.sock" "$MB_BUILD_DIR/mcpd" 2>>"$work/mcpd.log"
for _ in $(seq 100); do [ -s "$work/mcpd/port" ] && break; sleep 0.1; done
mcpd_pid=${pids[-1]}
[ -s "$work/mcpd/port" ] || fail "mcpd did not start"
url=http://127.0.0.1:$(cat "$work/mcpd/port")/mcp

# mcpd can read the index through the group, and cannot write it.
node "$src/tests/integration/mcp_call.mjs" "$url" "$deps" search_messages '{"query":"*"}' \
    > "$work/s.json" 2>>"$work/mcpd.log" || true
id=$(sqlite3 -batch -noheader "$work/state/index.db" \
    "SELECT m.id FROM messages m JOIN folders f ON f.id = m.folder_id WHERE f.name = 'INBOX' AND m.uid = 2")
[ -n "$id" ] || fail "no row for INBOX UID 2"

# A write through the deployment: mcpd -> control socket -> syncd -> Dovecot.
node "$src/tests/integration/mcp_call.mjs" "$url" "$deps" flag_message \
    "{\"id\":$id,\"add\":[\"\\\\Flagged\"]}" > "$work/r.json" 2>>"$work/mcpd.log" ||
    fail "flag_message: the client failed"
python3 - "$work/r.json" <<'PY' || fail "flag_message through the deployment: $(cat "$work/r.json")"
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if not d.get("isError") and d["structuredContent"]["outcome"] == "ok" else 1)
PY
dovecot_flags INBOX 2 | grep -q '\\Flagged' || fail "server: UID 2 is not \\Flagged"
peer=$(sqlite3 -batch -noheader "$work/state/index.db" \
    "SELECT peer_uid || '/' || outcome FROM write_log ORDER BY id DESC LIMIT 1")
[ "$peer" = "$mcpd_uid/ok" ] ||
    fail "write_log says peer/outcome $peer; syncd did not see mcpd's real uid $mcpd_uid"
! grep -q "refused uid" "$SYNCD_LOG" || fail "syncd refused a peer: $(grep 'refused uid' "$SYNCD_LOG")"

echo "ok: a write through the two-user deployment reached the mailbox, peer uid $mcpd_uid seen"

# --- a second account, "home": bob's mailbox on the same server
dovecot_add_user bob
python3 "$src/tests/lib/mkmail.py" "$work/homebox:3:home"
DOVECOT_USER=bob dovecot_load_maildir INBOX "$work"/homebox/*.eml

# instance_path KEY: the template's Environment= value of KEY for the
# instance "home", under this test's directories.
tmpl=imap-mcp-syncd@.service
instance_path() {
	sed -n "s|^Environment=$1=||p" "$units/$tmpl" | sed -e 's/%i/home/g' \
	    -e "s|^/var/lib/imap-mcp/|$work/state/|" -e "s|^/run/imap-mcp/|$work/run/|"
}
home_data=$(instance_path DATA_DIR)
home_sock=$(instance_path SYNCD_SOCKET)
[ "$home_data" = "$work/state/home" ] || fail "the template's DATA_DIR is not docs/setup.md's: $home_data"
[ "$home_sock" = "$work/run/home/control.sock" ] ||
    fail "the template's SYNCD_SOCKET is not docs/setup.md's: $home_sock"
# What systemd makes for the instance (docs/setup.md makes the first by hand).
install -d -m "$(unit_value $tmpl StateDirectoryMode)" -o $sync_uid -g $group_gid "$home_data"
install -d -m "$(unit_value $tmpl RuntimeDirectoryMode)" -o $sync_uid -g $group_gid \
    "$(dirname "$home_sock")"
install -m 0600 -o $sync_uid -g $group_gid "$DOVECOT_DIR/password-bob" "$work/imap-password-home"
printf '%s\n' IMAP_HOST=127.0.0.1 "IMAP_PORT=$DOVECOT_IMAP_PORT" IMAP_TLS=none \
    IMAP_USER=bob "IMAP_PASSWORD_FILE=$work/imap-password-home" \
    "DATA_DIR=$home_data" "SYNCD_SOCKET=$home_sock" "SYNCD_ALLOWED_UIDS=$mcpd_uid" \
    SYNC_INTERVAL=3600 LOG_LEVEL=info > "$work/syncd-home.env"
chmod 0644 "$work/syncd-home.env"
setpriv --reuid=$sync_uid --regid=$group_gid --clear-groups -- sh -c \
    "umask $(unit_value $tmpl UMask); exec \"\$@\"" sh \
    "$MB_BUILD_DIR/syncd" --config "$work/syncd-home.env" --backfill 2>>"$SYNCD_LOG" ||
    fail "the second account's backfill as the sync user"
[ "$(stat -c %a "$home_data/index.db")" = 640 ] || fail "home's index.db is not 0640"
run_as_unit $tmpl $sync_uid $group_gid \
    "$MB_BUILD_DIR/syncd" --config "$work/syncd-home.env" 2>>"$SYNCD_LOG"
for _ in $(seq 100); do [ -S "$home_sock" ] && break; sleep 0.1; done
[ -S "$home_sock" ] || fail "the second syncd made no control socket"

# mcpd again, with the accounts docs/setup.md writes in mcpd.conf (the first
# keeps number 0), under this test's directories; READERS and WRITERS are
# for OAuth.
mapfile -t accounts < <(sed -n -E 's/^(ACCOUNTS|ACCOUNT_[A-Z0-9_]+_(NUMBER|INDEX|SYNCD_SOCKET))=/&/p' \
    "$src/docs/setup.md" | sed -e "s|=/var/lib/imap-mcp/|=$work/state/|" -e "s|=/run/imap-mcp/|=$work/run/|")
for want in "ACCOUNT_HOME_INDEX=$home_data/index.db" "ACCOUNT_HOME_SYNCD_SOCKET=$home_sock"; do
	printf '%s\n' "${accounts[@]}" | grep -qxF -e "$want" ||
	    fail "docs/setup.md's mcpd settings lack $want: ${accounts[*]}"
done
kill -TERM "$mcpd_pid"
wait "$mcpd_pid" 2>/dev/null || true
rm -f "$work/mcpd/port"
run_as_unit imap-mcp-mcpd.service $mcpd_uid $group_gid env MCP_AUTH=none \
    MCP_LISTEN=127.0.0.1:0 MCP_PORT_FILE="$work/mcpd/port" "${accounts[@]}" \
    "$MB_BUILD_DIR/mcpd" 2>>"$work/mcpd.log"
for _ in $(seq 100); do [ -s "$work/mcpd/port" ] && break; sleep 0.1; done
[ -s "$work/mcpd/port" ] || fail "mcpd with two accounts did not start"
url=http://127.0.0.1:$(cat "$work/mcpd/port")/mcp

call() {	# TOOL ARGS_JSON OUT: one tool call through the SDK client
	node "$src/tests/integration/mcp_call.mjs" "$url" "$deps" "$1" "$2" > "$3" \
	    2>>"$work/mcpd.log" || fail "$1: the client failed"
}
call list_accounts '{}' "$work/accounts.json"
python3 - "$work/accounts.json" <<'PY' || fail "list_accounts: $(cat "$work/accounts.json")"
import json, sys
d = json.load(open(sys.argv[1]))
a = {x["name"]: x for x in d["structuredContent"]["accounts"]}
sys.exit(0 if sorted(a) == ["home", "work"] and a["work"]["number"] == 0 and
         a["home"]["number"] == 1 and a["work"]["messages"] == 4 and
         a["home"]["messages"] == 3 and a["home"]["may_write"] else 1)
PY
call search_messages '{"query":"message"}' "$work/both.json"
python3 - "$work/both.json" <<'PY' || fail "a search over both accounts: $(cat "$work/both.json")"
import json, sys
hits = json.load(open(sys.argv[1]))["structuredContent"]["results"]
got = sorted((h["account"], h["subject"]) for h in hits)
want = sorted([("work", "in message %d" % i) for i in range(1, 5)] +
              [("home", "home message %d" % i) for i in range(1, 4)])
sys.exit(0 if got == want else 1)
PY

# A write on home's UID 3 reaches bob's mailbox and leaves alice's UID 3 alone.
local_id=$(sqlite3 -batch -noheader "$home_data/index.db" \
    "SELECT m.id FROM messages m JOIN folders f ON f.id = m.folder_id WHERE f.name = 'INBOX' AND m.uid = 3")
[ -n "$local_id" ] || fail "no row for home's INBOX UID 3"
call flag_message "{\"id\":$((1000000000000 + local_id)),\"add\":[\"\\\\Flagged\"]}" "$work/r2.json"
python3 - "$work/r2.json" <<'PY' || fail "flag_message on an id of home: $(cat "$work/r2.json")"
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if not d.get("isError") and d["structuredContent"]["outcome"] == "ok" else 1)
PY
DOVECOT_USER=bob dovecot_flags INBOX 3 | grep -q '\\Flagged' || fail "bob's UID 3 is not \\Flagged"
! dovecot_flags INBOX 3 | grep -q '\\Flagged' || fail "alice's UID 3 was flagged by a write on an id of home"
peer=$(sqlite3 -batch -noheader "$home_data/index.db" \
    "SELECT peer_uid || '/' || outcome FROM write_log ORDER BY id DESC LIMIT 1")
[ "$peer" = "$mcpd_uid/ok" ] || fail "home's write_log says peer/outcome $peer"

ok=1
echo "ok: a second account on imap-mcp-syncd@home's paths beside the first; one mcpd reads both and writes to the right mailbox"
