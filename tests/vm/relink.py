"""Makes the absolute symbolic links under ROOT/usr that point into ROOT relative, so that they
resolve inside the system root (systemd-udevd -> /bin/udevadm, modprobe -> /bin/kmod in the
unpacked packages). A link whose target exists on this machine, or does not exist under ROOT
either, is left alone. tests/vm/dracut.sh runs it on the scratch system root it gives dracut.

    python3 tests/vm/relink.py ROOT
"""

import os
import sys


def relink(root):
    for d, _, files in os.walk(os.path.join(root, "usr")):
        for f in files:
            p = os.path.join(d, f)
            t = os.readlink(p) if os.path.islink(p) else ""
            if t.startswith("/") and not os.path.exists(t) and os.path.lexists(root + t):
                os.unlink(p)
                os.symlink(os.path.relpath(root + t, d), p)


if __name__ == "__main__":
    relink(sys.argv[1])
