#!/usr/bin/env python3
"""The timing half of scripts/bench-tools: one MCP session over HTTP on
127.0.0.1:PORT, each call once and then REPS times, mcpd's CPU a call from
/proc/PID's threads' run times (schedstat, nanoseconds).

  bench-tools-calls.py PORT PID REPS 'TOOL ARGS_JSON'...
"""
import http.client
import json
import os
import statistics
import sys

port, pid, reps = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
calls = []
for spec in sys.argv[4:]:
    name, _, args = spec.partition(" ")
    calls.append((name, json.loads(args or "{}")))


def cpu_ns():
    t = 0
    for d in os.listdir(f"/proc/{pid}/task"):
        try:
            t += int(open(f"/proc/{pid}/task/{d}/schedstat").read().split()[0])
        except OSError:
            pass  # a thread that ended
    return t


c = http.client.HTTPConnection("127.0.0.1", port)
H = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def post(obj, sid=None):
    h = dict(H)
    if sid:
        h["Mcp-Session-Id"] = sid
    c.request("POST", "/mcp", json.dumps(obj), h)
    r = c.getresponse()
    return r, r.read()


r, _ = post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-11-25"}})
sid = r.getheader("Mcp-Session-Id")
post({"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
print("| call | mcpd CPU a call, median (range) | answer |")
print("|---|---|---|")
for i, (name, args) in enumerate(calls):
    body = {"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call",
            "params": {"name": name, "arguments": args}}
    _, b = post(body, sid)  # the first call: statements prepared, pages mapped
    res = json.loads(b).get("result")
    if res is None or res.get("isError"):
        sys.exit(f"bench-tools: {name} {json.dumps(args)}: {b[:300]!r}")
    ms = []
    for _ in range(reps):
        n0 = cpu_ns()
        _, b = post(body, sid)
        ms.append((cpu_ns() - n0) / 1e6)
    print(f"| `{name} {json.dumps(args)}` | {statistics.median(ms):.2f} ms "
          f"({min(ms):.2f}–{max(ms):.2f}) | {len(b)} bytes |")
