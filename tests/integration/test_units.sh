#!/usr/bin/env bash
# The systemd units of scripts/deploy/:
#   - `systemd-analyze security --offline=true` rates each at 2.0 or lower
#     ("Overall exposure level"; 0 is best, 10 worst);
#   - `systemd-analyze verify` accepts both (offline: ExecStart pointed at this
#     build's binaries, since /usr/local/sbin has none on a build machine);
#   - the deployment's facts: two users, the credential through LoadCredential
#     for syncd only, Type=notify with a watchdog, restart on failure.
# Env: MB_BUILD_DIR, MB_SOURCE_DIR.
set -euo pipefail
build=${MB_BUILD_DIR:?}
src=${MB_SOURCE_DIR:?}
units=$src/scripts/deploy
work=$(mktemp -d /tmp/test_units.XXXXXX)
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
command -v systemd-analyze >/dev/null || { echo "no systemd-analyze"; exit 1; }

for u in imap-mcp-syncd imap-mcp-mcpd; do
	out=$(systemd-analyze security --offline=true "$units/$u.service" 2>&1) || true
	score=$(sed -n "s/.*Overall exposure level for $u.service: \([0-9.]*\).*/\1/p" <<<"$out")
	if [ -z "$score" ]; then
		fail "$u: no exposure level in: $out"
	elif ! awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }'; then
		fail "$u: exposure $score > 2.0"
		grep '✗' <<<"$out" | head -20
	else
		echo "$u: exposure $score"
	fi
	sed "s|/usr/local/sbin/|$build/|" "$units/$u.service" > "$work/$u.service"
done
out=$(systemd-analyze verify "$work/imap-mcp-syncd.service" "$work/imap-mcp-mcpd.service" 2>&1) ||
    fail "systemd-analyze verify: $out"
[ -z "$out" ] || fail "systemd-analyze verify has something to say: $out"

has() {	# unit line-regex what
	grep -qE "^$2\$" "$units/$1.service" || fail "$1: $3 ($2)"
}
lacks() {
	! grep -qE "^$2\$" "$units/$1.service" || fail "$1: $3 ($2)"
}
for u in imap-mcp-syncd imap-mcp-mcpd; do
	has $u 'Type=notify' "readiness by sd_notify"
	has $u 'NotifyAccess=main' "only the main process may notify"
	has $u 'WatchdogSec=[0-9]+' "a watchdog"
	has $u 'Restart=on-failure' "restarted on failure"
	has $u 'NoNewPrivileges=yes' "no new privileges"
	has $u 'CapabilityBoundingSet=' "no capabilities"
	has $u 'ProtectSystem=strict' "read-only system"
done
has imap-mcp-syncd 'User=imap-mcp-sync' "runs as the sync user"
has imap-mcp-syncd 'Group=imap-mcp' "files group imap-mcp, for mcpd to read"
has imap-mcp-syncd 'LoadCredential=imap-password:/etc/imap-mcp/imap-password' "credential"
has imap-mcp-syncd 'StateDirectory=imap-mcp' "owns /var/lib/imap-mcp"
has imap-mcp-syncd 'StateDirectoryMode=0750' "index directory closed to others"
has imap-mcp-syncd 'UMask=0027' "index files group-readable, not world"
has imap-mcp-syncd 'RuntimeDirectory=imap-mcp' "socket directory"
has imap-mcp-mcpd 'User=imap-mcp' "runs as imap-mcp"
has imap-mcp-mcpd 'ReadOnlyPaths=/var/lib/imap-mcp' "cannot write the index"
lacks imap-mcp-mcpd 'LoadCredential=.*' "mcpd holds no credential"
lacks imap-mcp-mcpd 'ExecStart=.* --.*' "mcpd takes no options (settings from EnvironmentFile)"
grep -q 'Type=notify' "$units/imap-mcp-mcpd.service" && grep -q 'mb_notify("READY=1' "$src/mcpd/main.c" ||
    fail "mcpd declares Type=notify but does not send READY=1"
grep -q 'mb_notify("READY=1' "$src/syncd/loop.c" || fail "syncd does not send READY=1"
((fails == 0)) || exit 1
echo "test_units: ok"
