#!/usr/bin/env bash
# The VM suite's dracut boot: the tuning comes back after a reboot through an initrd built by
# dracut, as on SLES and openSUSE (docs/persistence.md). One kernel series (bookworm's 6.1 unless
# MDTUNE_DRACUT_SERIES names another line of kernels.list), two boots under QEMU (TCG) of the same
# disks, both through the same dracut initrd:
#   create  the root (an ext4 disk: busybox, mdadm, udev, mdtune, /sbin/vm-init) creates md0, a
#           raid5 over three disks, and persists stripe_cache_size 4096 with mdtune;
#   check   dracut's initrd assembles md0 (rd.md.uuid=, as a host-only SUSE initrd has it) and
#           switches to the root, where md0 is still at the kernel's 256; udevd and the coldplug
#           ("add" for every device) run the persisted rule: md0 must be at 4096.
# It also checks that the initrd carries mdadm's rules but not 90-mdtune.rules.
#
# dracut collects files from a system root: here a scratch one (--sysroot) made of this
# machine's /usr (hard links: it must be on the same filesystem as the work directory), the VM
# cache's udev and mdadm (.ci/setup-vm.sh) and Debian's dracut and kmod (.ci/setup-dracut.sh),
# with the kernel's modules and a depmod run. Needs root (nothing is installed), qemu-system-x86_64
# and mkfs.ext4. Environment: MDTUNE_VM_CACHE, MDTUNE_VM_WORK, MDTUNE_VM_BIN (as tests/vm/run.sh),
# MDTUNE_DRACUT_SERIES. Prints "ok   - ..." / "FAIL - ..." lines and "N passed, N failed"
# (tests/lib.sh).
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/lib.sh
. "$repo/tests/lib.sh"
here=$repo/tests/vm
cache=${MDTUNE_VM_CACHE:-$repo/.cache/vm}
work=${MDTUNE_VM_WORK:-$repo/target/vm}/dracut
series=${MDTUNE_DRACUT_SERIES:-bookworm}
need() { not_ok "$1" "$2"; finish; }

[ "$(id -u)" -eq 0 ] || need "runs as root" "dracut's copies keep owners and device nodes: run as root"
command -v qemu-system-x86_64 >/dev/null || need "qemu-system-x86_64 is installed" "run .ci/setup-vm.sh"
command -v mkfs.ext4 >/dev/null || need "mkfs.ext4 is installed" "apt-get install e2fsprogs"
[ -x "$cache/dracut/root/usr/bin/dracut" ] || need "dracut is unpacked" "run .ci/setup-dracut.sh"
{ [ -x "$cache/userland/bin/udevadm" ] && [ -x "$cache/mdadm/sbin/mdadm" ]; } ||
  need "udev and mdadm are in the VM cache" "run .ci/setup-vm.sh"
abi=$(awk -v s="$series" '$1 == s {print $2}' "$cache/kernels.list" 2>/dev/null)
[ -n "$abi" ] || need "kernel series $series is in $cache/kernels.list" "run .ci/setup-vm.sh"
kdir=$cache/kernel-$abi
vmlinuz=$kdir/boot/vmlinuz-$abi
[ -f "$vmlinuz" ] || vmlinuz=$kdir/usr/lib/modules/$abi/vmlinuz
moddir=$kdir/lib/modules/$abi
[ -d "$moddir" ] || moddir=$kdir/usr/lib/modules/$abi

if [ -n "${MDTUNE_VM_BIN:-}" ]; then bin=$MDTUNE_VM_BIN
else
  (cd "$repo" && cargo build --release --quiet --target x86_64-unknown-linux-musl) ||
    need "the static mdtune builds" "cargo build --release --target x86_64-unknown-linux-musl failed"
  bin=${CARGO_TARGET_DIR:-$repo/target}/x86_64-unknown-linux-musl/release/mdtune
fi

rm -rf "$work" && mkdir -p "$work"
# The system root is mostly hard links to this machine's /usr: never left behind to be written
# to. The disk images and the initrd go too (the logs and records stay).
# shellcheck disable=SC2317 # run on exit (tests/lib.sh's at_exit)
remove_sysroot() { rm -rf "$work/sysroot" "$work"/*.img; }
at_exit remove_sysroot
echo "# dracut boot: kernel $abi ($series), work $work"

# --- the scratch system root for dracut -------------------------------------------------------
sys=$work/sysroot
mkdir -p "$sys/usr" "$sys/etc/udev/rules.d" "$sys/run" "$sys/var/tmp"
for d in bin sbin lib/x86_64-linux-gnu lib64; do
  [ -d "/usr/$d" ] || continue
  mkdir -p "$sys/usr/$(dirname "$d")"
  cp -al "/usr/$d" "$sys/usr/$d" 2>/dev/null ||
    need "$work is on the filesystem of /usr" "dracut's system root is made of hard links to /usr; set MDTUNE_VM_WORK"
done
for l in bin sbin lib lib64; do ln -s "usr/$l" "$sys/$l"; done
cp /etc/passwd /etc/group "$sys/etc/"
# merge TREE: TREE's files into the system root, replacing (never writing through) a hard link.
merge() {
  local d
  for d in bin sbin lib lib64; do [ -d "$1/$d" ] && cp -a --remove-destination "$1/$d/." "$sys/usr/$d/"; done
  [ -d "$1/usr" ] && cp -a --remove-destination "$1/usr/." "$sys/usr/"
  [ -d "$1/etc" ] && cp -a --remove-destination "$1/etc/." "$sys/etc/"
  return 0
}
merge "$cache/dracut/root"
merge "$cache/userland"
merge "$cache/mdadm"
# Absolute links into the packages (systemd-udevd -> /bin/udevadm, modprobe -> /bin/kmod) made
# relative, so that they resolve inside the system root.
python3 "$here/relink.py" "$sys"
mkdir -p "$sys/usr/lib/modules"
cp -a "$moddir" "$sys/usr/lib/modules/$abi"
mkdir -p "$work/bin"
for t in depmod modprobe; do ln -s "$sys/usr/bin/kmod" "$work/bin/$t"; done
# The rule persist writes (a host that persisted before the initrd was built): not to be copied.
echo 'SUBSYSTEM=="block", ACTION=="add|change", KERNEL=="md*", ENV{DEVTYPE}=="disk", TEST=="md/level", RUN+="/usr/local/sbin/mdtune --udev %k"' \
  >"$sys/etc/udev/rules.d/90-mdtune.rules"
export LD_LIBRARY_PATH=$sys/usr/lib/x86_64-linux-gnu
PATH=$work/bin:$PATH depmod -b "$sys" "$abi" || need "depmod runs" "depmod -b $sys $abi failed"

# --- the initrd ---------------------------------------------------------------------------------
printf 'udevdir=/usr/lib/udev\nsystemdutildir=/usr/lib/systemd\nsystemdsystemunitdir=/usr/lib/systemd/system\n' \
  >"$work/dracut.conf"
mkdir -p "$work/dracut.conf.d"
if dracutbasedir=$sys/usr/lib/dracut PATH=$work/bin:$PATH:$sys/usr/sbin:$sys/usr/bin \
  bash "$sys/usr/bin/dracut" --conf "$work/dracut.conf" --confdir "$work/dracut.conf.d" \
  --sysroot "$sys" --no-hostonly --no-early-microcode --kver "$abi" --force --tmpdir "$work" \
  --modules "base udev-rules mdraid kernel-modules rootfs-block" \
  --add-drivers "virtio_pci virtio_blk md_mod raid456" --no-compress "$work/initrd.img" \
  >"$work/dracut.log" 2>&1 && [ -s "$work/initrd.img" ]; then
  ok "dracut $(sed -n 's/^DRACUT_VERSION=//p' "$sys/usr/lib/dracut/dracut-version.sh") builds an initrd for $abi with its mdraid module"
else
  not_ok "dracut builds an initrd for $abi" "$(tail -n 8 "$work/dracut.log")"
  finish
fi
unset LD_LIBRARY_PATH
listing=$(cpio -it <"$work/initrd.img" 2>/dev/null)
if grep -q 'rules.d/63-md-raid-arrays.rules$' <<<"$listing" && grep -q 'sbin/mdadm$' <<<"$listing" &&
  ! grep -q 'mdtune' <<<"$listing"; then
  ok "the initrd has mdadm and its rules, and no 90-mdtune.rules (dracut copies only the rules its modules name)"
else
  not_ok "the initrd has mdadm and its rules, and no 90-mdtune.rules" "$(grep -E 'rules.d|mdadm|mdtune' <<<"$listing" | head -n 20)"
fi

# --- the root filesystem --------------------------------------------------------------------
tree=$work/root
mkdir -p "$tree"/{bin,sbin,etc/udev/rules.d,usr/bin,usr/sbin,usr/local/sbin,lib/systemd,lib/udev,proc,sys,dev,run,tmp,var}
cp "$cache/busybox/bin/busybox" "$tree/bin/busybox"
ln -s busybox "$tree/bin/sh"
cp "$bin" "$tree/usr/bin/mdtune-test"
install -m 0755 "$here/dracut-init" "$tree/sbin/vm-init"
cp -a "$cache/userland/lib/udev/." "$tree/lib/udev/"
cp -a "$cache/mdadm/lib/udev/." "$tree/lib/udev/" 2>/dev/null
# with_libs FILE DEST: FILE and the libraries ldd lists, from the VM cache first.
with_libs() {
  install -D -m 0755 "$1" "$tree$2"
  local lib dest u=$cache/userland/usr/lib/x86_64-linux-gnu
  for lib in $(LD_LIBRARY_PATH=$u:$u/systemd:$cache/userland/lib/x86_64-linux-gnu:$cache/mdadm/lib/x86_64-linux-gnu \
    ldd "$1" | awk '/=> \//{print $3} /^\t\/lib/{print $1}'); do
    dest=${lib#"$cache"/userland}
    dest=${dest#"$cache"/mdadm}
    [ -e "$tree$dest" ] || install -D -m 0755 "$(readlink -f "$lib")" "$tree$dest"
  done
}
with_libs "$cache/mdadm/sbin/mdadm" /sbin/mdadm
with_libs "$cache/userland/bin/udevadm" /bin/udevadm
ln -s /bin/udevadm "$tree/lib/systemd/systemd-udevd"
for p in "$cache"/userland/lib/systemd/lib*.so* "$cache"/userland/usr/lib/x86_64-linux-gnu/systemd/lib*.so*; do
  [ -e "$p" ] && install -D -m 0644 "$p" "$tree${p#"$cache"/userland}"
done
truncate -s 64M "$work/root.img"
mkfs.ext4 -q -F -L vmroot -d "$tree" "$work/root.img" || need "mkfs.ext4 -d makes the root disk" "see above"
for i in 1 2 3; do truncate -s 32M "$work/member$i.img"; done

# boot PHASE APPEND-EXTRA: one boot; records in $work/PHASE.rec, console in $work/PHASE.log.
boot() {
  local phase=$1
  : >"$work/$phase.rec"
  timeout "${MDTUNE_VM_TIMEOUT:-600}" qemu-system-x86_64 -machine q35 -m 768 -smp 2 -nographic -no-reboot \
    -kernel "$vmlinuz" -initrd "$work/initrd.img" \
    -append "console=ttyS0 no_timer_check root=/dev/vda rootfstype=ext4 rw init=/sbin/vm-init vm.phase=$phase $2" \
    -drive "file=$work/root.img,if=virtio,format=raw" \
    -drive "file=$work/member1.img,if=virtio,format=raw" \
    -drive "file=$work/member2.img,if=virtio,format=raw" \
    -drive "file=$work/member3.img,if=virtio,format=raw" \
    -serial "file:$work/$phase.log" -serial "file:$work/$phase.rec" -monitor none >/dev/null 2>&1
  grep -q '^@@DONE 0' "$work/$phase.rec"
}
rec() { sed -n "s/^@@$2 //p" "$work/$1.rec" | tr -d '\r' | tail -n 1; }

# rd.driver.pre: the initrd loads raid456 (and md_mod) before the root is mounted; the root has
# no modules of its own.
if boot create "rd.driver.pre=raid456" && grep -q 'RUN+="/usr/local/sbin/mdtune --udev %k"' "$work/create.rec"; then
  ok "boot 1 (dracut initrd, ext4 root): md0 created ($(rec create CREATED)), persist wrote the rule and /etc/mdtune"
else
  not_ok "boot 1 (dracut initrd, ext4 root): md0 created, the desired state persisted" \
    "$(cat "$work/create.rec")" "$(tail -n 15 "$work/create.log")"
  finish
fi
uuid=$(rec create UUID)
if boot check "rd.driver.pre=raid456 rd.md.uuid=$uuid"; then
  before=$(rec check BEFORE) after=$(rec check AFTER)
  if [ "${before#* }" = 256 ] && [[ $before == clean* || $before == active* ]]; then
    ok "boot 2: dracut's initrd assembled the array (rd.md.uuid=$uuid; $(rec check ARRAY)), at the kernel's defaults on the real root ($before)"
  else
    not_ok "boot 2: dracut's initrd assembled the array, at the kernel's defaults on the real root" \
      "array: $(rec check ARRAY), before: $before"
  fi
  if [ "${after#* }" = 4096 ]; then
    ok "boot 2: after udevd's coldplug (add) on the real root the persisted rule tuned it ($after)"
  else
    not_ok "boot 2: after udevd's coldplug (add) on the real root the persisted rule tuned it" "after: $after" \
      "$(tail -n 15 "$work/check.log")"
  fi
else
  not_ok "boot 2 (dracut initrd assembles md0) ran to its end" "$(cat "$work/check.rec")" "$(tail -n 20 "$work/check.log")"
fi
finish
