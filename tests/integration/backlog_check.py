#!/usr/bin/env python3
"""Whether a connection past mcpd's connection limit waits for a place.

    backlog_check.py PORT HELD

Opens HELD connections to mcpd (its MCP_MAX_CONNECTIONS) and holds them,
then asks /healthz on one more, and a second later closes one of those held.
Prints the HTTP status of /healthz (000 when the connection was refused or
cut) and the seconds it took: a connection past the limit waits in the
listening socket's backlog until a place frees, as libmicrohttpd's own
accept left it, rather than being accepted and closed at once.  Used by
tests/integration/test_mcpd_limits.sh.
"""
import socket, subprocess, sys, time

port, held_n = int(sys.argv[1]), int(sys.argv[2])
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(held_n)]
time.sleep(0.3)	# every held connection taken in
t0 = time.time()
curl = subprocess.Popen(["curl", "-s", "-m", "5", "-o", "/dev/null", "-w", "%{http_code}",
                         f"http://127.0.0.1:{port}/healthz"], stdout=subprocess.PIPE)
time.sleep(1.0)
held[0].close()
status = curl.communicate()[0].decode() or "000"
print(status, f"{time.time() - t0:.2f}")
