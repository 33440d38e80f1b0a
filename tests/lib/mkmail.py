#!/usr/bin/env python3
"""Write N test messages as DIR/NNNNN.eml (LF line ends; the loader makes CRLF).

    mkmail.py DIR N [--prefix P] [--attach-every K] [--start S] [--body-kb KB]

Each message has a unique Message-ID <P-i@mkmail.test> and Subject "P message i";
every K-th one (K > 0) carries a base64 attachment whose bytes are unique to it.
Standard library only.
"""
import argparse
import base64
import os

ap = argparse.ArgumentParser()
ap.add_argument("dir")
ap.add_argument("n", type=int)
ap.add_argument("--prefix", default="m")
ap.add_argument("--attach-every", type=int, default=0)
ap.add_argument("--start", type=int, default=1)
ap.add_argument("--body-kb", type=int, default=0)
a = ap.parse_args()
os.makedirs(a.dir, exist_ok=True)
for i in range(a.start, a.start + a.n):
    hdr = ("From: Sender %d <sender%d@example.org>\nTo: alice@example.org\n"
           "Subject: %s message %d\nMessage-ID: <%s-%d@mkmail.test>\n"
           "Date: Mon, 1 Jan 2024 10:%02d:00 +0000\nMIME-Version: 1.0\n"
           % (i, i % 17, a.prefix, i, a.prefix, i, i % 60))
    body = "Hello, this is %s message number %d.\nThe quick brown fox.\n" % (a.prefix, i)
    body += ("Lorem ipsum dolor sit amet, consectetur adipiscing elit %d.\n" % i) * (a.body_kb * 16)
    if a.attach_every and i % a.attach_every == 0:
        data = ("attachment of %s message %d\n" % (a.prefix, i)).encode() * 20
        b64 = base64.encodebytes(data).decode()
        msg = (hdr + 'Content-Type: multipart/mixed; boundary="b%d"\n\n--b%d\n'
               "Content-Type: text/plain; charset=utf-8\n\n%s\n--b%d\n"
               'Content-Type: application/octet-stream; name="data%d.bin"\n'
               'Content-Disposition: attachment; filename="data%d.bin"\n'
               "Content-Transfer-Encoding: base64\n\n%s--b%d--\n"
               % (i, i, body, i, i, i, b64, i))
    else:
        msg = hdr + "Content-Type: text/plain; charset=utf-8\n\n" + body
    with open(os.path.join(a.dir, "%s%05d.eml" % (a.prefix, i)), "w") as f:
        f.write(msg)
