#!/usr/bin/env python3
"""A minimal MCP client over Streamable HTTP for the shell tests: one session,
then each further argument is a JSON-RPC request ("method" and "params" as a
JSON object); prints one JSON result (or {"error": ...}) per line.

Usage: mcp_http.py URL '{"method":"tools/call","params":{...}}' ...
"""
import json
import sys
import urllib.request


def post(url, body, sid=None):
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
         "MCP-Protocol-Version": "2025-06-18"}
    if sid:
        h["Mcp-Session-Id"] = sid
    req = urllib.request.Request(url, json.dumps(body).encode(), h)
    with urllib.request.urlopen(req, timeout=30) as r:
        data = r.read().decode()
        sid = r.headers.get("Mcp-Session-Id", sid)
        if r.headers.get("Content-Type", "").startswith("text/event-stream"):
            data = [ln[5:] for ln in data.splitlines() if ln.startswith("data:")][-1]
        return (json.loads(data) if data.strip() else None), sid


def main():
    url = sys.argv[1]
    r, sid = post(url, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "mcp_http.py", "version": "1"}}})
    post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    for i, arg in enumerate(sys.argv[2:], 1):
        req = json.loads(arg)
        r, _ = post(url, {"jsonrpc": "2.0", "id": i, "method": req["method"],
                          "params": req.get("params", {})}, sid)
        print(json.dumps(r.get("result", {"error": r.get("error")}), ensure_ascii=False))


if __name__ == "__main__":
    main()
