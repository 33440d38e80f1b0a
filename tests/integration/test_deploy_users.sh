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

ok=1
echo "ok: a write through the two-user deployment reached the mailbox, peer uid $mcpd_uid seen"
