"""Prints the entries of an OBS .changes file as an RPM %changelog, as OBS does when it builds.

    python3 packaging/changes2spec.py packaging/mdtune.changes >> mdtune.spec

A .changes file is a list of entries, newest first, each a line of dashes, a line
"Www Mmm DD HH:MM:SS UTC YYYY - Name <email>", a blank line and the text. The spec's own
%changelog stays empty (packaging/build.sh appends this output to a copy).
"""

import re
import sys

HEAD = re.compile(r"^(\w{3}) (\w{3}) +(\d{1,2}) [\d:]{8} \w+ (\d{4}) - (.+)$")


def entries(text):
    """(rpm date, packager, body lines) of each entry, in the file's order."""
    blocks = [b for b in re.split(r"^-{20,}$", text, flags=re.M) if b.strip()]
    for block in blocks:
        lines = block.strip("\n").splitlines()
        match = HEAD.match(lines[0])
        if not match:
            raise SystemExit("changes2spec: not an entry head: %r" % lines[0])
        wday, month, day, year, who = match.groups()
        body = [line for line in lines[1:] if line.strip()]
        if not body:
            raise SystemExit("changes2spec: the entry of %s has no text" % lines[0])
        yield "%s %s %02d %s" % (wday, month, int(day), year), who, body


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    with open(sys.argv[1], encoding="utf-8") as f:
        text = f.read()
    out = []
    for date, who, body in entries(text):
        out.append("* %s %s" % (date, who))
        out.extend(body)
        out.append("")
    if not out:
        raise SystemExit("changes2spec: no entry in %s" % sys.argv[1])
    sys.stdout.write("\n".join(out))


if __name__ == "__main__":
    main()
