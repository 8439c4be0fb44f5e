#!/usr/bin/env python3
"""Builds the VM suite's initramfs for one kernel.

Usage: initramfs.py --moddir DIR --cache DIR --mdtune BIN --floor BIN --out initrd.gz
                    [--extra MODULE ...]

The image holds busybox-static (/bin/busybox); mdadm and mdmon with mdadm's udev rules;
systemd-udevd/udevadm (Debian's udev package) with its rules and helpers; dmsetup and strace; all
with the libraries ldd lists (looked up first in the unpacked userland of the cache, so the host
needs none of them installed); the md, raid1, raid10, raid456, dm, dm-multipath (with
round-robin), virtio-scsi and virtio-blk modules with everything they depend on (read from each
module's `depends=` field, decompressed when the kernel ships .ko.xz or .ko.zst, ordered so
that every module comes after its dependencies; modules.dep is not needed, so the classic and the
merged-/usr kernel layouts both work); the mdtune binary under
test and the floor program it is timed against in q15 (/usr/bin/sysfs_floor, static, built by
run.sh from bench/floor/sysfs_floor.rs), /init and the guest scripts (guest/*.sh) from this
directory. What a boot is told comes on the kernel command line, and the module list goes to
/vm/modules (outside /etc, which the persistent disk replaces); /init passes each module the
parameters the command line gives it. It is packed with busybox's cpio (newc) and gzip, so the host
needs no cpio. Prints the module load order.
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
# virtio_pci (a module in 5.10 and 6.1) must come before virtio_scsi: it is what finds the device,
# so no depends= field names it.
WANTED = ["md-mod", "raid1", "raid10", "raid456", "dm-mod", "virtio_pci", "virtio_scsi", "sd_mod",
          "virtio_blk", "dm-multipath", "dm-round-robin"]


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
        if name not in files and key in files:
            name = key
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


def builtin_modules(moddir):
    path = os.path.join(moddir, "modules.builtin")
    names = set()
    if os.path.exists(path):
        for line in open(path):
            names.add(os.path.basename(line.strip()).split(".ko")[0].replace("-", "_"))
    return names


def copy_with_libs(binary, root, dest, libpath):
    """Copy a dynamically linked binary and the libraries ldd names into root. Libraries are
    looked up in libpath (the cache's unpacked userland) first, then on the host."""
    target = os.path.join(root, dest.lstrip("/"))
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.copy2(binary, target)
    env = dict(os.environ, LD_LIBRARY_PATH=":".join(libpath))
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, env=env)
    for line in out.stdout.splitlines():
        if "not found" in line:
            sys.exit(f"initramfs: {binary} needs {line.split()[0]}, found neither in {libpath} nor "
                     "on the host (run .ci/setup-vm.sh)")
        m = re.search(r"(/\S+)", line.split("=>")[-1])
        if not m:
            continue
        lib = m.group(1)
        # Always install under the plain lib dir the loader searches in the guest.
        name = os.path.basename(lib)
        where = "lib64" if name.startswith("ld-linux") else "lib/x86_64-linux-gnu"
        dst = os.path.join(root, where, name)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if not os.path.exists(dst):
            shutil.copy2(os.path.realpath(lib), dst)


def copy_tree(src, dst):
    if os.path.isdir(src):
        shutil.copytree(src, dst, dirs_exist_ok=True, symlinks=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--moddir", required=True, help="the kernel's lib/modules/ABI directory")
    ap.add_argument("--cache", required=True)
    ap.add_argument("--mdtune", required=True)
    ap.add_argument("--floor", required=True, help="the static floor program (bench/floor/sysfs_floor.rs)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--extra", nargs="*", default=[], help="more modules to load (nvme-core, nvme)")
    a = ap.parse_args()

    order, blobs = module_order(a.moddir, builtin_modules(a.moddir), a.extra + WANTED)
    a.cache = os.path.abspath(a.cache)
    busybox = os.path.join(a.cache, "busybox/bin/busybox")
    user = os.path.join(a.cache, "userland")
    libpath = [os.path.join(user, d) for d in ("lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu")]

    with tempfile.TemporaryDirectory(prefix="mdtune-initramfs-") as root:
        for d in ["bin", "sbin", "usr/bin", "usr/sbin", "usr/local/sbin", "etc/mdadm", "etc/udev/rules.d",
                  "vm", "lib/modules", "lib/systemd", "lib/udev/rules.d", "proc", "sys", "dev", "run/mdadm",
                  "tmp", "var/run", "var/log", "root", "persist"]:
            os.makedirs(os.path.join(root, d), exist_ok=True)
        shutil.copy2(busybox, os.path.join(root, "bin/busybox"))
        os.symlink("busybox", os.path.join(root, "bin/sh"))
        mdadm = os.path.join(a.cache, "mdadm")
        copy_with_libs(os.path.join(mdadm, "sbin/mdadm"), root, "/sbin/mdadm", libpath)
        copy_with_libs(os.path.join(mdadm, "sbin/mdmon"), root, "/sbin/mdmon", libpath)
        copy_tree(os.path.join(mdadm, "lib/udev/rules.d"), os.path.join(root, "lib/udev/rules.d"))
        # udev: udevadm is also systemd-udevd (Debian links one to the other); its rules and the
        # helpers they call (ata_id, scsi_id, ...).
        copy_with_libs(os.path.join(user, "bin/udevadm"), root, "/usr/bin/udevadm", libpath)
        for link in ("bin/udevadm", "sbin/udevadm", "lib/systemd/systemd-udevd"):
            os.symlink("/usr/bin/udevadm", os.path.join(root, link))
        copy_tree(os.path.join(user, "lib/udev/rules.d"), os.path.join(root, "lib/udev/rules.d"))
        for helper in ("ata_id", "scsi_id"):
            copy_with_libs(os.path.join(user, "lib/udev", helper), root, "/lib/udev/" + helper, libpath)
        copy_with_libs(os.path.join(user, "sbin/dmsetup"), root, "/sbin/dmsetup", libpath)
        copy_with_libs(os.path.join(user, "usr/bin/strace"), root, "/usr/bin/strace", libpath)
        shutil.copy2(a.mdtune, os.path.join(root, "usr/bin/mdtune"))
        shutil.copy2(a.floor, os.path.join(root, "usr/bin/sysfs_floor"))
        shutil.copy2(os.path.join(HERE, "init"), os.path.join(root, "init"))
        copy_tree(os.path.join(HERE, "guest"), os.path.join(root, "guest"))
        os.chmod(os.path.join(root, "init"), 0o755)
        for name in order:
            with open(os.path.join(root, "lib/modules", name + ".ko"), "wb") as f:
                f.write(blobs[name])
        with open(os.path.join(root, "vm/modules"), "w") as f:
            f.write("\n".join(order) + "\n")
        # passwd/group so mdadm, udev's rules and busybox find users and groups by name
        with open(os.path.join(root, "etc/passwd"), "w") as f:
            f.write("root:x:0:0:root:/root:/bin/sh\n")
        with open(os.path.join(root, "etc/group"), "w") as f:
            f.write("root:x:0:\ndisk:x:6:\ntape:x:26:\ncdrom:x:24:\ndialout:x:20:\nkvm:x:104:\n")

        files = subprocess.run(["find", "."], cwd=root, check=True, capture_output=True).stdout
        cpio = subprocess.run([busybox, "cpio", "-o", "-H", "newc"], cwd=root, input=files,
                              check=True, capture_output=True).stdout
        with open(a.out, "wb") as f:
            f.write(subprocess.run(["gzip", "-1"], input=cpio, check=True,
                                   capture_output=True).stdout)
    print(" ".join(order))


if __name__ == "__main__":
    main()
