#!/usr/bin/env python3
"""Turns packaging/mdtune.8.md into the roff man page mdtune(8).

Usage: man.py SOURCE.md VERSION DATE DOCDIR [DOCSUFFIX] > mdtune.8

DOCDIR is where the package puts README.md and reference.md (the spec: %{_defaultdocdir}/%{name},
/usr/share/doc/packages/mdtune on SUSE; Debian: /usr/share/doc/mdtune), DOCSUFFIX what the
package's build appends to them (Debian's dh_compress: .gz); they replace @DOCDIR@ and
@DOCSUFFIX@ in the source, so the man page names the files exactly where its package has them.

The source is a small Markdown subset, enough for a man page and nothing more:
  % comment lines and <!-- markers --> are dropped;
  "# TITLE" starts a section (.SH);
  a fenced ``` block is printed verbatim, indented (.nf/.fi);
  "TERM" followed by ":   DEFINITION" (and lines indented by 4) is a tagged paragraph (.TP);
  other lines are paragraphs, with **bold**, *italic* and `code` (bold) inline.
Anything else, such as a table or a list, is refused so that it cannot render wrongly.
"""
import re
import sys


def escape(text, code=False):
    """Roff-escapes plain text; in code every '-' is a real minus (options, paths)."""
    text = text.replace("\\", "\\e")
    if code:
        text = text.replace("-", "\\-")
    return text


def inline(text):
    out, pos = [], 0
    pattern = re.compile(r"\*\*(.+?)\*\*|\*(.+?)\*|`(.+?)`")
    for m in pattern.finditer(text):
        out.append(escape(text[pos:m.start()]))
        bold, italic, code = m.groups()
        if italic is not None:
            out.append("\\fI" + escape(italic, code=True) + "\\fR")
        else:
            out.append("\\fB" + escape(bold if bold is not None else code, code=True) + "\\fR")
        pos = m.end()
    out.append(escape(text[pos:]))
    return "".join(out)


def line_safe(roff):
    """A roff text line may not start with '.' or an apostrophe."""
    return "\\&" + roff if roff[:1] in (".", "'") else roff


def convert(lines, version, date):
    out = [f'.TH MDTUNE 8 "{date}" "mdtune {version}" "System Administration"']
    i, n = 0, len(lines)
    para = []

    def paragraph():
        # A paragraph macro right after a section heading is redundant (mandoc warns).
        if not out[-1].startswith(".SH "):
            out.append(".PP")

    def flush():
        if para:
            paragraph()
            out.append(line_safe(inline(" ".join(para))))
            para.clear()

    while i < n:
        line = lines[i].rstrip("\n")
        if line.startswith("% ") or line == "%" or re.fullmatch(r"<!--.*-->", line.strip()):
            i += 1
            continue
        if line.startswith("# "):
            flush()
            out.append(".SH " + line[2:].strip().upper())
            i += 1
            continue
        if line.startswith("```"):
            flush()
            paragraph()
            out += [".RS 4", ".nf"]
            i += 1
            while i < n and not lines[i].startswith("```"):
                out.append(line_safe(escape(lines[i].rstrip("\n"), code=True)))
                i += 1
            if i == n:
                sys.exit("man.py: a ``` block is not closed")
            out += [".fi", ".RE"]
            i += 1
            continue
        if not line.strip():
            flush()
            i += 1
            continue
        if i + 1 < n and lines[i + 1].startswith(":   "):
            flush()
            out += [".TP", line_safe(inline(line.strip()))]
            body = [lines[i + 1][4:].strip()]
            i += 2
            while i < n and lines[i].startswith("    "):
                body.append(lines[i].strip())
                i += 1
            out.append(line_safe(inline(" ".join(body))))
            continue
        if re.match(r"^\s*([-*+]|\d+\.)\s|^\s*\|", line):
            sys.exit(f"man.py: line {i + 1}: lists and tables are not supported: {line!r}")
        para.append(line.strip())
        i += 1
    flush()
    # The NAME line's separator is a real dash in every man page.
    for k, roff in enumerate(out):
        if roff.startswith("mdtune - "):
            out[k] = "mdtune \\- " + roff[len("mdtune - "):]
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit("usage: man.py SOURCE.md VERSION DATE DOCDIR [DOCSUFFIX] > mdtune.8")
    docdir = sys.argv[4].rstrip("/")
    suffix = sys.argv[5] if len(sys.argv) == 6 else ""
    if not docdir.startswith("/"):
        sys.exit(f"man.py: DOCDIR must be an absolute path, got {docdir!r}")
    with open(sys.argv[1], encoding="utf-8") as f:
        lines = [
            line.replace("@DOCDIR@", docdir).replace("@DOCSUFFIX@", suffix)
            for line in f.readlines()
        ]
    sys.stdout.write(convert(lines, sys.argv[2], sys.argv[3]))


if __name__ == "__main__":
    main()
