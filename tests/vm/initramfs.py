#!/usr/bin/env python3
"""Builds the VM suite's initramfs for one kernel.

Usage: initramfs.py --kernel-dir DIR --abi ABI --cache DIR --mdtune BIN --out initrd.gz
                    [--modparam MODULE=PARAMS ...] [--disks N] [--partitions N]

The image holds busybox-static (/bin/busybox), mdadm with the libraries ldd lists, the md,
raid10 and raid456 modules with everything they depend on (read from each module's
`depends=` field, decompressed when the kernel ships .ko.xz, ordered so that every module
comes after its dependencies), the mdtune binary under test, /init and /scenarios.sh from this
directory. It is packed with busybox's cpio (newc) and gzip, so the host needs no cpio.
"""
import argparse
import lzma
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# Modules the scenarios need; their dependencies are added automatically.
WANTED = ["md-mod", "raid10", "raid456"]


def module_files(moddir):
    """Map module name (dashes and underscores both) -> path of its .ko / .ko.xz."""
    found = {}
    for dirpath, _, files in os.walk(moddir):
        for f in files:
            m = re.match(r"^(.*)\.ko(\.xz|\.zst|\.gz)?$", f)
            if m:
                found[m.group(1)] = os.path.join(dirpath, f)
                found[m.group(1).replace("-", "_")] = os.path.join(dirpath, f)
    return found


def read_module(path):
    data = open(path, "rb").read()
    if path.endswith(".xz"):
        data = lzma.decompress(data)
    elif path.endswith(".zst"):
        data = subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout
    elif path.endswith(".gz"):
        import gzip
        data = gzip.decompress(data)
    return data


def depends(data):
    m = re.search(rb"\0depends=([^\0]*)\0", data)
    return [d for d in m.group(1).decode().split(",") if d] if m else []


def module_order(moddir, builtin, wanted):
    """Modules to load, dependencies first. Built-in modules are left out."""
    files = module_files(moddir)
    order, seen, blobs = [], set(), {}

    def visit(name, chain):
        key = name.replace("-", "_")
        if key in seen:
            return
        if key in builtin:
            seen.add(key)
            return
        if name not in files:
            sys.exit(f"initramfs: module {name} (needed by {' <- '.join(chain) or 'the suite'}) "
                     f"is neither in {moddir} nor built in")
        seen.add(key)
        data = read_module(files[name])
        for dep in depends(data):
            visit(dep, [name] + chain)
        order.append(name)
        blobs[name] = data

    for w in wanted:
        visit(w, [])
    return order, blobs


def builtin_modules(kernel_dir, abi):
    path = os.path.join(kernel_dir, "lib/modules", abi, "modules.builtin")
    names = set()
    if os.path.exists(path):
        for line in open(path):
            names.add(os.path.basename(line.strip()).split(".ko")[0].replace("-", "_"))
    return names


def copy_with_libs(binary, root, dest):
    """Copy a dynamically linked binary and the libraries ldd names into root."""
    shutil.copy2(binary, os.path.join(root, dest.lstrip("/")))
    out = subprocess.run(["ldd", binary], capture_output=True, text=True)
    for line in out.stdout.splitlines():
        m = re.search(r"(/\S+)", line.split("=>")[-1])
        if not m:
            continue
        lib = m.group(1)
        target = os.path.join(root, lib.lstrip("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(os.path.realpath(lib), target)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel-dir", required=True)
    ap.add_argument("--abi", required=True)
    ap.add_argument("--cache", required=True)
    ap.add_argument("--mdtune", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--modparam", action="append", default=[])
    ap.add_argument("--disks", type=int, default=8)
    ap.add_argument("--partitions", type=int, default=0)
    ap.add_argument("--extra", nargs="*", default=[], help="more modules to load (nvme-core, nvme)")
    a = ap.parse_args()

    moddir = os.path.join(a.kernel_dir, "lib/modules", a.abi)
    order, blobs = module_order(moddir, builtin_modules(a.kernel_dir, a.abi), a.extra + WANTED)
    busybox = os.path.join(a.cache, "busybox/bin/busybox")

    with tempfile.TemporaryDirectory(prefix="mdtune-initramfs-") as root:
        for d in ["bin", "sbin", "usr/bin", "usr/sbin", "usr/local/sbin", "etc/vm", "lib/modules",
                  "proc", "sys", "dev", "run/mdadm", "tmp", "var/run", "root"]:
            os.makedirs(os.path.join(root, d), exist_ok=True)
        shutil.copy2(busybox, os.path.join(root, "bin/busybox"))
        os.symlink("busybox", os.path.join(root, "bin/sh"))
        copy_with_libs(os.path.join(a.cache, "mdadm/sbin/mdadm"), root, "/sbin/mdadm")
        shutil.copy2(a.mdtune, os.path.join(root, "usr/bin/mdtune"))
        shutil.copy2(os.path.join(HERE, "init"), os.path.join(root, "init"))
        shutil.copy2(os.path.join(HERE, "scenarios.sh"), os.path.join(root, "scenarios.sh"))
        os.chmod(os.path.join(root, "init"), 0o755)
        for name in order:
            with open(os.path.join(root, "lib/modules", name + ".ko"), "wb") as f:
                f.write(blobs[name])
        with open(os.path.join(root, "etc/vm/modules"), "w") as f:
            f.write("\n".join(order) + "\n")
        with open(os.path.join(root, "etc/vm/config"), "w") as f:
            f.write(f"NVME_DISKS={a.disks}\nPARTITIONS={a.partitions}\n")
            for mp in a.modparam:
                mod, params = mp.split("=", 1)
                f.write(f"MODPARAMS_{mod.replace('-', '_')}='{params}'\n")
        # passwd/group so mdadm and busybox find root by name
        with open(os.path.join(root, "etc/passwd"), "w") as f:
            f.write("root:x:0:0:root:/root:/bin/sh\n")
        with open(os.path.join(root, "etc/group"), "w") as f:
            f.write("root:x:0:\ndisk:x:6:\n")

        files = subprocess.run(["find", "."], cwd=root, check=True, capture_output=True).stdout
        cpio = subprocess.run([busybox, "cpio", "-o", "-H", "newc"], cwd=root, input=files,
                              check=True, capture_output=True).stdout
        with open(a.out, "wb") as f:
            f.write(subprocess.run(["gzip", "-1"], input=cpio, check=True,
                                   capture_output=True).stdout)
    print(" ".join(order))


if __name__ == "__main__":
    main()
