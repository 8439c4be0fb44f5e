#!/usr/bin/env bash
# The VM suite: mdtune against real kernels. Boots every kernel that .ci/setup-vm.sh unpacked
# (bullseye's 5.10, bookworm's 6.1, bookworm-backports' 6.12, trixie-backports' 7.x cloud kernels)
# under QEMU (TCG), five times each, with one initramfs per kernel:
#   first boot,  nvme_core.multipath=N (queues on /sys/block/nvme0n1/mq): 21 NVMe drives, three
#                virtio-scsi disks (one rotational), the persistent /etc disk; tests/vm/guest/first.sh
#                builds the arrays, runs every scenario, starts systemd-udevd for the udev ones and
#                ends with persist;
#   second boot, nvme_core.multipath=Y (queues on hidden path devices nvme0c0n1), two NUMA nodes:
#                the same md member images and /etc disk (a real reboot); tests/vm/guest/second.sh
#                lets udev assemble and tune the arrays, then runs what the multipath layout and NUMA need;
#   auto boot,   a KVM guest's shape: 5 vCPUs on NUMA node 0, node 1 with memory and no CPUs,
#                isolcpus=4 nohz_full=3, virtio-blk disks with 3 or 1 virtqueues, NVMe drives with
#                read and poll queues, a fresh /etc disk; tests/vm/guest/auto.sh runs auto, a map
#                with no paths, a revert, poll queues and unacknowledged bad blocks (docs/auto.md);
#   powercut and after-powercut boots, a raid5 on three drives and a fresh /etc disk:
#                tests/vm/guest/powercut.sh persists and crashes the kernel the moment mdtune
#                exits; the next boot, from the same disks (tests/vm/guest/after-powercut.sh),
#                finds the persisted files whole and the values put back by the rule
#                (docs/reliability.md, durable persistence).
# tests/vm/check.py asserts on what the guests reported and prints "N passed, N failed".
#
# Needs: qemu-system-x86_64, the cache from .ci/setup-vm.sh, python3, mkfs.ext4 (e2fsprogs), the
# Rust musl target. Environment: MDTUNE_VM_CACHE (default <repo>/.cache/vm), MDTUNE_VM_WORK
# (default <repo>/target/vm), MDTUNE_VM_TIMEOUT (seconds per boot, default 600), MDTUNE_VM_START_TIMEOUT (seconds until /init must speak, default 150), MDTUNE_VM_ONLY
# (words: a series' exact name boots that series, any other word every series containing it, e.g.
# "bookworm" only bookworm, "backports" both backports series, "bullseye trixie" two),
# MDTUNE_VM_BOOTS (which boots of each series, words among "first second auto powercut
# after-powercut", default all five; second needs first, after-powercut needs powercut),
# MDTUNE_VM_BIN (test this static binary instead of building one; for work on the harness),
# MDTUNE_VM_STRACE (series whose first boot measures query's time and system calls against the
# floor program bench/floor/sysfs_floor.rs, default bookworm).
set -Eeuo pipefail
# Any unexpected error still ends with the closing line the CI reads.
trap 'echo "tests/vm: command failed (line $LINENO): $BASH_COMMAND" >&2; echo "0 passed, 1 failed"' ERR

repo=$(cd "$(dirname "$0")/../.." && pwd)
here=$repo/tests/vm
cache=${MDTUNE_VM_CACHE:-$repo/.cache/vm}
work=${MDTUNE_VM_WORK:-$repo/target/vm}
boot_timeout=${MDTUNE_VM_TIMEOUT:-600}
# A stock kernel under TCG on a loaded host now and then stalls (RCU stalls) before /init runs.
# A boot whose /init has not spoken after this many seconds is killed and started once more.
start_timeout=${MDTUNE_VM_START_TIMEOUT:-150}
strace_series=${MDTUNE_VM_STRACE:-bookworm}
# Every disk image: small, since under TCG resync, reshape and parity cost CPU by the megabyte.
disk_mib=32

missing() {
  echo "tests/vm: MISSING: $1" >&2
  echo "tests/vm: install it with: sudo $repo/.ci/setup-vm.sh   (as root; see docs/vm-tests.md)" >&2
  echo "0 passed, 1 failed"
  exit 1
}
# kernel_file ABI NAME: vmlinuz, config or the module dir, in the classic layout (boot/vmlinuz-ABI,
# lib/modules/ABI) or the merged-/usr one of trixie and later (usr/lib/modules/ABI/vmlinuz).
kernel_file() {
  local k=$cache/kernel-$1 abi=$1
  case $2 in
    vmlinuz) [ -f "$k/boot/vmlinuz-$abi" ] && echo "$k/boot/vmlinuz-$abi" || echo "$k/usr/lib/modules/$abi/vmlinuz" ;;
    config) [ -f "$k/boot/config-$abi" ] && echo "$k/boot/config-$abi" || echo "$k/usr/lib/modules/$abi/config" ;;
    moddir) [ -d "$k/lib/modules/$abi" ] && echo "$k/lib/modules/$abi" || echo "$k/usr/lib/modules/$abi" ;;
  esac
}
command -v python3 >/dev/null || missing "python3 (apt-get install python3)"
command -v mkfs.ext4 >/dev/null || missing "mkfs.ext4 (apt-get install e2fsprogs)"
command -v qemu-system-x86_64 >/dev/null || missing "qemu-system-x86_64 (package qemu-system-x86 from bookworm-backports)"
[ -s "$cache/kernels.list" ] || missing "kernel list $cache/kernels.list (no kernels downloaded)"
while read -r series abi; do
  [ -f "$(kernel_file "$abi" vmlinuz)" ] || missing "kernel $abi ($series): no vmlinuz under $cache/kernel-$abi"
done <"$cache/kernels.list"
for f in mdadm/sbin/mdadm mdadm/sbin/mdmon busybox/bin/busybox userland/bin/udevadm userland/sbin/dmsetup userland/usr/bin/strace; do
  [ -x "$cache/$f" ] || missing "$cache/$f"
done
for series in bullseye bookworm bookworm-backports trixie-backports; do
  grep -q "^$series " "$cache/kernels.list" || missing "the $series kernel in $cache/kernels.list"
done

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

# The floor program (bench/floor/sysfs_floor.rs, built as bench/bench_direct.py builds it):
# reads only what query's answer needs; q15 times it next to mdtune on the guest's real sysfs.
floor=$work/sysfs_floor
if ! rustc --edition 2021 -C opt-level=3 -C panic=abort -C strip=symbols --target x86_64-unknown-linux-musl \
  -o "$floor" "$repo/bench/floor/sysfs_floor.rs"; then
  echo "tests/vm: rustc of bench/floor/sysfs_floor.rs for x86_64-unknown-linux-musl failed" >&2
  echo "tests/vm: (missing target? rustup target add x86_64-unknown-linux-musl, done by .ci/setup.sh)" >&2
  echo "0 passed, 1 failed"
  exit 1
fi

# mbr IMAGE N: N Linux-raid (0xfd) partitions of equal size from 1 MiB to the end.
mbr() { python3 "$repo/tests/vm/mbr.py" "$1" "$2" "$disk_mib"; }

# NVMe drives: SERIAL:QUEUE_PAIRS:PARTITIONS. The first and second boots pass nvme.write_queues=1
# nvme.poll_queues=1, so on the 2 vCPUs a drive of 4 queue pairs splits them 1/2/1
# default/read/poll: 4 mq/ entries, 3 that carry md's I/O (more than the CPUs, so "auto" and the
# raw count differ), and the poll queue, which carries none, is there to be left out; 3 pairs split
# 1/1/1 (2 that carry I/O), 1 pair gives 1 queue.
#   MDT0-7   md0 raid5 (0-2), md2 raid5 (first partitions of 3-5, drive 4 with fewer queues),
#            md1 raid10 (6, 7, second partitions of 3, 4)   -- kept for the second boot
#   MDT8-10  3 partitions: dm-linear on the first (md3), raid1 pairs of the others under raid5 md4
#   MDT11-13 md6 raid5 actives; MDT14 (1 queue) 3 partitions: md6's spare, journal, failed member
#   MDT15-16 2 partitions each: md7 raid5 grown from 3 to 4 members (reshape)
#   MDT17-19 the IMSM container and its raid5 volume
#   MDT20    2 partitions: next to virtio-scsi disks in md5 and md8
#   ETC0     the persistent /etc and /usr/local (ext4)      -- kept for the second boot
first_nvme="MDT0:4:0 MDT1:4:0 MDT2:4:0 MDT3:4:2 MDT4:3:2 MDT5:4:2 MDT6:4:0 MDT7:4:0 MDT8:4:3 MDT9:4:3
  MDT10:4:3 MDT11:4:0 MDT12:4:0 MDT13:4:0 MDT14:1:3 MDT15:4:2 MDT16:4:2 MDT17:4:0 MDT18:4:0 MDT19:4:0
  MDT20:4:2 ETC0:1:0"
# Second boot: the kept drives, and fresh MDT8-10 for the dm and nested checks on multipath heads.
second_nvme="MDT0:4:0 MDT1:4:0 MDT2:4:0 MDT3:4:2 MDT4:3:2 MDT5:4:2 MDT6:4:0 MDT7:4:0 MDT8:4:3 MDT9:4:3
  MDT10:4:3 ETC0:1:0"
# virtio-scsi disks (first boot): SCSI_ID:ROTATION_RATE:PARTITIONS (rate 1 = non-rotational).
first_scsi="0:7200:2 1:1:2 2:1:0"
# The auto boot: the /etc disk, three NVMe drives of 8 queue pairs, which nvme.write_queues=2
# nvme.poll_queues=2 split 2/4/2 default/read/poll on its 5 vCPUs (8 mq/ entries, 6 that carry md's
# I/O), and virtio-blk disks SERIAL:VIRTQUEUES:PARTITIONS (guest/auto.sh).
auto_nvme="ETC0:1:0 MDT0:8:0 MDT1:8:0 MDT2:8:0"
auto_vd="V0:5:0 V1:5:0 V2:5:0 V3:3:2 V4:3:2 V5:1:2 V6:3:0 V7:3:0 V8:3:0"
# The power-cut boots: md0's three drives and the /etc disk, fresh for powercut; after-powercut
# boots from the images the crash left.
powercut_nvme="MDT0:4:0 MDT1:4:0 MDT2:4:0 ETC0:1:0"

# watched CMD...: runs QEMU; exit 124 when it runs past $boot_timeout, 125 when the guest's /init
# printed nothing to the results port within $start_timeout (the boot stalled before /init).
watched() {
  "$@" </dev/null &
  local pid=$! waited=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    waited=$((waited + 1))
    if [ "$waited" -ge "$boot_timeout" ] ||
       { [ "$waited" -ge "$start_timeout" ] && ! grep -q '^@@AT' "$results"; }; then
      kill "$pid" 2>/dev/null
      wait "$pid" 2>/dev/null
      [ "$waited" -ge "$boot_timeout" ] && return 124 || return 125
    fi
  done
  wait "$pid"
}

# boot SERIES ABI PHASE: one guest run; leaves console.log and results.log in $dir/PHASE.
boot() {
  local series=$1 abi=$2 phase=$3
  local dir=$work/$series mp=N nvme=$first_nvme scsi=$first_scsi vd="" smp=2 extra="" numa=()
  local split="nvme.write_queues=1 nvme.poll_queues=1"
  if [ "$phase" = auto ]; then
    # Node 1 has memory and no CPUs (CXL, PMem as memory): its worker group never runs. CPU 4
    # is isolated (unbound work, the raid5 workqueue, avoids it) and CPU 3 nohz_full (avoided on
    # 6.1 and 6.12; not on 7.x, and 5.10's cloud kernel has no NO_HZ_FULL). auto's ceiling: 3 or
    # 4 CPUs / 1 node; the old rule gave 5 CPUs / 2 possible nodes = 2.
    nvme=$auto_nvme scsi="" vd=$auto_vd smp=5 extra=" isolcpus=4 nohz_full=3"
    split="nvme.write_queues=2 nvme.poll_queues=2"
    numa=(-object 'memory-backend-ram,id=m0,size=768M' -object 'memory-backend-ram,id=m1,size=256M'
          -numa 'node,nodeid=0,cpus=0-4,memdev=m0' -numa 'node,nodeid=1,memdev=m1')
  fi
  if [ "$phase" = second ]; then
    mp=Y nvme=$second_nvme scsi=
    # Two NUMA nodes, one vCPU and half the memory each: the kernel starts group_thread_cnt
    # workers per possible node, so auto's default max is 2 CPUs / 2 nodes = 1.
    numa=(-object 'memory-backend-ram,id=m0,size=512M' -object 'memory-backend-ram,id=m1,size=512M'
          -numa 'node,nodeid=0,cpus=0,memdev=m0' -numa 'node,nodeid=1,cpus=1,memdev=m1')
  fi
  if [ "$phase" = powercut ] || [ "$phase" = after-powercut ]; then
    nvme=$powercut_nvme scsi=""
  fi
  mkdir -p "$dir/$phase"
  local args=() parts=0 n=0 s=0 v=0 spec serial q p img id rate
  for spec in $nvme; do
    IFS=: read -r serial q p <<<"$spec"
    img=$dir/$serial.img
    # The second boot keeps the members of md0-md2 and /etc, after-powercut every image (the
    # crash's); everything else is fresh.
    if [ "$phase" != after-powercut ] &&
       { [ "$phase" != second ] || ! case $serial in MDT[0-7] | ETC0) true ;; *) false ;; esac; }; then
      rm -f "$img" && truncate -s "${disk_mib}M" "$img"
      [ "$p" -eq 0 ] || mbr "$img" "$p"
      [ "$serial" != ETC0 ] || mkfs.ext4 -q -F -L mdtune-etc "$img"
    fi
    parts=$((parts + p)) n=$((n + 1))
    args+=(-drive "if=none,id=$serial,file=$img,format=raw,cache=unsafe"
           -device "nvme,serial=$serial,drive=$serial,max_ioqpairs=$q")
  done
  if [ -n "$scsi" ]; then
    args+=(-device 'virtio-scsi-pci,id=scsi0,num_queues=4')
    for spec in $scsi; do
      IFS=: read -r id rate p <<<"$spec"
      img=$dir/scsi$id.img
      rm -f "$img" && truncate -s "${disk_mib}M" "$img"
      [ "$p" -eq 0 ] || mbr "$img" "$p"
      parts=$((parts + p)) s=$((s + 1))
      args+=(-drive "if=none,id=scsi$id,file=$img,format=raw,cache=unsafe"
             -device "scsi-hd,bus=scsi0.0,scsi-id=$id,lun=0,drive=scsi$id,rotation_rate=$rate,serial=SCSI$id")
    done
  fi
  for spec in $vd; do
    IFS=: read -r serial q p <<<"$spec"
    img=$dir/$serial.img
    rm -f "$img" && truncate -s "${disk_mib}M" "$img"
    [ "$p" -eq 0 ] || mbr "$img" "$p"
    parts=$((parts + p)) v=$((v + 1))
    args+=(-drive "if=none,id=$serial,file=$img,format=raw,cache=unsafe"
           -device "virtio-blk-pci,drive=$serial,serial=$serial,num-queues=$q")
  done
  # nvme.write_queues adds read queues, which carry md's reads, and nvme.poll_queues poll queues,
  # which carry none of its I/O (the drives above). /init hands "module.param" words to insmod
  # when a driver is a module. no_timer_check: under a loaded host a TCG guest can panic in the
  # IO-APIC timer check at boot.
  local cmdline="console=ttyS0 panic=-1 loglevel=4 printk.devkmsg=on no_timer_check nvme_core.multipath=$mp $split"
  cmdline+="$extra vm.phase=$phase vm.nvme=$n vm.scsi=$s vm.vd=$v vm.parts=$parts"
  [ "$series" != "$strace_series" ] || cmdline+=" vm.strace=1"
  local t0=$SECONDS rc=0 cpu results=$dir/$phase/results.log
  for _ in 1 2; do
    : >"$results"
    # The CPU time QEMU used tells what the boot costs on a machine that nothing else loads.
    TIMEFORMAT='%U %S'
    { time watched qemu-system-x86_64 -accel tcg,thread=multi -cpu max -M q35 -smp "$smp" -m 1G \
      -nodefaults -no-user-config -display none -monitor none -no-reboot \
      -serial "file:$dir/$phase/console.log" -serial "file:$results" \
      -kernel "$(kernel_file "$abi" vmlinuz)" -initrd "$dir/initrd.gz" -append "$cmdline" \
      ${numa[@]+"${numa[@]}"} "${args[@]}" || rc=$?; } 2>"$dir/$phase/cpu.txt"
    if [ "$rc" -eq 125 ]; then
      echo "tests/vm: $series $phase boot: /init silent after $start_timeout s (kernel stalled before it, see console.log); starting it again"
    elif [ "$rc" -gt 128 ] && ! grep -q '^@@AT' "$results"; then
      # QEMU itself died on a signal before /init spoke (TCG's iotlb_to_section assertion was
      # seen once in about 200 boots): nothing of the guest ran, so it is made again.
      echo "tests/vm: $series $phase boot: QEMU died (exit $rc: $(grep -m1 -v '^[0-9.]* [0-9.]*$' "$dir/$phase/cpu.txt")) before /init spoke; starting it again"
    else
      break
    fi
    cp "$dir/$phase/console.log" "$dir/$phase/console.stalled.log"
    rc=0
  done
  cpu=$(awk '{printf "%.0f", $1 + $2}' "$dir/$phase/cpu.txt")
  echo "tests/vm: $series ($abi) $phase boot (multipath=$mp): guest ran $((SECONDS - t0)) s (QEMU used $cpu s of CPU), qemu exit $rc$([ $rc -eq 124 ] && echo ' (TIMEOUT)')"
  echo "$series $abi $mp $rc $phase $((SECONDS - t0)) $cpu" >"$dir/$phase/boot.txt"
}

# chosen SERIES: whether MDTUNE_VM_ONLY selects it (unset: every series). Each word of it is a
# series' exact name (that series only) or else a substring ("backports": both backports series).
chosen() {
  local word names
  [ -n "${MDTUNE_VM_ONLY:-}" ] || return 0
  names=$(awk '{print $1}' "$cache/kernels.list")
  for word in $MDTUNE_VM_ONLY; do
    if grep -qxF -- "$word" <<<"$names"; then
      [ "$1" = "$word" ] && return 0
    else
      case "$1" in *"$word"*) return 0 ;; esac
    fi
  done
  return 1
}

runs=()
while read -r series abi <&3; do
  chosen "$series" || continue
  t_kernel=$SECONDS
  mkdir -p "$work/$series"
  python3 "$here/initramfs.py" --moddir "$(kernel_file "$abi" moddir)" --cache "$cache" --mdtune "$bin" \
    --floor "$floor" --out "$work/$series/initrd.gz" >"$work/$series/modules.txt"
  for phase in ${MDTUNE_VM_BOOTS:-first second auto powercut after-powercut}; do
    case $phase in first | second | auto | powercut | after-powercut) ;; *) echo "tests/vm: MDTUNE_VM_BOOTS: no boot $phase"; echo "0 passed, 1 failed"; exit 1 ;; esac
    boot "$series" "$abi" "$phase"
    runs+=("$work/$series/$phase")
  done
  rm -f "$work/$series"/*.img
  echo "tests/vm: $series ($abi): $((SECONDS - t_kernel)) s for the initramfs and the boots"
done 3<"$cache/kernels.list"
[ ${#runs[@]} -gt 0 ] || { echo "tests/vm: MDTUNE_VM_ONLY=${MDTUNE_VM_ONLY:-} matched no kernel series"; echo "0 passed, 1 failed"; exit 1; }

echo "tests/vm: build and boots took $((SECONDS - t_start)) s (logs in $work)"
# The dracut boot (tests/vm/dracut.sh) on its series, when chosen; its counts join check.py's.
dracut_series=${MDTUNE_DRACUT_SERIES:-bookworm}
if ! chosen "$dracut_series"; then exec python3 "$here/check.py" "${runs[@]}"; fi
trap - ERR
checks=$(python3 "$here/check.py" "${runs[@]}") || true
dracut=$(MDTUNE_VM_BIN=$bin MDTUNE_VM_WORK=$work "$here/dracut.sh" 2>&1) || true
printf '%s\n' "$checks" | sed '$d'
printf '%s\n' "$dracut" | sed '$d'
total=$(printf '%s\n%s\n' "$checks" "$dracut" | awk '/^[0-9]+ passed, [0-9]+ failed$/ {p += $1; f += $3; n++}
  END {if (n < 2) f++; print p " passed, " f " failed"}')
echo "$total"
[ "${total#* passed, }" = "0 failed" ]
