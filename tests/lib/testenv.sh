# shellcheck shell=bash
# The frame every daemon-driving integration test shares, so each script
# holds only what it tests: a work directory that is removed when the test
# passed and kept, with the tail of its logs, when it failed; the processes
# it started stopped on every exit; fail(); and a bounded wait.
# Source it before tests/lib/dovecot.sh starts a server (Dovecot chains its
# own stop onto this EXIT trap), and end the test with ok=1.
#
#	testenv_begin [VAR:SIGNAL ...]	work=$(mktemp -d), ok=0, each VAR set
#			empty; on exit: kill -SIGNAL "$VAR" for each VAR then set
#			(a pid the script started), wait for them, then remove
#			$work, or keep it and print the logs' tails
#	testenv_track PID	stop PID too (TERM) on exit
#	TESTENV_LOGS	the logs a failure prints the last 40 lines of (default:
#			$SYNCD_LOG, else $work/syncd.log); read at exit
#	TESTENV_LOG_DROP	a grep -E pattern of log lines not worth printing
#	fail MESSAGE	print "FAIL: MESSAGE" to stderr and exit 1
#	until_ok 'SHELL'	eval it every 0.1 s until it succeeds; 1 after 30 s

testenv_begin() {
	work=$(mktemp -d)
	ok=0
	_testenv_stop=("$@")
	_testenv_pids=()
	local v
	for v in "$@"; do
		printf -v "${v%%:*}" '%s' ""
	done
	trap _testenv_end EXIT
}

testenv_track() { _testenv_pids+=("$1"); }

_testenv_end() {
	local v name pid log
	for pid in "${_testenv_pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for v in "${_testenv_stop[@]}"; do
		name=${v%%:*}
		pid=${!name}
		[ -z "$pid" ] || kill "-${v##*:}" "$pid" 2>/dev/null || true
	done
	for v in "${_testenv_stop[@]}"; do
		name=${v%%:*}
		pid=${!name}
		[ -z "$pid" ] || wait "$pid" 2>/dev/null || true
	done
	for pid in "${_testenv_pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	if [ "$ok" = 1 ]; then
		rm -rf "$work"
		return
	fi
	echo "kept $work" >&2
	for log in ${TESTENV_LOGS:-${SYNCD_LOG:-$work/syncd.log}}; do
		[ -f "$log" ] || continue
		echo "--- $log" >&2
		if [ -n "${TESTENV_LOG_DROP:-}" ]; then
			grep -vE "$TESTENV_LOG_DROP" "$log" | tail -n 40 >&2 || true
		else
			tail -n 40 "$log" >&2 || true
		fi
	done
}

fail() { echo "FAIL: $*" >&2; exit 1; }

until_ok() {
	for _ in $(seq 300); do eval "$1" && return 0; sleep 0.1; done
	return 1
}
