#!/usr/bin/env bash
# The systemd units of scripts/deploy/:
#   - `systemd-analyze security --offline=true` rates each at 2.0 or lower
#     ("Overall exposure level"; 0 is best, 10 worst);
#   - `systemd-analyze verify` accepts both (offline: ExecStart pointed at this
#     build's binaries, since /usr/local/sbin has none on a build machine);
#   - the deployment's facts: two users, the credential through LoadCredential
#     for syncd only, Type=notify with a watchdog, restart on failure;
#   - the template imap-mcp-syncd@.service, checked as the instance @work
#     (systemd loads the template for a unit name it does not find): hardened
#     as the single unit is, and two instances (%i expanded to work and home)
#     with their own settings file, index, control socket and credential,
#     none of them the single unit's.
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

for u in imap-mcp-syncd imap-mcp-mcpd imap-mcp-syncd@work; do
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
done
for u in imap-mcp-syncd imap-mcp-mcpd imap-mcp-syncd@; do
	sed "s|/usr/local/sbin/|$build/|" "$units/$u.service" > "$work/$u.service"
done
out=$(systemd-analyze verify "$work/imap-mcp-syncd.service" "$work/imap-mcp-mcpd.service" \
    "$work/imap-mcp-syncd@work.service" 2>&1) ||
    fail "systemd-analyze verify: $out"
[ -z "$out" ] || fail "systemd-analyze verify has something to say: $out"

has() {	# unit line-regex what
	grep -qE "^$2\$" "$units/$1.service" || fail "$1: $3 ($2)"
}
lacks() {
	! grep -qE "^$2\$" "$units/$1.service" || fail "$1: $3 ($2)"
}
for u in imap-mcp-syncd imap-mcp-mcpd imap-mcp-syncd@; do
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
has imap-mcp-syncd 'RuntimeDirectoryPreserve=yes' "kept when stopped: the instances' sockets are below it"
has imap-mcp-syncd@ 'User=imap-mcp-sync' "runs as the sync user"
has imap-mcp-syncd@ 'Group=imap-mcp' "files group imap-mcp, for mcpd to read"
has imap-mcp-syncd@ 'StateDirectoryMode=0750' "index directory closed to others"
has imap-mcp-syncd@ 'RuntimeDirectoryMode=0750' "socket directory closed to others"
has imap-mcp-syncd@ 'UMask=0027' "index files group-readable, not world"
has imap-mcp-syncd@ 'Before=imap-mcp-mcpd.service' "the index exists before mcpd opens it"
# The template is hardened line for line as the single unit is.
sed -n '/^NoNewPrivileges=/,/^KeyringMode=/p' "$units/imap-mcp-syncd.service" | grep -v '^#' |
    while IFS= read -r line; do
	grep -qFx -- "$line" "$units/imap-mcp-syncd@.service" ||
	    echo "imap-mcp-syncd@: hardened less than imap-mcp-syncd ($line missing)"
done > "$work/hardening"
[ ! -s "$work/hardening" ] || fail "$(cat "$work/hardening")"

# paths NAME UNIT-FILE: the settings file, index directory, control socket and
# credential file a syncd unit gives its daemon, one a line (on stdout; a
# failure goes to stderr), after checking that the directories systemd makes
# are the ones syncd is told to use.
paths() {
	local name=$1 f=$2 config data sock cred state run
	config=$(sed -n 's|^ExecStart=.* --config \([^ ]*\).*|\1|p' "$f")
	data=$(sed -n 's|^Environment=DATA_DIR=||p' "$f")
	sock=$(sed -n 's|^Environment=SYNCD_SOCKET=||p' "$f")
	sock=${sock:-/run/imap-mcp/syncd.sock}	# syncd's default (docs/syncd.md)
	cred=$(sed -n 's|^LoadCredential=imap-password:||p' "$f")
	state=/var/lib/$(sed -n 's|^StateDirectory=||p' "$f")
	run=/run/$(sed -n 's|^RuntimeDirectory=||p' "$f")
	[ "$data" = "$state" ] || fail "$name: DATA_DIR $data is not the StateDirectory $state" >&2
	[ "$(dirname "$sock")" = "$run" ] ||
	    fail "$name: SYNCD_SOCKET $sock is not in the RuntimeDirectory $run" >&2
	printf '%s\n' "$config" "$data" "$sock" "$cred"
}
for i in work home; do
	sed "s/%i/$i/g" "$units/imap-mcp-syncd@.service" > "$work/syncd-$i.unit"
	! grep -v '^#' "$work/syncd-$i.unit" | grep -q '%' || fail "imap-mcp-syncd@: a specifier other than %i"
	paths "imap-mcp-syncd@$i" "$work/syncd-$i.unit" > "$work/paths-$i"
	grep -qx -- '' "$work/paths-$i" && fail "imap-mcp-syncd@$i: a path is missing: $(paste -sd' ' "$work/paths-$i")"
	grep -c "/$i\b\|-$i\.env\|-$i\$" "$work/paths-$i" | grep -qx 4 ||
	    fail "imap-mcp-syncd@$i: not every path names the instance: $(paste -sd' ' "$work/paths-$i")"
done
paths imap-mcp-syncd "$units/imap-mcp-syncd.service" > "$work/paths-single"
dup=$(sort "$work/paths-work" "$work/paths-home" "$work/paths-single" | uniq -d)
[ -z "$dup" ] || fail "syncd units share a path: $dup"
echo "imap-mcp-syncd@work: $(paste -sd' ' "$work/paths-work")"
echo "imap-mcp-syncd@home: $(paste -sd' ' "$work/paths-home")"

has imap-mcp-mcpd 'User=imap-mcp' "runs as imap-mcp"
has imap-mcp-mcpd 'ReadOnlyPaths=/var/lib/imap-mcp' "cannot write the index"
lacks imap-mcp-mcpd 'LoadCredential=.*' "mcpd holds no credential"
lacks imap-mcp-mcpd 'ExecStart=.* --.*' "mcpd takes no options (settings from EnvironmentFile)"
grep -q 'Type=notify' "$units/imap-mcp-mcpd.service" && grep -q 'mb_notify("READY=1' "$src/mcpd/main.c" ||
    fail "mcpd declares Type=notify but does not send READY=1"
grep -q 'mb_notify("READY=1' "$src/syncd/loop.c" || fail "syncd does not send READY=1"
((fails == 0)) || exit 1
echo "test_units: ok"
