#!/bin/sh
# The VM suite's third boot (docs/auto.md on a real kernel), run by /init: a KVM-guest-like host
# with 5 vCPUs on NUMA node 0, node 1 with memory and no CPUs, isolcpus=4 nohz_full=3, and
# virtio-blk disks with several virtqueues. Records: lib.sh. In order:
#   a1  auto with max 64 on md30 (raid5 over virtio-blk disks, queue/rotational 1, 5 virtqueues
#       each) and md33 (raid5 over the raid1 arrays md31, with a 1-queue spare, and md32, with a
#       failed 1-queue member): the raw queue counts;
#   a2  the default auto on md30: capped at the CPUs open to unbound work / nodes with CPUs;
#   a3  md34, a raid5 whose first member is a dm-multipath map that then loses its only path
#       (table with no path groups, queue_if_no_path): no write, a warning;
#   a4  a revert that must restore a preread_bypass_threshold above the restored stripe cache;
#   a6  md35, a raid5 over three NVMe drives whose 8 queue pairs nvme.write_queues=2
#       nvme.poll_queues=2 split 2/4/2 default/read/poll: the poll queues are not counted (debugfs
#       names each queue's type, which sysfs does not);
#   a7  the same array with a member whose bad blocks md has not acknowledged yet
#       (faulty,in_sync,blocked): it still counts.
#
# Disks by serial (virtio-blk's serial file): V0-V2 5 queues (md30); V3, V4 3 queues, 2 partitions
# (md31, md32); V5 1 queue, 2 partitions (md31's spare, md32's failed member); V6 3 queues (the
# multipath map's path); V7, V8 3 queues (md34's other members). NVMe MDT0-MDT2: md35.

# shellcheck disable=SC2086,SC2010,SC2012,SC2231,SC2154,SC1091
. /guest/lib.sh
at script-start
facts
for p in /sys/block/vd*; do
  # virtio-blk's serial has no newline, so read(1) would say it failed.
  serial=$(cat $p/serial 2>/dev/null)
  [ -n "$serial" ] || continue
  d=${p##*/}
  eval "$serial=$d"
  fact vd.$serial "$d"
  fact vdqueues.$serial "$(nq $p)"
  fact vdrotational.$serial "$(cat $p/queue/rotational)"
  fact vddevice.$serial "$(basename "$(readlink $p/device)") $(basename "$(readlink $p/device/subsystem)")"
done
fact cpu.nohz_full "$(cat /sys/devices/system/cpu/nohz_full 2>/dev/null)"
fact wq.cpumask "$(cat /sys/devices/virtual/workqueue/cpumask 2>/dev/null)"

# --- arrays --------------------------------------------------------------------------------------
step create-md30 mdadm --create /dev/md30 --run --level=5 --raid-devices=3 --chunk=64 --assume-clean --metadata=1.2 \
  /dev/$V0 /dev/$V1 /dev/$V2
step create-md31 mdadm --create /dev/md31 --run --level=1 --raid-devices=2 --assume-clean --metadata=1.2 /dev/${V3}1 /dev/${V4}1
step spare-md31 mdadm /dev/md31 --add /dev/${V5}1
step create-md32 mdadm --create /dev/md32 --run --level=1 --raid-devices=3 --assume-clean --metadata=1.2 \
  /dev/${V3}2 /dev/${V4}2 /dev/${V5}2
step fail-md32 mdadm /dev/md32 --fail /dev/${V5}2
step create-md33 mdadm --create /dev/md33 --run --level=5 --raid-devices=2 --chunk=64 --assume-clean --metadata=1.2 \
  /dev/md31 /dev/md32
for md in md31 md32; do
  fact $md.roles "$(for r in /sys/block/$md/md/dev-*; do echo "${r##*dev-}=$(cat $r/state)"; done | tr '\n' ' ')"
  fact $md.slaves "$(ls /sys/block/$md/slaves | tr '\n' ' ')"
done
# The raid5 workqueue exists once raid456 runs an array; WQ_SYSFS shows its own cpumask.
fact wq.raid5wq "$(cat /sys/devices/virtual/workqueue/raid5wq/cpumask 2>/dev/null)"

# --- a1, a2: virtio-blk, nested roles, the CPU ceiling -----------------------------------------
mdt a1 '{"arrays":[{"name":"md30"},{"name":"md33"}],"thread_policy":{"mode":"auto","max":64}}'
val a1.after md30 group_thread_cnt; val a1.after md33 group_thread_cnt
mdt a2 '{"arrays":[{"name":"md30"}]}'
val a2.after md30 group_thread_cnt

# --- a3: a dm-multipath map with no paths left under md34 --------------------------------------
size=$(blockdev --getsz /dev/$V6)
dev=$(cat /sys/block/$V6/dev)
step dm-mpath dmsetup create --noudevsync mpnone \
  --table "0 $size multipath 1 queue_if_no_path 0 1 1 round-robin 0 1 1 $dev 1"
dmsetup mknodes
# Without udev, /dev/mapper/mpnone is a node, not a link: find dm-N by its dm/name.
MP=
for d in /sys/block/dm-*; do [ "$(cat $d/dm/name 2>/dev/null)" = mpnone ] && MP=${d##*/}; done
fact a3.dm "$MP"
step create-md34 mdadm --create /dev/md34 --run --level=5 --raid-devices=3 --chunk=64 --assume-clean --metadata=1.2 \
  /dev/mapper/mpnone /dev/$V7 /dev/$V8
echo 2 >/sys/block/md34/md/group_thread_cnt
sleep 1
# Every path gone: a table with no path groups, I/O queued (SAN or NVMe-oF outage).
step dm-nopaths dmsetup load mpnone --table "0 $size multipath 1 queue_if_no_path 0 0 0"
step dm-nopaths-resume dmsetup resume --noudevsync mpnone
fact a3.slaves "$(ls /sys/block/$MP/slaves | tr '\n' ' ')"
fact a3.mq "$(nq /sys/block/$MP)"
fact a3.table "$(dmsetup table mpnone)"
val a3.before md34 group_thread_cnt
mdt a3 '{"arrays":[{"name":"md34"}]}'
val a3.after md34 group_thread_cnt
# The path back, so nothing waits at the end of the boot.
step dm-path-back dmsetup load mpnone --table "0 $size multipath 1 queue_if_no_path 0 1 1 round-robin 0 1 1 $dev 1"
step dm-path-back-resume dmsetup resume --noudevsync mpnone

# --- a4: a revert that restores a threshold above the restored cache ---------------------------
# The kernel allows it: raid5_set_cache_size never looks at the threshold.
echo 2048 >/sys/block/md30/md/stripe_cache_size
echo 1500 >/sys/block/md30/md/preread_bypass_threshold
echo 256 >/sys/block/md30/md/stripe_cache_size
val a4.before md30 stripe_cache_size preread_bypass_threshold
mdt a4a '{"arrays":[{"name":"md30","stripe_cache_size":4096,"preread_bypass_threshold":3000}]}'
val a4a.after md30 stripe_cache_size preread_bypass_threshold
mdt a4b '{"state":"reverted"}'
val a4b.after md30 stripe_cache_size preread_bypass_threshold group_thread_cnt
val a4b.after md33 group_thread_cnt

# --- a6: NVMe poll queues carry none of md's I/O -----------------------------------------------
step create-md35 mdadm --create /dev/md35 --run --level=5 --raid-devices=3 --chunk=64 --assume-clean --metadata=1.2 \
  /dev/$DISK0 /dev/$DISK1 /dev/$DISK2
for i in 0 1 2; do
  eval "d=\$DISK$i"
  fact hctx.$i "$(for t in /sys/kernel/debug/block/$d/hctx*/type; do h=${t%/type}; read -r ty <$t; printf '%s=%s ' "${h##*/hctx}" "$ty"; done)"
done
mdt a6 '{"arrays":[{"name":"md35"}],"thread_policy":{"mode":"auto","max":64},"check_mode":true}'

# --- a7: a member with unacknowledged bad blocks ------------------------------------------------
# md takes bad blocks written here unacknowledged (ubb_store) and acknowledges them when it next
# writes the superblock; nothing writes to md35 before the run, so its state reads
# faulty,in_sync,blocked meanwhile (state_show).
echo "2048 8" >/sys/block/md35/md/dev-$DISK1/unacknowledged_bad_blocks
fact a7.state "$(cat /sys/block/md35/md/dev-$DISK1/state)"
mdt a7 '{"arrays":[{"name":"md35"}],"thread_policy":{"mode":"auto","max":64},"check_mode":true}'
fact a7.state.after "$(cat /sys/block/md35/md/dev-$DISK1/state)"

out "@@FACT final.mdstat $(tr '\n' ' ' </proc/mdstat)"
mdadm --stop --scan >/dev/null 2>&1
dmsetup remove --noudevsync mpnone >/dev/null 2>&1
at script-end
exit 0
