#!/usr/bin/env python3
"""Write corpus clones straight into Dovecot Maildirs, for the benchmarks.

    bench-maildir.py CORPUS LO HI UID GID ATTACH EVERY PATH...

Messages LO..HI-1 of the SpamAssassin corpus (CORPUS: its data directory),
cloned in order, each with a fresh Message-ID first (bench-I@bench.imap-mcp):
CRLF line ends, exact S=/W= sizes in the file name and strictly increasing
fake times, so that Dovecot gives UIDs in this order.  Message i goes to
PATH[i % len(PATH)] (each a Maildir, created with cur/new/tmp owned by
UID:GID), after what is there.  ATTACH (or '') is a directory of documents
(tests/bench/mkdocs.py): every EVERY-th message then becomes
multipart/mixed, its corpus body first and the next document attached in
base64.  Used by scripts/bench-syncd and scripts/bench-push.
"""
import base64, glob, os, re, sys
corpus, lo, hi, uid, gid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
attach, every = sys.argv[6], int(sys.argv[7])
paths = sys.argv[8:]
docs = sorted(glob.glob(os.path.join(attach, "*"))) if attach else []
ctypes = {".pdf": "application/pdf",
          ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document"}
base = []
for p in sorted(glob.glob(os.path.join(corpus, "*", "*.txt"))):
    data = open(p, "rb").read()
    if data.startswith(b"From "):
        data = data[data.find(b"\n") + 1:]
    data = re.sub(rb"\r*\n", b"\r\n", data)
    end = data.find(b"\r\n\r\n")
    head, body = (data[:end + 2], data[end + 2:]) if end >= 0 else (data, b"")
    # Drop Message-ID (and its continuation lines); a fresh one is put first.
    out, skip = [], False
    for line in head.split(b"\r\n"):
        if line[:1] not in (b" ", b"\t"):
            skip = line.lower().startswith(b"message-id:")
        if not skip:
            out.append(line)
    base.append((b"\r\n".join(out), body))

def with_doc(head, body, doc):
    # The corpus message's own MIME headers go down into its first part.
    top, part, cur = [], [], None
    for line in head.split(b"\r\n"):
        if line[:1] not in (b" ", b"\t"):
            l = line.lower()
            cur = part if l.startswith((b"content-", b"mime-version:")) else top
        cur.append(line)
    part = [l for l in part if not l.lower().startswith(b"mime-version:")]
    name = os.path.basename(doc).encode()
    data = open(doc, "rb").read()
    b64 = base64.encodebytes(data).replace(b"\n", b"\r\n")
    sep = b"bench-attach-boundary"
    top = [l for l in top if l]
    return (b"\r\n".join(top) + b"\r\nMIME-Version: 1.0\r\n"
            b"Content-Type: multipart/mixed; boundary=\"" + sep + b"\"\r\n\r\n"
            b"--" + sep + b"\r\n" + b"\r\n".join(part) + b"\r\n\r\n" + body + b"\r\n"
            b"--" + sep + b"\r\nContent-Type: " + ctypes.get(os.path.splitext(doc)[1], "application/octet-stream").encode() +
            b"; name=\"" + name + b"\"\r\nContent-Disposition: attachment; filename=\"" + name +
            b"\"\r\nContent-Transfer-Encoding: base64\r\n\r\n" + b64 + b"--" + sep + b"--\r\n")

for p in paths:
    for sub in ("cur", "new", "tmp"):
        os.makedirs(os.path.join(p, sub), exist_ok=True)
        os.chown(os.path.join(p, sub), uid, gid)
for i in range(lo, hi):
    head, body = base[i % len(base)]
    if docs and i % every == 0:
        data = b"Message-ID: <bench-%d@bench.imap-mcp>\r\n" % i + with_doc(head, body, docs[(i // every) % len(docs)])
    else:
        data = b"Message-ID: <bench-%d@bench.imap-mcp>\r\n" % i + head + body
    p = paths[i % len(paths)]
    name = "%d.M%dP%d.bench,S=%d,W=%d:2," % (1500000000 + i, i, os.getpid(), len(data), len(data))
    tmp = os.path.join(p, "tmp", name)
    with open(tmp, "wb") as out:
        out.write(data)
    os.chown(tmp, uid, gid)
    os.rename(tmp, os.path.join(p, "cur", name))
