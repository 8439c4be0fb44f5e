#!/usr/bin/env bash
# The VM suite: mdtune against real kernels. Boots every kernel that .ci/setup-vm.sh unpacked
# (Debian 12's 6.1 cloud kernel and the newest one in bookworm-backports) under QEMU (TCG) with
# eight emulated multi-queue NVMe drives, in both NVMe layouts (nvme_core.multipath=N: queues on
# /sys/block/nvme0n1/mq; =Y: queues on hidden path devices nvme0c0n1), so 4 boots. In each guest
# tests/vm/scenarios.sh builds md arrays with mdadm and runs the static mdtune binary against the
# live sysfs; tests/vm/check.py asserts on what the guest reported and prints "N passed, N failed".
#
# Needs: qemu-system-x86_64, the cache from .ci/setup-vm.sh, python3, the Rust musl target.
# Environment: MDTUNE_VM_CACHE (default <repo>/.cache/vm), MDTUNE_VM_WORK (default
# <repo>/target/vm), MDTUNE_VM_TIMEOUT (seconds per boot, default 240), MDTUNE_VM_ONLY (a substring
# of "<kernel series>/multipath=<N|Y>" to boot only matching runs, e.g. "backports" or "=Y"),
# MDTUNE_VM_BIN (test this static binary instead of building one; for work on the harness).
set -Eeuo pipefail
# Any unexpected error still ends with the closing line the CI reads.
trap 'echo "tests/vm: command failed (line $LINENO): $BASH_COMMAND" >&2; echo "0 passed, 1 failed"' ERR

repo=$(cd "$(dirname "$0")/../.." && pwd)
here=$repo/tests/vm
cache=${MDTUNE_VM_CACHE:-$repo/.cache/vm}
work=${MDTUNE_VM_WORK:-$repo/target/vm}
boot_timeout=${MDTUNE_VM_TIMEOUT:-240}
disks=8

missing() {
  echo "tests/vm: MISSING: $1" >&2
  echo "tests/vm: install it with: sudo $repo/.ci/setup-vm.sh   (as root; see docs/vm-tests.md)" >&2
  echo "0 passed, 1 failed"
  exit 1
}
command -v python3 >/dev/null || missing "python3 (apt-get install python3)"
command -v qemu-system-x86_64 >/dev/null || missing "qemu-system-x86_64 (package qemu-system-x86 from bookworm-backports)"
[ -s "$cache/kernels.list" ] || missing "kernel list $cache/kernels.list (no kernels downloaded)"
while read -r series abi; do
  [ -f "$cache/kernel-$abi/boot/vmlinuz-$abi" ] || missing "kernel $abi ($series): $cache/kernel-$abi/boot/vmlinuz-$abi"
done <"$cache/kernels.list"
[ -x "$cache/mdadm/sbin/mdadm" ] || missing "mdadm: $cache/mdadm/sbin/mdadm"
[ -x "$cache/busybox/bin/busybox" ] || missing "busybox-static: $cache/busybox/bin/busybox"
[ "$(wc -l <"$cache/kernels.list")" -ge 2 ] || missing "a second kernel series in $cache/kernels.list"

t_start=$SECONDS
if [ -n "${MDTUNE_VM_BIN:-}" ]; then
  # Only for working on the harness itself: boot a given static binary instead of building.
  bin=$MDTUNE_VM_BIN
  echo "tests/vm: NOT building; testing MDTUNE_VM_BIN=$bin"
else
  echo "tests/vm: building the static binary"
  if ! (cd "$repo" && cargo build --release --target x86_64-unknown-linux-musl); then
    echo "tests/vm: cargo build --release --target x86_64-unknown-linux-musl failed" >&2
    echo "tests/vm: (missing target? rustup target add x86_64-unknown-linux-musl, done by .ci/setup.sh)" >&2
    echo "0 passed, 1 failed"
    exit 1
  fi
  bin=$repo/target/x86_64-unknown-linux-musl/release/mdtune
fi

rm -rf "$work" && mkdir -p "$work"

# mbr IMAGE: two Linux-raid (0xfd) partitions, 1..33 MiB and 33 MiB..end.
mbr() {
  python3 - "$1" <<'EOF'
import struct, sys
path = sys.argv[1]
sectors = 64 * 1024 * 1024 // 512
def entry(start, count):
    return struct.pack("<B3sB3sII", 0, b"\0\0\0", 0xFD, b"\0\0\0", start, count)
table = entry(2048, 65536) + entry(67584, sectors - 67584) + bytes(32)
with open(path, "r+b") as f:
    f.seek(440); f.write(struct.pack("<I", 0x6D647475) + b"\0\0" + table + b"\x55\xAA")
EOF
}

# boot SERIES ABI MULTIPATH: one guest run; leaves console.log and results.log in its directory.
boot() {
  local series=$1 abi=$2 mp=$3
  local dir=$work/$series-mp$mp kdir=$cache/kernel-$abi config
  mkdir -p "$dir"
  config=$kdir/boot/config-$abi
  local cmdline="console=ttyS0 panic=-1 loglevel=4" modparams=() extra=()
  # nvme.poll_queues=1 adds a queue beyond the CPU count, so "auto" (clamped to CPUs) and the raw
  # queue count differ. Module parameters go to insmod when the driver is a module.
  if grep -q '^CONFIG_NVME_CORE=m' "$config"; then
    modparams+=(--modparam "nvme_core=multipath=$mp")
    extra+=(nvme-core)
  else
    cmdline+=" nvme_core.multipath=$mp"
  fi
  if grep -q '^CONFIG_BLK_DEV_NVME=m' "$config"; then
    modparams+=(--modparam "nvme=poll_queues=1")
    extra+=(nvme)
  else
    cmdline+=" nvme.poll_queues=1"
  fi
  python3 "$here/initramfs.py" --kernel-dir "$kdir" --abi "$abi" --cache "$cache" --mdtune "$bin" \
    --out "$dir/initrd.gz" --disks $disks --partitions 6 "${modparams[@]}" \
    ${extra[@]+--extra "${extra[@]}"} >"$dir/modules.txt"

  local drives=() i q
  for i in $(seq 0 $((disks - 1))); do
    truncate -s 64M "$dir/nvme$i.img"
    case $i in 3 | 4 | 5) mbr "$dir/nvme$i.img" ;; esac
    # Drive 4 gets fewer queue pairs than the others: md2's members then differ and "auto" must
    # take the smallest. Drives are told apart in the guest by their serial, MDT<i>.
    q=4; [ "$i" -eq 4 ] && q=2
    drives+=(-drive "if=none,id=d$i,file=$dir/nvme$i.img,format=raw,cache=unsafe"
             -device "nvme,serial=MDT$i,drive=d$i,max_ioqpairs=$q")
  done
  local t0=$SECONDS rc=0
  timeout "$boot_timeout" qemu-system-x86_64 -accel tcg,thread=multi -cpu max -M q35 -smp 2 -m 1G \
    -nodefaults -no-user-config -display none -monitor none -no-reboot \
    -serial "file:$dir/console.log" -serial "file:$dir/results.log" \
    -kernel "$kdir/boot/vmlinuz-$abi" -initrd "$dir/initrd.gz" -append "$cmdline" \
    "${drives[@]}" </dev/null || rc=$?
  echo "tests/vm: $series ($abi) multipath=$mp: guest ran $((SECONDS - t0)) s, qemu exit $rc$([ $rc -eq 124 ] && echo ' (TIMEOUT)')"
  echo "$series $abi $mp $rc" >"$dir/boot.txt"
  rm -f "$dir"/nvme*.img
}

runs=()
while read -r series abi <&3; do
  for mp in N Y; do
    case "$series/multipath=$mp" in *"${MDTUNE_VM_ONLY:-}"*) ;; *) continue ;; esac
    boot "$series" "$abi" "$mp"
    runs+=("$work/$series-mp$mp")
  done
done 3<"$cache/kernels.list"
[ ${#runs[@]} -gt 0 ] || { echo "tests/vm: MDTUNE_VM_ONLY=${MDTUNE_VM_ONLY:-} matched no run"; echo "0 passed, 1 failed"; exit 1; }

echo "tests/vm: build and boots took $((SECONDS - t_start)) s (logs in $work)"
exec python3 "$here/check.py" "${runs[@]}"
