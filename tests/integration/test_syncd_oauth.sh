#!/usr/bin/env bash
# syncd's OAuth 2.0 login (IMAP_AUTH=oauth2) for real: oidc-provider
# (tests/integration/oauth_imap_as.mjs) issues the tokens, Dovecot's oauth2
# passdb checks each one by introspection against it.
#  1. syncd --oauth-login runs the device grant: a refusal exits 77 and
#     stores nothing; an approval (scripted over HTTP) stores the refresh
#     token, 0600; --check-config shows no secret; a group-readable token
#     file is refused;
#  2. syncd --once logs in with AUTHENTICATE OAUTHBEARER and indexes the
#     mail; the rotated refresh token is written back;
#  3. a daemon whose access tokens live 6 s refreshes them before they
#     expire, and later ticks log in and index new mail;
#  4. a daemon's watcher logs in with the scheduler's token; an access token
#     revoked under the daemon: the refused login is retried once after one
#     refresh;
#  5. a server offering only XOAUTH2 gets AUTHENTICATE XOAUTH2 (the client
#     secret from $CREDENTIALS_DIRECTORY);
#  6. a revoked refresh token stops the tick after one token request, with
#     no IMAP login, and --once exits 77;
#  7. the access tokens, refresh tokens and client secret, and the base64
#     SASL forms of every access token, are in no log (debug level).
set -euo pipefail
src=${MB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
MB_BUILD_DIR=${MB_BUILD_DIR:-$src/build}
. "$src/tests/lib/dovecot.sh"
. "$src/tests/lib/syncd.sh"
. "$src/tests/lib/testenv.sh"
modules=$src/.deps/npm/node_modules

testenv_begin daemon_pid:TERM as_pid:TERM
[ -d "$modules/oidc-provider" ] || fail "no oidc-provider: run scripts/deps"
rand() { od -An -N12 -tx1 /dev/urandom | tr -d ' \n'; }
json() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{
	const v=JSON.parse(s)[process.argv[1]];console.log(Array.isArray(v)?v.join("\n"):v)})' "$1"; }
wait_for() {	# seconds what command...: poll (bounded) until the command succeeds
	local deadline=$((SECONDS + $1)) what=$2
	shift 2
	until "$@"; do
		((SECONDS < deadline)) || fail "timed out waiting for $what"
		sleep 0.1
	done
}

# --- the authorization server ----------------------------------------------
client_secret="cs-$(rand)"
dovecot_secret="dv-$(rand)"
mkdir "$work/as"
cp "$src/tests/integration/oauth_imap_as.mjs" "$work/as/"
ln -s "$modules" "$work/as/node_modules"
OUT=$work/as/facts.json CLIENT_SECRET=$client_secret DOVECOT_SECRET=$dovecot_secret \
    node "$work/as/oauth_imap_as.mjs" 2>"$work/as.log" &
as_pid=$!
wait_for 30 "the authorization server" test -s "$work/as/facts.json"
issuer=$(json issuer < "$work/as/facts.json")
as() { curl -sf -X POST "$issuer/__test/$1" > /dev/null; }
tokens() { curl -sf "$issuer/__test/tokens" | json "$1"; }

# --- Dovecot with the oauth2 passdb ----------------------------------------
export DOVECOT_OAUTH2_INTROSPECTION_URL="http://dovecot:$dovecot_secret@${issuer#http://}/token/introspection"
mkdir "$work/srv"
dovecot_start "$work/srv"
python3 "$src/tests/lib/mkmail.py" "$work/m:40:oa:0"
dovecot_load_maildir INBOX "$work"/m/oa000{01..30}.eml
(umask 077; printf '%s' "$client_secret" > "$work/client-secret")
syncd_init "$work" IMAP_AUTH=oauth2 "IMAP_OAUTH_TOKEN_URL=$issuer/token" \
    "IMAP_OAUTH_DEVICE_URL=$issuer/device/auth" IMAP_OAUTH_CLIENT_ID=imap-mcp \
    "IMAP_OAUTH_CLIENT_SECRET_FILE=$work/client-secret" \
    "IMAP_OAUTH_REFRESH_TOKEN_FILE=$work/refresh-token" "IMAP_OAUTH_SCOPE=openid offline_access" \
    IMAP_PASSWORD_FILE= SYNC_WATCH_MAX=0
logins() { grep -c "imap-login: .*Login: user=<$DOVECOT_USER>.*method=$1" "$DOVECOT_LOG" || true; }

# Before any login, syncd says what to do rather than connecting.
rc=0; syncd --once || rc=$?
[ "$rc" = 78 ] || fail "no refresh token yet: exit $rc, want 78"
grep -q "run syncd --oauth-login first" "$SYNCD_LOG" || fail "no hint to run --oauth-login"

# --- 1. --oauth-login --------------------------------------------------------
# The person reads the code syncd prints and says yes (or no) on another device.
device_login() {	# approve|deny: runs syncd --oauth-login; returns its status
	local out=$work/login-$1.out rc=0 code
	: > "$out"
	syncd --oauth-login > "$out" &
	local pid=$!
	wait_for 20 "the user code" grep -q "and enter the code" "$out"
	code=$(awk '/and enter the code/ { getline; getline; print $1; exit }' "$out")
	[ -n "$code" ] || fail "no user code in: $(cat "$out")"
	grep -q "^    $issuer/device\$" "$out" || fail "no verification URI in: $(cat "$out")"
	as "$1?user_code=$code&account=$DOVECOT_USER"
	wait "$pid" || rc=$?
	return $rc
}
rc=0; device_login deny || rc=$?
[ "$rc" = 77 ] || fail "--oauth-login refused by the user: exit $rc, want 77"
[ ! -e "$work/refresh-token" ] || fail "a refused login stored a token"
grep -q "oauth: .*access_denied" "$SYNCD_LOG" || fail "no access_denied line"
device_login approve || fail "--oauth-login approved: exit $?"
grep -q "^Approved" "$work/login-approve.out" || fail "no 'Approved' line"
[ "$(stat -c %a "$work/refresh-token")" = 600 ] || fail "refresh token file mode $(stat -c %a "$work/refresh-token")"
first_rt=$(cat "$work/refresh-token")
tokens refresh | grep -qxF -e "$first_rt" || fail "the stored refresh token is not the one issued"
ls "$work" | grep -q "refresh-token.new" && fail "a temporary token file was left behind"
# --check-config says the token can be read, never what it is.
syncd --check-config > "$work/check.out" || fail "--check-config with OAuth: exit $?"
grep -q "^# oauth: refresh token readable" "$work/check.out" || fail "no oauth line in --check-config"
grep -qF -e "$first_rt" "$work/check.out" && fail "--check-config printed the refresh token"
grep -qF -e "$client_secret" "$work/check.out" && fail "--check-config printed the client secret"
# The password file's mode rule holds for the token file.
chmod 640 "$work/refresh-token"
rc=0; syncd --once || rc=$?
[ "$rc" = 78 ] || fail "group-readable refresh token file: exit $rc, want 78"
grep -q "refresh-token: mode 0640 lets group or others read it" "$SYNCD_LOG" || fail "no mode refusal line"
chmod 600 "$work/refresh-token"

# --- 2. OAUTHBEARER, one tick -------------------------------------------------
before=$(logins OAUTHBEARER)
syncd --once || fail "syncd --once with OAuth: exit $?"
[ "$(index_uids INBOX | wc -l)" = 30 ] || fail "indexed $(index_uids INBOX | wc -l) of 30"
(( $(logins OAUTHBEARER) > before )) || fail "no AUTHENTICATE OAUTHBEARER login in Dovecot's log"
[ "$(logins XOAUTH2)" = 0 ] || fail "XOAUTH2 used although OAUTHBEARER was offered"
grep -q "imap: logging in with AUTHENTICATE OAUTHBEARER" "$SYNCD_LOG" || fail "no OAUTHBEARER debug line"
grep -q "imap >>> <private: " "$SYNCD_LOG" || fail "the AUTHENTICATE line was not marked private"
# Rotation is on: the token used is spent, the new one is on disk, still 0600.
[ "$(cat "$work/refresh-token")" != "$first_rt" ] || fail "the rotated refresh token was not written back"
[ "$(stat -c %a "$work/refresh-token")" = 600 ] || fail "rotated token file mode $(stat -c %a "$work/refresh-token")"
grep -q "refresh token rotated and saved" "$SYNCD_LOG" || fail "no rotation line"

# --- 3. short-lived access tokens under a daemon ------------------------------
as "ttl?access=6"
grants0=$(tokens refresh_grants)
syncd_daemon() {
	echo "=== syncd (daemon) $*" >> "$SYNCD_LOG"
	"$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" "$@" 2>>"$SYNCD_LOG" &
	daemon_pid=$!
}
ticks_done() { grep -c "tick [0-9]* done" "$SYNCD_LOG" || true; }
ticks_above() { (( $(ticks_done) > $1 )); }
indexed() { [ "$(index_uids INBOX | wc -l)" = "$1" ]; }
t0=$(ticks_done)
SYNC_INTERVAL=1 syncd_daemon
wait_for 30 "a first tick" ticks_above "$t0"
# New mail after the first token has expired must still arrive.
sleep 7
dovecot_load_maildir INBOX "$work"/m/oa000{31..35}.eml
wait_for 30 "the new mail indexed" indexed 35
kill "$daemon_pid"; wait "$daemon_pid" || true; daemon_pid=
refreshed=$(( $(tokens refresh_grants) - grants0 ))
(( refreshed >= 2 )) || fail "the daemon refreshed $refreshed times in ~10 s of 6 s tokens"
grep -q "login refused" "$SYNCD_LOG" && fail "a login was refused with tokens refreshed in time"

# --- 4. a revoked access token: one refresh, one more login -------------------
as "ttl?access=3600"
t1=$(ticks_done)
# With push on: the watcher, forked after the tick, logs in with the
# scheduler's token (the only credential syncd has) and holds IDLE.
SYNC_INTERVAL=3600 SYNC_WATCH_MAX=1 syncd_daemon
wait_for 30 "the daemon's first tick" ticks_above "$t1"
idling() { (( $(dovecot_count_commands ' IDLE$') >= 1 )); }
wait_for 30 "the watcher's IDLE" idling
grants1=$(tokens refresh_grants)
as revoke-access
dovecot_load_maildir INBOX "$work"/m/oa000{36..40}.eml
kill -HUP "$daemon_pid"
wait_for 30 "the tick after the revocation" indexed 40
kill "$daemon_pid"; wait "$daemon_pid" || true; daemon_pid=
grep -q "refreshing the access token and trying once more" "$SYNCD_LOG" ||
    fail "a revoked access token was not refreshed"
[ "$(( $(tokens refresh_grants) - grants1 ))" = 1 ] || fail "refreshes after the revocation: $(( $(tokens refresh_grants) - grants1 )), want 1"

# --- 5. a server with XOAUTH2 only -------------------------------------------
main_log=$DOVECOT_LOG
mkdir "$work/srv2" "$work/x"
DOVECOT_AUTH_MECHANISMS="plain login xoauth2" dovecot_start "$work/srv2"
dovecot_load_maildir INBOX "$work"/m/oa000{01..12}.eml
# From here the client secret comes as a systemd credential.
sed -i -e "s|^IMAP_PORT=.*|IMAP_PORT=$DOVECOT_IMAP_PORT|" -e "s|^DATA_DIR=.*|DATA_DIR=$work/x/data|" \
    -e "/^IMAP_OAUTH_CLIENT_SECRET_FILE=/d" "$SYNCD_CONF"
mkdir -m 700 "$work/creds"
cp -p "$work/client-secret" "$work/creds/imap-oauth-client-secret"
export CREDENTIALS_DIRECTORY=$work/creds
SYNCD_DATA=$work/x/data
syncd --once || fail "syncd --once against an XOAUTH2-only server: exit $?"
[ "$(index_uids INBOX | wc -l)" = 12 ] || fail "XOAUTH2: indexed $(index_uids INBOX | wc -l) of 12"
(( $(logins XOAUTH2) >= 1 )) || fail "no AUTHENTICATE XOAUTH2 login in Dovecot's log"
[ "$(logins OAUTHBEARER)" = 0 ] || fail "OAUTHBEARER tried on a server without it"

# --- 6. a revoked refresh token: one attempt, exit 77 -------------------------
as revoke-refresh
grants2=$(tokens refresh_grants)
posts=$(tokens token_posts)
attempts=$(dovecot_login_attempts)
rc=0; syncd --once || rc=$?
[ "$rc" = 77 ] || fail "a revoked refresh token: exit $rc, want 77"
[ "$(( $(tokens token_posts) - posts ))" = 1 ] || fail "token requests with a revoked refresh token: $(( $(tokens token_posts) - posts )), want 1"
[ "$(tokens refresh_grants)" = "$grants2" ] || fail "a revoked refresh token was honoured"
[ "$(dovecot_login_attempts)" = "$attempts" ] || fail "an IMAP login was tried without a token"
grep -q "login refused: .*invalid_grant.*run syncd --oauth-login" "$SYNCD_LOG" ||
    fail "no line saying the refresh token was refused"

# --- 7. no secret in any log --------------------------------------------------
curl -sf "$issuer/__test/tokens" > "$work/issued.json"
mapfile -t access < <(json access < "$work/issued.json")
mapfile -t refresh < <(json refresh < "$work/issued.json")
(( ${#access[@]} >= 4 && ${#refresh[@]} >= 4 )) || fail "too few tokens issued to check: ${#access[@]} ${#refresh[@]}"
needles=("$client_secret" "${refresh[@]}")
for at in "${access[@]}"; do
	needles+=("$at"
	    "$(printf 'user=%s\001auth=Bearer %s\001\001' "$DOVECOT_USER" "$at" | base64 -w0)"
	    "$(printf 'n,a=%s,\001auth=Bearer %s\001\001' "$DOVECOT_USER" "$at" | base64 -w0)")
done
# Base64 forms without their '=' padding: a line may cut or re-pad them.
printf '%s\n' "${needles[@]%%=*}" > "$work/needles"
for f in "$SYNCD_LOG" "$work"/login-*.out "$main_log" "$DOVECOT_LOG" "$work"/srv/rawlog/* \
    "$work"/srv2/rawlog/*; do
	[ -f "$f" ] || continue
	if hit=$(grep -oFf "$work/needles" "$f" | head -1) && [ -n "$hit" ]; then
		fail "a secret (${hit:0:6}...) is in $f"
	fi
done
grep -q "<hidden>\|<private: " "$SYNCD_LOG" || fail "the debug log shows no hidden or private data"
syncd_log_clean
ok=1
echo "ok"
