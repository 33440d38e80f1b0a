#!/usr/bin/env python3
"""Write N attachment-sized documents for bench_extract: alternately a PDF and a
DOCX of 100-500 KB of text (tests/lib/mkattach.py's writers).

Usage: mkdocs.py DIR N"""
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mkattach  # noqa: E402

WORDS = ("contract invoice quarterly renewal signature payment delivery schedule terms party "
         "warranty liability clause annex budget forecast revenue supplier order").split()


def main():
    d, n = sys.argv[1], int(sys.argv[2])
    os.makedirs(d, exist_ok=True)
    rnd = random.Random(14)
    for i in range(n):
        target = rnd.randint(100, 500) * 1024
        if i % 2 == 0:
            # Uncompressed streams: a PDF's size is about its text.
            lines = [" ".join(rnd.choices(WORDS, k=12)).encode() for _ in range(target // 90)]
            pages = [lines[k:k + 50] for k in range(0, len(lines), 50)]
            data = mkattach.text_pdf(pages)
            name = "doc%04d.pdf" % i
        else:
            # DOCX deflates about 5x: write five times the text to reach the size.
            paras = [" ".join(rnd.choices(WORDS, k=40)) for _ in range(target * 5 // 280)]
            data = mkattach.docx(paras)
            name = "doc%04d.docx" % i
        open(os.path.join(d, name), "wb").write(data)


if __name__ == "__main__":
    main()
