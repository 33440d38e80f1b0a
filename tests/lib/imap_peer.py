#!/usr/bin/env python3
"""A scripted IMAP peer for faults a real server will not produce on demand.

    imap_peer.py --mode MODE --port-file FILE [--pid-file FILE]

Listens on 127.0.0.1 (an ephemeral port, written to FILE once listening,
and printed), serves one connection at a time, and speaks just enough
IMAP4rev1 for the Mailbox interface: greeting, CAPABILITY, LOGIN, ENABLE,
LIST, EXAMINE, SELECT, STATUS, UID SEARCH, UID FETCH, NOOP, LOGOUT (and,
answered but not acted on, anything else, UID STORE included).  Its mailbox
has three messages, UIDs 1..3.  Deliberately plain: no CONDSTORE, no
UIDNEXT in the EXAMINE reply (so the client must ask STATUS), and
"UID SEARCH UID n:*" answers the highest UID even when it is below n, as
RFC 3501 says a server may.

Modes (what goes wrong):
  ok                 nothing
  auth_fail          LOGIN gets NO [AUTHENTICATIONFAILED]
  auth_fail_workers  the first LOGIN (the scheduler's) is accepted, every later
                     one gets NO [AUTHENTICATIONFAILED] (a password revoked
                     mid-tick)
  bye_mid_fetch      one message of the body FETCH, then BYE and close
  close_mid_literal  half of the first body literal, then close
  stall_mid_literal  half of the first body literal, then silence forever
  garbage            an unparsable FETCH response
  silent             accepts the connection, never sends a greeting
  stall_store        like ok (a backfill works) until a UID STORE, which is never
                     answered: the peer reads on until the client hangs up, then
                     greets no later connection (a write process stuck before
                     its session exists)
  keeps_expunged     like ok, without MOVE: UID COPY answers COPYUID, UID STORE and
                     UID EXPUNGE answer OK, and the message stays where it was
  store_refused      like keeps_expunged, but UID STORE gets NO
  echo_secret        like ok, but UID STORE gets NO with the password echoed in
                     plain, IMAP-quoted and base64 form (PEER_SECRET in the
                     environment), as a server quoting the LOGIN line would
  no_keywords        like ok, but SELECT answers a PERMANENTFLAGS without \* (the
                     system flags only): the folder keeps no custom keywords
  new_mail           like ok until the first body FETCH completes; then message
                     4 arrives.  As on Dovecot, a session sees it only after a
                     sync point: a later EXAMINE, or a NOOP (answered with
                     "* 4 EXISTS"); a UID FETCH before that does not return it
  idle               IDLE and CONDSTORE offered; ENABLE gets a bare OK (no
                     "* ENABLED", as iCloud answers); one second into the first
                     IDLE message 4 arrives and "* 4 EXISTS" is sent to the
                     idling session; DONE is answered
  idle_search_ahead  like idle, and message 5 arrives while the targeted sync
                     runs: after its EXAMINE (which saw 4), before its UID
                     SEARCH, whose reply brings "* 5 EXISTS" and lists 5 too
  idle_bad           IDLE offered, and answered with BAD
  idle_stall_done    IDLE offered and entered, but DONE is never answered
The idle modes serve connections in parallel (a watcher holds one while
the scheduler and the workers open others); the others serve one at a time.
Every line the client sends is appended to FILE.log next to --port-file
(the transcript), so a test can check what was sent.

Standard library only.
"""
import argparse
import base64
import os
import re
import socket
import sys
import threading
import time

MESSAGES = {
    uid: (b"From: peer@example.org\r\nSubject: peer message %d\r\n"
          b"Message-ID: <%d@peer.example>\r\n\r\nbody of message %d\r\n" % (uid, uid, uid))
    for uid in (1, 2, 3, 4, 5)
}
UIDVALIDITY = 42
# Per UID: FLAGS and the INTERNALDATE zone (the date is always 01-Jan-2024 10:00:00).
FLAGS = {
    1: (b"\\Seen", b"+0100"),
    2: (b"\\Answered $Forwarded \\Recent Junk", b"-0530"),
    3: (b"", b"+0000"),
    4: (b"", b"+0000"),
    5: (b"", b"+0000"),
}
# The mailbox's UIDs now (new_mail adds 4); each session sees a snapshot of it.
mailbox = [1, 2, 3]
IDLE_MODES = ("idle", "idle_search_ahead", "idle_bad", "idle_stall_done")
# LOGINs answered so far, over every connection (auth_fail_workers).
logins = [0]


class Conn:
    def __init__(self, sock, log):
        self.sock = sock
        self.buf = b""
        self.log = log

    def send(self, data):
        self.sock.sendall(data)

    def readline(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def read_exact(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def wait_hangup(self):
        """Read and drop whatever comes until the client closes."""
        while self.sock.recv(65536):
            pass

    def command(self):
        """One client command, synchronizing literals included."""
        line = self.readline()
        if line is None:
            return None
        while True:
            m = re.search(rb"\{(\d+)(\+?)\}$", line)
            if not m:
                break
            if not m.group(2):
                self.send(b"+ go ahead\r\n")
            lit = self.read_exact(int(m.group(1)))
            rest = self.readline()
            if lit is None or rest is None:
                return None
            line = line + b"<literal>" + rest
        self.log.write(line.decode("utf-8", "replace") + "\n")
        self.log.flush()
        return line


def uid_set(spec, uids):
    out = set()
    top = max(uids)
    for part in spec.split(","):
        if ":" in part:
            a, b = part.split(":")
            a = top if a == "*" else int(a)
            b = top if b == "*" else int(b)
            lo, hi = min(a, b), max(a, b)
            got = [u for u in uids if lo <= u <= hi]
            if not got and "*" in part:
                got = [top]  # n:* always includes the highest UID
            out.update(got)
        else:
            u = top if part == "*" else int(part)
            if u in uids:
                out.add(u)
    return sorted(out)


def fetch(conn, tag, args, mode, view):
    m = re.match(rb"(\S+) \((.*)\)$", args)
    uids = uid_set(m.group(1).decode(), view)
    items = m.group(2).upper()
    body = b"BODY.PEEK[" in items
    header_only = b"BODY.PEEK[HEADER]" in items
    if mode == "garbage" and body:
        conn.send(b"* 1 FETCH (UID 1 FLAGS (\\Seen)) )) this is not IMAP {{{\r\n")
        conn.send(tag + b" OK done\r\n")
        return True
    for i, uid in enumerate(uids):
        raw = MESSAGES[uid]
        part = raw.split(b"\r\n\r\n", 1)[0] + b"\r\n\r\n" if header_only else raw
        seq = uid
        if not body:
            # Only what was asked: a write's check fetches (UID FLAGS).
            att = b"UID %d" % uid
            if b"FLAGS" in items:
                att += b" FLAGS (%s)" % FLAGS[uid][0]
            if b"RFC822.SIZE" in items:
                att += b" RFC822.SIZE %d" % len(raw)
            conn.send(b"* %d FETCH (%s)\r\n" % (seq, att))
            continue
        flags, zone = FLAGS[uid]
        head = (b"* %d FETCH (UID %d FLAGS (%s) INTERNALDATE \"01-Jan-2024 10:00:00 %s\" "
                b"RFC822.SIZE %d BODY[%s] {%d}\r\n"
                % (seq, uid, flags, zone, len(raw), b"HEADER" if header_only else b"", len(part)))
        if mode in ("close_mid_literal", "stall_mid_literal"):
            conn.send(head + part[: len(part) // 2])
            if mode == "stall_mid_literal":
                while True:
                    time.sleep(3600)
            return False
        conn.send(head + part + b")\r\n")
        if mode == "bye_mid_fetch" and i == 0:
            conn.send(b"* BYE server shutting down\r\n")
            return False
    conn.send(tag + b" OK Fetch completed\r\n")
    if mode == "new_mail" and body and 4 not in mailbox:
        mailbox.append(4)
    return True


def serve(conn, mode):
    """One connection.  Returns the mode for the next ones, or None: the same."""
    if mode == "silent":
        while True:
            time.sleep(3600)
    conn.send(b"* OK [CAPABILITY IMAP4rev1 AUTH=PLAIN] imap_peer ready\r\n")
    view = list(mailbox)  # what this session has been told exists
    while True:
        line = conn.command()
        if line is None:
            return
        parts = line.split(b" ", 2)
        if len(parts) < 2:
            conn.send(b"* BAD no command\r\n")
            continue
        tag, cmd = parts[0], parts[1].upper()
        args = parts[2] if len(parts) > 2 else b""
        if cmd == b"UID":
            sub = args.split(b" ", 1)
            cmd, args = b"UID " + sub[0].upper(), sub[1] if len(sub) > 1 else b""
        if cmd == b"CAPABILITY":
            caps = b"IMAP4rev1 UIDPLUS AUTH=PLAIN"
            if mode in IDLE_MODES:
                caps += b" IDLE ENABLE CONDSTORE"
            conn.send(b"* CAPABILITY " + caps + b"\r\n" + tag + b" OK done\r\n")
        elif cmd == b"IDLE" and mode in IDLE_MODES:
            if mode == "idle_bad":
                conn.send(tag + b" BAD IDLE not supported here\r\n")
                continue
            conn.send(b"+ idling\r\n")
            if mode in ("idle", "idle_search_ahead") and 4 not in mailbox:
                def arrive():
                    mailbox.append(4)
                    conn.send(b"* %d EXISTS\r\n" % len(mailbox))
                threading.Timer(1.0, arrive).start()
            done = conn.readline()
            if done is None:
                return
            conn.log.write(done.decode("utf-8", "replace") + "\n")
            conn.log.flush()
            if mode == "idle_stall_done":
                conn.wait_hangup()
                return
            view = list(mailbox)
            conn.send(tag + b" OK Idle completed\r\n")
        elif cmd == b"LOGIN":
            if mode == "auth_fail" or (mode == "auth_fail_workers" and logins[0] > 0):
                conn.send(tag + b" NO [AUTHENTICATIONFAILED] Invalid credentials (peer)\r\n")
            else:
                conn.send(tag + b" OK LOGIN completed\r\n")
            logins[0] += 1
        elif cmd == b"LIST":
            conn.send(b'* LIST (\\HasNoChildren) "/" INBOX\r\n'
                      b'* LIST (\\Noselect \\HasChildren) "/" Parent\r\n'
                      b'* LIST (\\HasNoChildren \\sent) "/" Parent/Gesendet\r\n'
                      b'* LIST (\\NonExistent) "/" Gone\r\n'
                      + tag + b" OK List completed\r\n")
        elif cmd in (b"EXAMINE", b"SELECT"):
            view = list(mailbox)
            perm = (b"* OK [PERMANENTFLAGS (\\Answered \\Flagged \\Deleted \\Seen \\Draft)] "
                    b"Limited\r\n" if mode == "no_keywords" and cmd == b"SELECT" else b"")
            conn.send(b"* FLAGS (\\Answered \\Flagged \\Deleted \\Seen \\Draft)\r\n"
                      + perm + b"* %d EXISTS\r\n* 0 RECENT\r\n" % len(view)
                      + b"* OK [UIDVALIDITY %d] UIDs valid\r\n" % UIDVALIDITY
                      + tag + (b" OK [READ-ONLY] Examine completed\r\n" if cmd == b"EXAMINE"
                               else b" OK [READ-WRITE] Select completed\r\n"))
        elif cmd == b"STATUS":
            conn.send(b"* STATUS INBOX (UIDNEXT %d)\r\n" % (max(mailbox) + 1)
                      + tag + b" OK done\r\n")
        elif cmd == b"UID SEARCH":
            if mode == "idle_search_ahead" and 4 in view and 5 not in mailbox:
                mailbox.append(5)
                view = list(mailbox)
                conn.send(b"* %d EXISTS\r\n" % len(view))
            m = re.match(rb"UID (\S+)$", args)
            uids = uid_set(m.group(1).decode(), view) if m else []
            conn.send(b"* SEARCH" + b"".join(b" %d" % u for u in uids) + b"\r\n"
                      + tag + b" OK Search completed\r\n")
        elif cmd == b"UID FETCH":
            if not fetch(conn, tag, args, mode, view):
                return
        elif cmd == b"NOOP":
            if view != mailbox:
                view = list(mailbox)
                conn.send(b"* %d EXISTS\r\n" % len(view))
            conn.send(tag + b" OK NOOP completed\r\n")
        elif cmd == b"UID COPY" and mode in ("keeps_expunged", "store_refused"):
            m = re.match(rb"(\d+) ", args)
            uid = int(m.group(1)) if m else 1
            conn.send(tag + b" OK [COPYUID %d %d %d] Copy completed\r\n"
                      % (UIDVALIDITY, uid, uid + 100))
        elif cmd == b"UID STORE" and mode == "store_refused":
            conn.send(tag + b" NO [SERVERBUG] cannot store flags now\r\n")
        elif cmd == b"UID STORE" and mode == "echo_secret":
            pw = os.environ.get("PEER_SECRET", "").encode()
            quoted = b'"' + pw.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'
            conn.send(tag + b" NO [SERVERBUG] you said LOGIN alice %s; plain %s; AUTH %s\r\n"
                      % (quoted, pw, base64.b64encode(pw)))
        elif cmd == b"UID STORE" and mode == "stall_store":
            conn.wait_hangup()
            return "silent"
        elif cmd == b"LOGOUT":
            conn.send(b"* BYE bye\r\n" + tag + b" OK Logout completed\r\n")
            return
        else:
            conn.send(tag + b" OK done\r\n")


def serve_closing(s, log, mode):
    try:
        serve(Conn(s, log), mode)
    except (BrokenPipeError, ConnectionResetError, OSError):
        pass
    finally:
        s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="ok", choices=[
        "ok", "auth_fail", "auth_fail_workers", "bye_mid_fetch", "close_mid_literal",
        "stall_mid_literal", "garbage", "silent", "stall_store", "new_mail", "keeps_expunged",
        "store_refused", "echo_secret", "no_keywords"] + list(IDLE_MODES))
    ap.add_argument("--port-file", required=True)
    a = ap.parse_args()
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    port = srv.getsockname()[1]
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % port)
    os.rename(tmp, a.port_file)  # appears whole, only once listening
    print(port, flush=True)
    mode = a.mode
    with open(a.port_file + ".log", "a") as log:
        while mode in IDLE_MODES:
            s, _ = srv.accept()
            threading.Thread(target=serve_closing, args=(s, log, mode), daemon=True).start()
        while True:
            s, _ = srv.accept()
            try:
                mode = serve(Conn(s, log), mode) or mode
            except (BrokenPipeError, ConnectionResetError):
                pass
            finally:
                s.close()


if __name__ == "__main__":
    sys.exit(main())
