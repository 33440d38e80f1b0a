# shellcheck shell=bash
# Helpers for syncd's integration tests; source after tests/lib/dovecot.sh
# and after dovecot_start.
#
#	syncd_init DIR [KEY=VALUE...]	write DIR/syncd.conf for the running Dovecot
#					(plaintext on loopback, DATA_DIR=DIR/data,
#					LOG_LEVEL=debug) plus the extra settings
#	syncd [ARGS...]			run build/syncd with that config; stderr is
#					appended to $SYNCD_LOG; returns its status
#	syncd_sql SQL			query the index with the sqlite3 shell
#	server_uids FOLDER		the folder's UIDs as Dovecot has them, one a line
#	index_uids FOLDER		the folder's UIDs in the index (current uidvalidity)

syncd_init() {
	local dir=$1
	shift
	export SYNCD_DIR=$dir SYNCD_CONF=$dir/syncd.conf SYNCD_DATA=$dir/data
	export SYNCD_LOG=${SYNCD_LOG:-$dir/syncd.log}
	local line extra skip
	{
		# The defaults, unless an extra setting names the same key.
		for line in "IMAP_HOST=127.0.0.1" "IMAP_PORT=$DOVECOT_IMAP_PORT" "IMAP_TLS=none" \
		    "IMAP_USER=$DOVECOT_USER" "IMAP_PASSWORD_FILE=$DOVECOT_PASSWORD_FILE" \
		    "DATA_DIR=$SYNCD_DATA" "LOG_LEVEL=debug" "SYNCD_SOCKET=$dir/syncd.sock"; do
			skip=
			for extra in "$@"; do
				[ "${extra%%=*}" = "${line%%=*}" ] && skip=1
			done
			[ -n "$skip" ] || echo "$line"
		done
		printf '%s\n' "$@"
	} > "$SYNCD_CONF"
}

syncd() {
	local rc=0
	echo "=== syncd $*" >> "$SYNCD_LOG"
	timeout -k 5 "${SYNCD_TIMEOUT:-120}" "$MB_BUILD_DIR/syncd" --config "$SYNCD_CONF" "$@" \
	    2>>"$SYNCD_LOG" || rc=$?
	return $rc
}

syncd_sql() {
	sqlite3 -batch -noheader "$SYNCD_DATA/index.db" "$1"
}

server_uids() {
	dovecot_doveadm search -u "$DOVECOT_USER" mailbox "$1" ALL | awk '{print $2}' | sort -n
}

index_uids() {
	syncd_sql "SELECT m.uid FROM messages m JOIN folders f ON f.id = m.folder_id
	    WHERE f.name = '$1' AND m.uidvalidity = f.uidvalidity ORDER BY m.uid"
}

# syncd_log_clean [LOG...]: no sanitizer report in syncd's logs (a worker that
# trips ASan dies and is replaced, so its report would otherwise go unseen).
syncd_log_clean() {
	local f
	for f in "${@:-$SYNCD_LOG}"; do
		if grep -qE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "$f"; then
			echo "sanitizer report in $f" >&2
			return 1
		fi
	done
}
