#!/usr/bin/env python3
"""Time search_messages on a running mcpd over one keep-alive HTTP connection.

    bench-mcpd-search.py PORT PID REPS QUERIES WRK_LUA [--naive FILE] [--json FILE]

Initialises a session, runs each query of QUERIES (one a line) once to warm
the caches (timed too: each query's first search, which counts its
statistics, on an mcpd just started), then REPS times in turn, and prints
p50/p95/p99 over every request, mcpd's CPU time per request (from /proc/PID: steadier than wall
time on a shared machine) and, per query, its hits, p50 and median CPU (the
threads' schedstat run times).  --naive FILE adds benchq's in-process
figures beside them.  --json FILE also writes the figures as JSON, for a
script that compares runs (scripts/bench-accounts).  WRK_LUA receives a wrk
script posting the same queries on the session (scripts/bench-mcpd-lib.sh).
Used by scripts/bench-mcpd and scripts/bench-accounts.
"""
import http.client, json, os, sys, time

args = sys.argv[1:]
opts = {}
while len(args) > 5 and args[-2].startswith("--"):
    opts[args[-2]] = args[-1]
    args = args[:-2]
port, pid, reps, queries_file, wrk_lua = int(args[0]), args[1], int(args[2]), args[3], args[4]
queries = open(queries_file).read().splitlines()
naive = [l.split() for l in open(opts["--naive"])] if "--naive" in opts else None
tick = os.sysconf("SC_CLK_TCK")

def cpu():
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / tick

def cpu_ns():   # per request: the threads' run time in ns (clock ticks are 10 ms)
    t = 0
    for d in os.listdir(f"/proc/{pid}/task"):
        try: t += int(open(f"/proc/{pid}/task/{d}/schedstat").read().split()[0])
        except OSError: pass
    return t

def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p))]

c = http.client.HTTPConnection("127.0.0.1", port)
H = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

def post(obj, sid=None):
    h = dict(H)
    if sid: h["Mcp-Session-Id"] = sid
    c.request("POST", "/mcp", json.dumps(obj), h)
    r = c.getresponse(); body = r.read()
    return r, body

r, _ = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}})
sid = r.getheader("Mcp-Session-Id")
post({"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)

def call(q, i):
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "search_messages", "arguments": {"query": q, "limit": 20}}}

per = {q: [] for q in queries}
per_cpu = {q: [] for q in queries}
hits, capped, total, exact, top = {}, {}, {}, {}, {}
first, first_cpu = [], []
for q in queries:                      # warm the page cache and statement cache
    n0 = cpu_ns()
    t0 = time.perf_counter()
    _, body = post(call(q, 0), sid)
    first.append((time.perf_counter() - t0) * 1000)
    first_cpu.append((cpu_ns() - n0) / 1e6)
    res = json.loads(body)["result"]
    if res.get("isError"):
        sys.exit(f"bench-mcpd-search: {q!r}: {res['content'][0]['text']}")
    sc = res.get("structuredContent", {})
    hits[q] = len(sc.get("results", []))
    capped[q] = "ranked_newest" in sc
    total[q] = sc.get("total")
    exact[q] = sc.get("total_exact", True)
    top[q] = [h.get("message_id") for h in sc.get("results", [])]
c0 = cpu()
for rep in range(reps):
    for i, q in enumerate(queries):
        n0 = cpu_ns()
        t0 = time.perf_counter()
        post(call(q, i), sid)
        per[q].append((time.perf_counter() - t0) * 1000)
        per_cpu[q].append((cpu_ns() - n0) / 1e6)
cpu_ms = (cpu() - c0) * 1000 / (reps * len(queries))
allt = [t for v in per.values() for t in v]
print(f"| | p50 | p95 | p99 | CPU / query |")
print(f"|---|---|---|---|---|")
print(f"| mcpd over HTTP (keep-alive) | {pct(allt,.5):.2f} ms | {pct(allt,.95):.2f} ms | {pct(allt,.99):.2f} ms | {cpu_ms:.2f} ms (mcpd) |")
print(f"| each query's first search | {pct(first,.5):.2f} ms | {pct(first,.95):.2f} ms | {max(first):.2f} ms (worst) | {sum(first_cpu) / len(first_cpu):.2f} ms (mcpd) |")
if naive is not None:
    nv = {}
    for i, t, ct in naive:
        nv.setdefault(int(i), []).append((float(t), float(ct)))
    nall = [t for v in nv.values() for t, _ in v]
    ncpu = sum(ct for v in nv.values() for _, ct in v) / len(nall)
    print(f"| naive FTS5 in-process | {pct(nall,.5):.2f} ms | {pct(nall,.95):.2f} ms | {pct(nall,.99):.2f} ms | {ncpu:.2f} ms |")
    print()
    print("| query | hits | mcpd p50 | mcpd CPU (median) | naive p50 |")
    print("|---|---|---|---|---|")
    for i, q in enumerate(queries):
        print(f"| `{q}` | {hits[q]}{' (capped)' if capped[q] else ''} | {pct(per[q],.5):.2f} ms | {pct(per_cpu[q],.5):.2f} ms | {pct([t for t,_ in nv[i]],.5):.2f} ms |")
else:
    print()
    print("| query | hits | total | mcpd p50 | mcpd CPU (median) |")
    print("|---|---|---|---|---|")
    for q in queries:
        print(f"| `{q}` | {hits[q]}{' (capped)' if capped[q] else ''} | {total[q]} | {pct(per[q],.5):.2f} ms | {pct(per_cpu[q],.5):.2f} ms |")
if "--json" in opts:
    with open(opts["--json"], "w") as f:
        json.dump({"p50": pct(allt, .5), "p95": pct(allt, .95), "p99": pct(allt, .99),
                   "cpu_ms": cpu_ms,
                   "queries": {q: {"p50": pct(per[q], .5), "cpu_ms": pct(per_cpu[q], .5),
                                   "total": total[q], "total_exact": exact[q],
                                   "top": top[q]} for q in queries}}, f)
with open(wrk_lua, "w") as f:
    f.write(f'local sid = "{sid}"\n')
    f.write("local qs = {" + ",".join(json.dumps(json.dumps(q)) for q in queries) + "}\n")
    f.write('''local i = 0
request = function()
  i = i + 1
  local body = '{"jsonrpc":"2.0","id":' .. i .. ',"method":"tools/call","params":{"name":"search_messages","arguments":{"query":' .. qs[(i % #qs) + 1] .. ',"limit":20}}}'
  return wrk.format("POST", "/mcp", {["Content-Type"] = "application/json",
    ["Accept"] = "application/json, text/event-stream", ["Mcp-Session-Id"] = sid}, body)
end
''')
