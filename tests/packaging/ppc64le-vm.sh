#!/usr/bin/env bash
# Boots Debian's ppc64le kernel (linux-image-powerpc64le) under qemu-system-ppc64 -M pseries
# (TCG: emulated, slow) with 4 CPUs and four emulated NVMe drives of 3 I/O queues each, builds
# an md raid5 over them with mdadm, and runs the ppc64le mdtune binary given on the command line
# against the real sysfs:
#   1. query with the auto policy: not compliant, md0's members have more than one hardware queue;
#   2. present: group_thread_cnt becomes the members' queue count, 3 (not the 4 CPUs), and the
#      kernel's own md/group_thread_cnt file says so afterwards;
#   3. present again: changed false (idempotent on a real kernel).
#
#   tests/packaging/ppc64le-vm.sh BINARY
#
# Kernel, busybox-static, mdadm and mdadm's libraries (all ppc64el) come from
# ${MDTUNE_PACKAGING_CACHE:-.cache/packaging}/ppc64el, filled by .ci/setup-packaging.sh.
# The guest's console is in target/packaging/ppc64le-vm.log.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "${1:?usage: ppc64le-vm.sh BINARY}")
cache=${MDTUNE_PACKAGING_CACHE:-$PWD/.cache/packaging}/ppc64el
die() { echo "ppc64le-vm: $*" >&2; exit 1; }
[ -s "$cache/kernel.abi" ] || die "no ppc64el kernel in $cache: run .ci/setup-packaging.sh"
command -v qemu-system-ppc64 >/dev/null || die "qemu-system-ppc64 missing: run .ci/setup-packaging.sh"
command -v cpio >/dev/null || die "cpio missing: run .ci/setup-packaging.sh"
abi=$(cat "$cache/kernel.abi")
root=$cache/root
kernel=$root/boot/vmlinux-$abi
moddir=$root/lib/modules/$abi
file -b "$bin" | grep -q '64-bit PowerPC' || die "$bin is not a ppc64 binary: $(file -b "$bin")"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log=$PWD/target/packaging/ppc64le-vm.log
mkdir -p "$(dirname "$log")"

# --- initramfs ------------------------------------------------------------------------------------
ird=$tmp/initrd
mkdir -p "$ird"/{bin,sbin,lib/modules,lib64,proc,sys,dev,run,tmp,etc,usr/sbin}
cp "$root/bin/busybox" "$ird/bin/busybox"
ln -s busybox "$ird/bin/sh"
cp "$root/sbin/mdadm" "$ird/sbin/mdadm"
mkdir -p "$ird/lib/powerpc64le-linux-gnu"
for lib in ld64.so.2 libc.so.6 libcap.so.2 libudev.so.1; do
  f=$(find "$root/lib/powerpc64le-linux-gnu" "$root/usr/lib/powerpc64le-linux-gnu" -name "$lib" | head -n1)
  [ -n "$f" ] || die "$lib not found under $root"
  cp -L "$f" "$ird/lib/powerpc64le-linux-gnu/$lib"
done
ln -s ../lib/powerpc64le-linux-gnu/ld64.so.2 "$ird/lib64/ld64.so.2"
cp "$bin" "$ird/usr/sbin/mdtune"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$ird/etc/passwd"
printf 'root:x:0:\ndisk:x:6:\n' >"$ird/etc/group"
# The modules raid456 and nvme need, dependencies first (read from each module's depends= field).
# crc32c_generic: libcrc32c (for raid456) asks the crypto API for crc32c when it loads (softdep).
python3 tests/packaging/ppc64le_guest.py modules "$moddir" "$ird/lib/modules" nvme crc32c_generic raid456
cp tests/packaging/ppc64le-init.sh "$ird/init"
chmod +x "$ird/init"
(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) >"$tmp/initrd.gz"

# --- boot -----------------------------------------------------------------------------------------
drives=()
for n in 0 1 2 3; do
  truncate -s 64M "$tmp/nvme$n.img"
  drives+=(-drive "file=$tmp/nvme$n.img,if=none,format=raw,id=d$n" -device "nvme,drive=d$n,serial=mdtune$n,max_ioqpairs=3")
done
start=$(date +%s)
# x-vof=on: QEMU's Virtual Open Firmware instead of SLOF, which boots a -kernel much faster.
timeout "${MDTUNE_PPC_TIMEOUT:-900}" qemu-system-ppc64 -M pseries,x-vof=on -accel tcg,thread=multi \
  -smp 4 -m 1G -nographic -nodefaults -serial stdio -no-reboot \
  -kernel "$kernel" -initrd "$tmp/initrd.gz" -append "console=hvc0 quiet panic=-1" \
  "${drives[@]}" </dev/null >"$log" 2>&1 || true
secs=$(($(date +%s) - start))
tr -d '\r' <"$log" >"$tmp/console"
grep -q '^@@DONE 0' "$tmp/console" || { tail -n 40 "$tmp/console" >&2; die "the guest did not finish its run ($secs s; console: $log)"; }

python3 tests/packaging/ppc64le_guest.py results "$tmp/console" "$secs"
