# shellcheck shell=sh
# Helpers of the VM suite's guest scripts (busybox sh), sourced by first.sh and second.sh. They
# assert nothing: tests/vm/check.py reads the records on the host.
#
# Records, written to fd 3 (the second serial port), one per line unless noted:
#   @@FACT key value           what the guest sees (queue counts, CPUs, kernel, layout, files)
#   @@VAL tag mdX/attr value   a sysfs value read by the script itself, not by mdtune
#   @@STEP name rc             a setup command (mdadm ...) and its exit code (its output follows on failure)
#   @@INPUT tag json [args]    what the next mdtune run gets (for reading logs)
#   @@RUN tag rc  ...stdout (several lines)...  @@STDERR ...  @@END tag
#                              one mdtune run: exit code, stdout, stderr (rc 124: still running
#                              after the time limit, see mdt_bounded)
#   @@BLOCK name ... @@ENDBLOCK name
#                              a multi-line text: the system log, udevd's log, strace's summary,
#                              the kernel log's time marks
#   @@AT uptime name           the guest's uptime (seconds) when a step or run starts
#   @@DONE rc                  printed by /init when the script has ended
#
# Drives are found by serial: NVMe serial MDT<i> is $DISK<i> (ETC0, the persistent disk, is
# skipped); virtio-scsi target <i> is $SCSI<i>.

# Device and attribute lists are word-split on purpose; sysfs and /dev names here are plain.
# SC2034: the variables set here (R5, P5, R10, ATTRS ...) are read by the scripts that source it.
# shellcheck disable=SC2086,SC2012,SC2231,SC2034
out() { echo "$*" >&3; }
# at NAME: the guest's uptime when NAME starts, so check.py can say where a boot's time goes.
at() { out "@@AT $(cut -d' ' -f1 /proc/uptime) $1"; }
fact() { k=$1; shift; out "@@FACT $k $*"; }
step() { name=$1; shift; at "$name"; "$@" >/tmp/step.out 2>&1; rc=$?; out "@@STEP $name $rc"; [ $rc -eq 0 ] || cat /tmp/step.out >&3; return $rc; }
# val TAG ARRAY ATTR...: read md/ATTR of ARRAY as the kernel shows it
# (read, not cat: a fork costs tens of milliseconds under TCG)
val() {
  tag=$1; md=$2; shift 2
  for a in "$@"; do
    read -r v </sys/block/$md/md/$a 2>/dev/null || v="(unreadable)"
    out "@@VAL $tag $md/$a $v"
  done
}
block() { name=$1; out "@@BLOCK $name"; cat >&3; out "@@ENDBLOCK $name"; }
# progress ARRAY: waits (at most 30 s) until ARRAY's sync_completed shows sectors done.
progress() {
  i=0
  while [ $i -lt 300 ]; do
    read -r c </sys/block/$1/md/sync_completed
    case ${c%% *} in none | delayed | 0) ;; *) return 0 ;; esac
    sleep 0.1; i=$((i + 1))
  done
  return 1
}
# mark NAME: a time mark in the kernel log (microsecond timestamps; printk.devkmsg=on lifts the
# rate limit). check.py measures between marks.
mark() { echo "@@T $1" >/dev/kmsg; }
record_run() {
  out "@@RUN $1 $2"; cat /tmp/out >&3; echo >&3
  out "@@STDERR"; cat /tmp/err >&3; echo >&3
  out "@@END $1"
}
# mdt TAG JSON [ARGS...]: run mdtune with JSON on stdin (JSON "-" means no stdin)
mdt() {
  tag=$1; json=$2; shift 2
  echo "guest: mdtune run $tag"
  at "$tag"
  out "@@INPUT $tag $json $*"
  if [ "$json" = - ]; then
    timeout 60 mdtune "$@" </dev/null >/tmp/out 2>/tmp/err; rc=$?
  else
    echo "$json" | timeout 60 mdtune "$@" >/tmp/out 2>/tmp/err; rc=$?
  fi
  record_run "$tag" $rc
}
# mdt_bounded TAG SECONDS JSON: like mdt, for a run that might block in the kernel (a sysfs write
# waiting for mdmon is uninterruptible, so timeout(1) cannot end it). Records rc 124 if it is
# still running after SECONDS; the caller then unblocks it (UNBLOCK, a command) and it is reaped.
mdt_bounded() {
  tag=$1; secs=$2; json=$3; unblock=$4
  echo "guest: mdtune run $tag (bounded to $secs s)"
  at "$tag"
  out "@@INPUT $tag $json"
  echo "$json" >/tmp/in
  mdtune </tmp/in >/tmp/out 2>/tmp/err &
  pid=$!; n=0
  while kill -0 $pid 2>/dev/null && [ $n -lt $((secs * 10)) ]; do sleep 0.1; n=$((n + 1)); done
  if kill -0 $pid 2>/dev/null; then
    record_run "$tag" 124
    echo "guest: $tag still running after $secs s; unblocking"
    eval "$unblock"
    wait $pid
  else
    wait $pid; record_run "$tag" $?
  fi
}
# nq DIR: number of numbered queue directories under DIR/mq (0 when none), without a fork.
nq() { set -- $1/mq/[0-9]*; [ -e "$1" ] && echo $# || echo 0; }
# polled NAME: how many of block device NAME's hardware queues are poll queues, as blk-mq's
# debugfs names each (block/NAME/hctx<N>/type: default, read or poll; debugfs is mounted by
# find_disks). sysfs names no queue's type: this is what mdtune's own count is checked against.
polled() {
  p=0
  for t in /sys/kernel/debug/block/$1/hctx*/type; do
    [ -e "$t" ] || continue
    read -r ty <"$t"
    [ "$ty" != poll ] || p=$((p + 1))
  done
  echo $p
}
# leaf NAME: the device whose mq/ holds NAME's queues: NAME itself, or (an NVMe multipath head)
# its first path device.
leaf() {
  d=$1
  if [ -d /sys/block/$d/mq ]; then echo $d; return; fi
  rest=${d#nvme}; sub=${rest%%n*}; ns=${rest##*n}
  for p in /sys/block/nvme${sub}c*n$ns; do [ -d "$p/mq" ] && { echo ${p##*/}; return; }; done
}
# queues NAME: the hardware queues of block device NAME that carry md's I/O (its mq/ entries but
# its poll queues); for an NVMe multipath head, the smallest of its paths'.
queues() {
  d=$1
  if [ -d /sys/block/$d/mq ]; then echo $(($(nq /sys/block/$d) - $(polled $d))); return; fi
  rest=${d#nvme}; sub=${rest%%n*}; ns=${rest##*n}; best=
  for p in /sys/block/nvme${sub}c*n$ns; do
    [ -d "$p/mq" ] || continue
    c=$(($(nq $p) - $(polled ${p##*/})))
    [ -z "$best" ] || [ "$c" -lt "$best" ] && best=$c
  done
  echo "${best:-0}"
}
# find_disks: DISK<i> for NVMe serial MDT<i>, SCSI<i> for virtio-scsi target i; facts for each:
# its queues that carry md's I/O, and its (or its first path's) mq/ entries and poll queues.
find_disks() {
  mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
  fact debugfs "$(ls /sys/kernel/debug/block 2>/dev/null | wc -l)"
  fact nvme.split "$(dmesg | grep -o 'nvme[0-9]*: [0-9]*/[0-9]*/[0-9]* default/read/poll' | tr '\n' ' ')"
  for p in /sys/block/nvme*n*; do
    d=${p##*/}
    case $d in *c*) continue ;; esac
    read -r serial <$p/device/serial 2>/dev/null || serial=
    case $serial in MDT*) eval "DISK${serial#MDT}=$d" ;; esac
  done
  for p in /sys/block/sd*; do
    [ -e "$p" ] || continue
    for h in $p/device/scsi_disk/*; do
      hctl=${h##*/}; t=${hctl#*:*:}; t=${t%%:*}
      eval "SCSI$t=${p##*/}"
    done
  done
  i=0
  while [ $i -le 20 ]; do
    eval "d=\${DISK$i:-}"
    if [ -n "$d" ]; then
      fact disk.$i "$d"
      fact queues.$i "$(queues $d)"
      l=$(leaf $d)
      fact mqdirs.$i "$(nq /sys/block/$l)"
      fact pollq.$i "$(polled $l)"
      fact headmq.$i "$([ -d /sys/block/$d/mq ] && echo yes || echo no)"
    fi
    i=$((i + 1))
  done
  for i in 0 1 2; do
    eval "d=\${SCSI$i:-}"
    [ -n "$d" ] || continue
    fact scsi.$i "$d"
    fact scsiqueues.$i "$(queues $d)"
    fact rotational.$i "$(cat /sys/block/$d/queue/rotational)"
  done
}
facts() {
  fact kernel "$(uname -r)"
  fact phase "$PHASE"
  fact cpus "$(grep -c ^processor /proc/cpuinfo)"
  fact online "$(cat /sys/devices/system/cpu/online)"
  fact nodes.possible "$(cat /sys/devices/system/node/possible 2>&1)"
  fact nodes.has_cpu "$(cat /sys/devices/system/node/has_cpu 2>/dev/null)"
  fact cpu.isolated "$(cat /sys/devices/system/cpu/isolated 2>/dev/null)"
  fact multipath "$(cat /sys/module/nvme_core/parameters/multipath 2>&1)"
  find_disks
  fact paths "$(ls /sys/block | tr '\n' ' ')"
}
# start_udevd: systemd-udevd as Debian's initramfs runs it, its log (info and up) to /tmp/udevd.log.
start_udevd() {
  at start-udevd
  env -u MDADM_NO_UDEV SYSTEMD_LOG_TARGET=console SYSTEMD_LOG_LEVEL=info /lib/systemd/systemd-udevd --resolve-names=never \
    >/tmp/udevd.log 2>&1 &
  i=0
  while [ ! -S /run/udev/control ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  fact udevd.version "$(udevadm --version)"
  fact udevd.control "$([ -S /run/udev/control ] && echo yes || echo no)"
}
# settle: returns once udevd has handled every uevent the kernel sent before it. A bare
# "udevadm settle" can return before udevd has read the last of them from its socket (it did
# once in CI, just after a coldplug): so first a change event for /dev/null, waited for by its
# own id. udevd reads the socket in order, so by then it holds every earlier event in its queue,
# and "udevadm settle" waits for that queue to empty. Only with udevd running (no one would handle
# the event), and given at most 60 s, as udevadm settle is.
settle() {
  at settle
  [ -S /run/udev/control ] && timeout 60 udevadm trigger --settle --action=change /sys/class/mem/null
  udevadm settle --timeout=60
}
syslog_block() { block "syslog.$1" </tmp/messages; }
# The R5/P5/R10 member lists of md0, md2, md1 (set after find_disks).
members_012() {
  R5="/dev/$DISK0 /dev/$DISK1 /dev/$DISK2"
  P5="/dev/${DISK3}p1 /dev/${DISK4}p1 /dev/${DISK5}p1"
  R10="/dev/$DISK6 /dev/$DISK7 /dev/${DISK3}p2 /dev/${DISK4}p2"
}
ATTRS="group_thread_cnt stripe_cache_size sync_speed_max sync_speed_min"
export MDADM_NO_UDEV=1
syslogd -O /tmp/messages -s 0 2>/dev/null || syslogd -O /tmp/messages
touch /tmp/messages

# The stacked layouts both boots build on DISK8-DISK10 (docs/auto.md): md3, a raid5 over dm-linear
# devices on their first partitions, and md4, a raid5 over the raid1 arrays md11-md13 of their
# other partitions. The first boot sees them on plain NVMe disks, the second on multipath heads.
stacked_layouts() {
  table() { echo "0 $(blockdev --getsz $1) linear $1 0"; }
  for i in 8 9 10; do
    eval "d=\$DISK$i"
    step dm-mdt$i dmsetup create --noudevsync mdt$i --table "$(table /dev/${d}p1)"
  done
  dmsetup mknodes
  step create-md3 mdadm --create /dev/md3 --run --level=5 --raid-devices=3 --chunk=64 --assume-clean --metadata=1.2 \
    /dev/mapper/mdt8 /dev/mapper/mdt9 /dev/mapper/mdt10
  step create-md11 mdadm --create /dev/md11 --run --level=1 --raid-devices=2 --assume-clean --metadata=1.2 /dev/${DISK8}p2 /dev/${DISK9}p2
  step create-md12 mdadm --create /dev/md12 --run --level=1 --raid-devices=2 --assume-clean --metadata=1.2 /dev/${DISK10}p2 /dev/${DISK8}p3
  step create-md13 mdadm --create /dev/md13 --run --level=1 --raid-devices=2 --assume-clean --metadata=1.2 /dev/${DISK9}p3 /dev/${DISK10}p3
  step create-md4 mdadm --create /dev/md4 --run --level=5 --raid-devices=3 --chunk=64 --assume-clean --metadata=1.2 /dev/md11 /dev/md12 /dev/md13
}
