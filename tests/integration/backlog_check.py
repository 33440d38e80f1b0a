#!/usr/bin/env python3
"""Whether connections past mcpd's connection limit wait for a place.

    backlog_check.py PORT HELD
    backlog_check.py --burst PID PORT N
    backlog_check.py --cycle PORT HELD N

The first form opens HELD connections to mcpd (its MCP_MAX_CONNECTIONS) and
holds them, then asks /healthz on one more, and a second later closes one of
those held.  It prints the HTTP status of /healthz (000 when the connection
was refused or cut) and the seconds it took.

The second stops mcpd (SIGSTOP), opens N connections (more than the limit),
each with a /healthz request that asks the server to close it once answered,
and resumes mcpd, so that all of them wait to be accepted at once.  It
prints how many were answered 200, then N.

The third holds HELD connections, then N times: asks /healthz (closing once
answered) on one more, closes one of those held as soon as that one waits,
reads the answer, and holds another in the place of the one it closed.  It
prints how many were answered 200, then N: a place freed is taken by the
next in the backlog every time, however soon it is looked at.

Either way a connection past the limit waits in the listening socket's
backlog until a place frees, as libmicrohttpd's own accept left it, rather
than being accepted and closed unanswered.  Used by
tests/integration/test_mcpd_limits.sh.
"""
import os, signal, socket, subprocess, sys, time


def held_then_one_more(port, held_n):
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(held_n)]
    time.sleep(0.3)	# every held connection taken in
    t0 = time.time()
    curl = subprocess.Popen(["curl", "-s", "-m", "5", "-o", "/dev/null", "-w", "%{http_code}",
                             f"http://127.0.0.1:{port}/healthz"], stdout=subprocess.PIPE)
    time.sleep(1.0)
    held[0].close()
    status = curl.communicate()[0].decode() or "000"
    print(status, f"{time.time() - t0:.2f}")


def healthz(port):
    return (f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Connection: close\r\n\r\n").encode()


def answered_200(s):
    """Whether the answer on s starts with a 200 (it waits up to 10 s)."""
    s.settimeout(10)
    head = b""
    try:
        while b"\r\n" not in head:
            chunk = s.recv(4096)
            if not chunk:
                break
            head += chunk
    except OSError:
        pass
    s.close()
    return head.startswith(b"HTTP/1.1 200")


def burst(pid, port, n):
    request = healthz(port)
    os.kill(pid, signal.SIGSTOP)
    try:
        socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
        for s in socks:
            s.sendall(request)
    finally:
        os.kill(pid, signal.SIGCONT)
    print(sum(answered_200(s) for s in socks), n)


def cycle(port, held_n, n):
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(held_n)]
    time.sleep(0.3)
    answered = 0
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(healthz(port))
        time.sleep(0.005)	# in the backlog, the limit reached
        held.pop(0).close()
        answered += answered_200(s)
        held.append(socket.create_connection(("127.0.0.1", port)))
    print(answered, n)


if sys.argv[1] == "--burst":
    burst(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
elif sys.argv[1] == "--cycle":
    cycle(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
else:
    held_then_one_more(int(sys.argv[1]), int(sys.argv[2]))
