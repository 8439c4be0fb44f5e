"""Turns one vendored crate directory into a stub: its Cargo.toml, an empty src/lib.rs and a
.cargo-checksum.json that lists no files (the package checksum kept). build.sh runs it on each
crate of the vendor tarball that no Linux build uses (the Windows ones): cargo still resolves
Cargo.lock with them, and the tarball does not carry their code.

    python3 packaging/vendor_stub.py VENDOR/CRATE
"""

import json
import os
import shutil
import sys


def stub(d):
    package = json.load(open(os.path.join(d, ".cargo-checksum.json")))["package"]
    for entry in os.listdir(d):
        if entry != "Cargo.toml":
            path = os.path.join(d, entry)
            if os.path.isdir(path):
                shutil.rmtree(path)
            else:
                os.remove(path)
    os.makedirs(os.path.join(d, "src"))
    open(os.path.join(d, "src", "lib.rs"), "w").close()
    json.dump({"files": {}, "package": package}, open(os.path.join(d, ".cargo-checksum.json"), "w"))


if __name__ == "__main__":
    stub(sys.argv[1])
