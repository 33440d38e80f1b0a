#!/usr/bin/env python3
"""Write the attachment fixtures the extraction tests read (docs/attachments.md).

Usage: mkattach.py DIR.  Every file is made here, from nothing: PDFs written
by hand (plain and FlateDecode streams, several pages, accents through
WinAnsiEncoding, CJK through a ToUnicode CMap), a password-protected PDF
(qpdf), a truncated one, DOCX/XLSX/PPTX/ODT/ODS as zip files of XML, a zip
bomb, a document nested too deep, an invitation and a CSV in windows-1252.
"""
import io
import os
import subprocess
import sys
import zipfile
import zlib


def pdf(objs):
    """A PDF from object bodies (1-based), with a correct xref table."""
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offs = []
    for i, body in enumerate(objs, 1):
        offs.append(out.tell())
        out.write(b"%d 0 obj\n" % i + body + b"\nendobj\n")
    x = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1))
    for o in offs:
        out.write(b"%010d 00000 n \n" % o)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n"
              % (len(objs) + 1, x))
    return out.getvalue()


def stream(data, flate=False):
    if flate:
        data = zlib.compress(data)
        return b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(data) + data + \
            b"\nendstream"
    return b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream"


def text_pdf(pages, flate=False):
    """pages: lists of lines (bytes in WinAnsiEncoding)."""
    n = len(pages)
    kids = b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(n))
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % n,
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica "
            b"/Encoding /WinAnsiEncoding >>"]
    for i, lines in enumerate(pages):
        ops = b"BT /F1 12 Tf 72 720 Td 14 TL "
        for ln in lines:
            esc = ln.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")
            ops += b"(" + esc + b") Tj T* "
        ops += b"ET"
        objs.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                    b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (5 + 2 * i))
        objs.append(stream(ops, flate))
    return pdf(objs)


def cjk_pdf(text):
    """One page showing text (any Unicode) through a ToUnicode CMap."""
    cps = list(dict.fromkeys(text))
    code = {c: i + 1 for i, c in enumerate(cps)}
    cmap = (b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap "
            b"/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def "
            b"/CMapName /Adobe-Identity-UCS def /CMapType 2 def "
            b"1 begincodespacerange <0000> <FFFF> endcodespacerange\n")
    cmap += b"%d beginbfchar\n" % len(cps)
    for c in cps:
        cmap += b"<%04X> <%04X>\n" % (code[c], ord(c))
    cmap += b"endbfchar endcmap CMapName currentdict /CMap defineresource pop end end"
    shown = b"".join(b"%04X" % code[c] for c in text)
    ops = b"BT /F1 12 Tf 72 720 Td <" + shown + b"> Tj ET"
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
            b"<< /Type /Font /Subtype /Type0 /BaseFont /MbCjk /Encoding /Identity-H "
            b"/DescendantFonts [6 0 R] /ToUnicode 7 0 R >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>",
            stream(ops),
            b"<< /Type /Font /Subtype /CIDFontType2 /BaseFont /MbCjk /CIDSystemInfo "
            b"<< /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /DW 1000 >>",
            stream(cmap)]
    return pdf(objs)


def zipped(entries, compression=zipfile.ZIP_DEFLATED):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression) as z:
        for name, data in entries:
            z.writestr(name, data)
    return out.getvalue()


W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def docx(paragraphs):
    body = "".join("<w:p><w:r><w:t>%s</w:t></w:r></w:p>" % p for p in paragraphs)
    return zipped([("[Content_Types].xml", "<Types/>"),
                   ("word/document.xml", "<w:document %s><w:body>%s</w:body></w:document>"
                    % (W, body))])


def xlsx(sheets):
    """sheets: [(name, [[cell, ...], ...])]; strings go through sharedStrings."""
    strings, index = [], {}
    ns = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
    files = [("[Content_Types].xml", "<Types/>")]
    wb = "".join('<sheet name="%s" sheetId="%d"/>' % (n, i + 1) for i, (n, _) in
                 enumerate(sheets))
    files.append(("xl/workbook.xml", "<workbook %s><sheets>%s</sheets></workbook>" % (ns, wb)))
    for i, (_, rows) in enumerate(sheets):
        xr = ""
        for row in rows:
            cells = ""
            for v in row:
                if isinstance(v, str):
                    if v not in index:
                        index[v] = len(strings)
                        strings.append(v)
                    cells += '<c t="s"><v>%d</v></c>' % index[v]
                else:
                    cells += "<c><v>%s</v></c>" % v
            xr += "<row>%s</row>" % cells
        files.append(("xl/worksheets/sheet%d.xml" % (i + 1),
                      "<worksheet %s><sheetData>%s</sheetData></worksheet>" % (ns, xr)))
    files.append(("xl/sharedStrings.xml", "<sst %s>%s</sst>" % (ns, "".join(
        "<si><t>%s</t></si>" % s for s in strings))))
    return zipped(files)


def odt(paragraphs):
    ns = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
          'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"')
    body = "".join("<text:p>%s</text:p>" % p for p in paragraphs)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.text")
        z.writestr("content.xml", "<office:document-content %s><office:body><office:text>%s"
                   "</office:text></office:body></office:document-content>" % (ns, body),
                   zipfile.ZIP_DEFLATED)
        z.writestr("META-INF/manifest.xml", "<manifest/>")
    return out.getvalue()


def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)

    def put(name, data):
        with open(os.path.join(d, name), "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())

    put("plain.pdf", text_pdf([[b"Quarterly contract renewal", b"signed by Zebulon"]]))
    put("flate.pdf", text_pdf([[b"Compressed stream holds the word xylophone"]], flate=True))
    put("pages.pdf", text_pdf([[b"first page alpha"], [b"second page bravo"],
                               [b"third page charlie"]], flate=True))
    put("accents.pdf", text_pdf([["Café déjà vu naïve façade".encode("cp1252")]]))
    put("cjk.pdf", cjk_pdf("日本語の契約書"))
    put("truncated.pdf", text_pdf([[b"never seen"]], flate=True)[:150])
    subprocess.run(["qpdf", "--encrypt", "user-pw", "owner-pw", "256", "--",
                    os.path.join(d, "plain.pdf"), os.path.join(d, "encrypted.pdf")], check=True)
    put("report.docx", docx(["Board minutes for the walrus project", "Budget approved"]))
    put("book.xlsx", xlsx([("Invoices", [["Customer", "Amount"], ["Quokka Ltd", 1200]]),
                           ("Summary", [["Total", 1200], ["Status", "paid"]])]))
    put("notes.odt", odt(["OpenDocument notes about the narwhal", "Second paragraph"]))
    # A zip bomb: 200 MiB of zeros that deflate to a few hundred KiB.
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        with z.open("word/document.xml", "w") as f:
            chunk = b"\0" * (1 << 20)
            for _ in range(200):
                f.write(chunk)
    put("bomb.docx", bomb.getvalue())
    deep = "<w:document %s>" % W + "<w:p>" * 5000 + "deep" + "</w:p>" * 5000 + "</w:document>"
    put("deep.docx", zipped([("word/document.xml", deep)]))
    # A zip nested inside the document: never opened (one level only).
    put("nested.docx", zipped([("word/document.xml", "<w:document %s><w:body><w:p><w:r>"
                                "<w:t>outer text</w:t></w:r></w:p></w:body></w:document>" % W),
                               ("word/embeddings/inner.docx", docx(["inner secret"]))]))
    put("invite.ics", "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nMETHOD:REQUEST\r\nBEGIN:VEVENT\r\n"
        "SUMMARY:Design review\\, round two\r\nORGANIZER;CN=\"Ada Lovelace\":mailto:ada@example.org"
        "\r\nATTENDEE;CN=Bob Builder;RSVP=TRUE:mailto:bob@example.org\r\nATTENDEE:mailto:"
        "carol@example.org\r\nDTSTART;TZID=Europe/Berlin:20261203T100000\r\n"
        "DTEND;TZID=Europe/Berlin:20261203T113000\r\nLOCATION:Room 4\r\nDESCRIPTION:Bring the "
        "plans\\nand the sketch\r\n es.\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")
    put("legacy.csv", "name;city\r\nJürgen;Köln\r\nFrançois;Besançon\r\n".encode("cp1252"))


if __name__ == "__main__":
    main()
