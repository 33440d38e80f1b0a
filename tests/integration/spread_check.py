#!/usr/bin/env python3
"""Whether mcpd spreads a burst of connections over its pool's threads.

    spread_check.py PID PORT SESSION N ROUNDS

Stops mcpd (SIGSTOP), opens N connections, so that they all wait to be
accepted at once, as a load tester's or a reverse proxy's pool opens them,
and resumes it; then sends ROUNDS search_messages requests on each
connection, one on each in turn, and reads every answer.  Prints how many
of mcpd's threads each ran at least a tenth of the time mcpd's threads ran
in all meanwhile (their schedstat run times, in ns), then each thread's
share.  Used by tests/integration/test_mcpd_limits.sh.
"""
import json, os, signal, socket, sys

pid, port, sid, n, rounds = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])

def run_times():
    t = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            t[task] = int(open(f"/proc/{pid}/task/{task}/schedstat").read().split()[0])
        except OSError:
            pass
    return t

def send(sock, i):
    body = json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
        "name": "search_messages", "arguments": {"query": "invoice OR budget OR meeting"}}}).encode()
    sock.sendall((f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                  "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                  f"Mcp-Session-Id: {sid}\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body)

def answer(sock, buf):
    while b"\r\n\r\n" not in buf:
        buf += sock.recv(65536) or sys.exit("mcpd closed a connection")
    head, rest = buf.split(b"\r\n\r\n", 1)
    if not head.startswith(b"HTTP/1.1 200"):
        sys.exit("mcpd answered " + head.split(b"\r\n")[0].decode())
    length = [int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0]
    while len(rest) < length:
        rest += sock.recv(65536) or sys.exit("mcpd closed a connection")
    return rest[length:]

os.kill(pid, signal.SIGSTOP)
try:
    socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
finally:
    os.kill(pid, signal.SIGCONT)
bufs = [b""] * n
before = run_times()
for r in range(rounds):
    for i, s in enumerate(socks):
        send(s, r * n + i + 10)
    for i, s in enumerate(socks):
        bufs[i] = answer(s, bufs[i])
after = run_times()
ran = sorted((after[t] - before.get(t, 0) for t in after), reverse=True)
total = sum(ran) or 1
print(sum(1 for d in ran if d * 10 >= total), " ".join(f"{d / total:.2f}" for d in ran))
