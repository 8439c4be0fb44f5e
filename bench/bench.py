#!/usr/bin/env python3
"""mdtune benchmarks: scaling, Ansible and Salt side by side, system calls.

Run through bench/run.sh, which builds the binaries and passes their paths. Everything runs in
one temporary directory (fake roots made by `examples/mkroot.rs` with the tests' fake-root builder,
tests/fakeroot; Ansible and Salt config and caches); nothing outside it is written except the
results file.

Every comparison is measured side by side: each round runs every contender once, in turn, on
the same converged fake root, and the tables report the median over the rounds, the spread
(min-max) and ratios of medians. No single timing is ever reported.

Standard library only; Ansible and Salt are run from the venv given by --venv.

This file is the entry point: the options, the scratch directory and the results file. The
sections live in bench_direct.py (1. scaling, 4. system calls, 5. the floor of reading sysfs) and
bench_modules.py (2. Ansible, 3. Salt); what they share (timing, side-by-side rounds, fake roots)
in benchlib.py.
"""

import argparse
import os
import shutil
import tempfile
import time

from bench_direct import bench_floor, bench_scaling, bench_syscalls
from bench_modules import bench_ansible, bench_salt
from benchlib import build_floor, log


def scratch_dir():
    """Where the fake roots go: tmpfs (/dev/shm) when it has room, like sysfs kept in memory.

    The 256-array host is about 400,000 small files (1.6 GB on tmpfs, one page each); on a disk
    file system creating and deleting them takes minutes and measures the disk, not mdtune.
    MDTUNE_BENCH_TMP overrides the choice.
    """
    if os.environ.get("MDTUNE_BENCH_TMP"):
        return os.environ["MDTUNE_BENCH_TMP"]
    try:
        st = os.statvfs("/dev/shm")
        if os.access("/dev/shm", os.W_OK) and st.f_bavail * st.f_frsize > 4 << 30:
            return "/dev/shm"
    except OSError:
        pass
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", action="append", required=True, metavar="[LABEL=]PATH",
                    help="mdtune binary; repeat to compare builds in the scaling table (the first is used elsewhere)")
    ap.add_argument("--mkroot", required=True, help="the mkroot example binary")
    ap.add_argument("--venv", default=os.environ.get("MDTUNE_VENV", ""))
    ap.add_argument("--salt-modules", required=False, help="directory holding _modules/ and _states/ (module_utils/salt)")
    ap.add_argument("--sections", default="scaling,ansible,salt,syscalls,floor")
    ap.add_argument("--floor-arrays", type=int, default=64, help="arrays on the host of the floor section")
    ap.add_argument("--sizes", default="1,8,64,256")
    ap.add_argument("--arrays", type=int, default=8, help="arrays on the Ansible, Salt and strace host")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--ansible-rounds", type=int, default=12)
    ap.add_argument("--ansible-contenders", default="mdtune,shell,floor,replay,size,answer")
    ap.add_argument("--ansible-tasks", type=int, default=10,
                    help="identical tasks per play for the binary-module contenders (per-task cost)")
    ap.add_argument("--salt-rounds", type=int, default=5)
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="mdtune benchmark results")
    ap.add_argument("--preamble", default="", help="markdown inserted after the title (build facts)")
    a = ap.parse_args()
    a.bin = [tuple(b.split("=", 1)) if "=" in b else (os.path.basename(b), b) for b in a.bin]
    a.bin = [(label, os.path.abspath(p)) for label, p in a.bin]
    a.mkroot = os.path.abspath(a.mkroot)
    a.here = os.path.dirname(os.path.abspath(__file__))
    sections = a.sections.split(",")
    out = [f"# {a.title}\n"]
    uname = os.uname()
    where = scratch_dir() or tempfile.gettempdir()
    out.append(
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {uname.sysname} "
        f"{uname.release} {uname.machine}, {os.cpu_count()} CPUs, by `{os.environ.get('MDTUNE_BENCH_CMD', 'bench/run.sh')}`. Fake sysfs "
        f"roots in {where}{' (tmpfs)' if where == '/dev/shm' else ''}: regular files and links, so the times are mdtune's own work and "
        f"the file system's, not a kernel's sysfs handlers.\n"
    )
    if a.preamble:
        out.append(a.preamble + "\n")
    tmp = tempfile.mkdtemp(prefix="mdtune-bench.", dir=scratch_dir())
    try:
        a.floor = build_floor(os.path.join(tmp, "floor"))
        for s in sections:
            t0 = time.time()
            if s == "scaling":
                bench_scaling(a, tmp, out)
            elif s == "ansible":
                bench_ansible(a, tmp, out)
            elif s == "salt":
                bench_salt(a, tmp, out)
            elif s == "syscalls":
                bench_syscalls(a, tmp, out)
            elif s == "floor":
                bench_floor(a, tmp, out)
            else:
                raise SystemExit(f"bench: unknown section {s}")
            log(f"{s}: {time.time() - t0:.0f} s")
    finally:
        if os.environ.get("MDTUNE_KEEP_TMP"):
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    with open(a.out, "w") as f:
        f.write("\n".join(out).rstrip() + "\n")
    log(f"wrote {a.out}")


if __name__ == "__main__":
    main()
