#!/usr/bin/env python3
"""Write test messages as DIR/<prefix>NNNNN.eml (LF line ends; the loader makes CRLF).

    mkmail.py SPEC...	SPEC is DIR:N:PREFIX[:ATTACH_EVERY[:BODY_KB]]

Message i (1..N) of a spec has Message-ID <PREFIX-i@mkmail.test> and Subject
"PREFIX message i"; every ATTACH_EVERY-th one carries a base64 attachment whose
bytes are ("attachment of PREFIX message i\\n" * 20); BODY_KB pads the body.
One process for every spec: Python's start-up is the slow part of a test.
Standard library only.
"""
import base64
import os
import sys

for spec in sys.argv[1:]:
    parts = spec.split(":")
    d, n, prefix = parts[0], int(parts[1]), parts[2]
    every = int(parts[3]) if len(parts) > 3 else 0
    body_kb = int(parts[4]) if len(parts) > 4 else 0
    os.makedirs(d, exist_ok=True)
    for i in range(1, n + 1):
        hdr = ("From: Sender %d <sender%d@example.org>\nTo: alice@example.org\n"
               "Subject: %s message %d\nMessage-ID: <%s-%d@mkmail.test>\n"
               "Date: Mon, 1 Jan 2024 10:%02d:00 +0000\nMIME-Version: 1.0\n"
               % (i, i % 17, prefix, i, prefix, i, i % 60))
        body = "Hello, this is %s message number %d.\nThe quick brown fox.\n" % (prefix, i)
        body += ("Lorem ipsum dolor sit amet, consectetur adipiscing elit %d.\n" % i) * (body_kb * 16)
        if every and i % every == 0:
            data = ("attachment of %s message %d\n" % (prefix, i)).encode() * 20
            b64 = base64.encodebytes(data).decode()
            msg = (hdr + 'Content-Type: multipart/mixed; boundary="b%d"\n\n--b%d\n'
                   "Content-Type: text/plain; charset=utf-8\n\n%s\n--b%d\n"
                   'Content-Type: application/octet-stream; name="data%d.bin"\n'
                   'Content-Disposition: attachment; filename="data%d.bin"\n'
                   "Content-Transfer-Encoding: base64\n\n%s--b%d--\n"
                   % (i, i, body, i, i, i, b64, i))
        else:
            msg = hdr + "Content-Type: text/plain; charset=utf-8\n\n" + body
        with open(os.path.join(d, "%s%05d.eml" % (prefix, i)), "w") as f:
            f.write(msg)
