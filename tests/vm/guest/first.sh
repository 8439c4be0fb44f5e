#!/bin/sh
# The VM suite's first boot (nvme_core.multipath=N), run by /init. Builds real md arrays on the
# emulated drives, runs mdtune against the live sysfs and reports on fd 3 (records: lib.sh). In order:
#   s1-s10   the core contract on md0 (raid5, whole drives), md2 (raid5, partitions) and md1 (raid10)
#   i1-i7    the layouts real hosts have: dm-linear on partitions, raid5 over raid1 arrays, spare/journal/
#            failed member, rotational and non-rotational virtio-scsi next to NVMe, a negative
#            speed_limit_max, a running reshape (and, with udev running, IMSM with and without mdmon);
#            i8 a rollback that must restore the stripe cache before the preread threshold
#   q15      (one kernel series) query's time and system calls on these arrays, real sysfs, next to
#            the floor program (both its ways) that reads only what query's answer needs
#   b1       a sync boost on md1's resync: in force while it runs, the earlier limits back after
#            one tick once it ends, a second tick changes nothing
#   p1       a run during a check of md0, with I/O on md0, pauses the check around the
#            writes and resumes it where it stood; d1 sync_io_depth (6.16+) and the unit of a
#            raid10's sync limits
#   k1, k2   a pause that always ends: a run killed (SIGKILL) between its freeze of md0's check
#            and the resume leaves it frozen and recorded, named by --verify and --metrics, and
#            mdtune --tick resumes it where it stood; a run sent SIGTERM mid-pause rolls back,
#            resumes the check and exits 1
#   m1-m3    the effect, measured: --measure against md0's own stat, a change measured under a
#            steady dd load (throughput decides) and during a throttled check (the sync decides)
#   h1, h2   health: md6 with a failed member reads degraded; a check of md5 run to its end is
#            recorded whole with its mismatch_cnt by the tick that sees it end
#   u1-u6    the udev replay with a real systemd-udevd and mdadm's rules: incremental assembly re-tuned by
#            the persisted rule, a boot-time resync the rule pauses and resumes, change
#            events during a resync and for an inactive array, revert, re-assembly straight after
#            persist, the rule's time per event
# It ends with a persisted state (u4) that the second boot finds applied after a real reboot.
#
# Arrays (drive i = QEMU's NVMe drive with serial MDTi): md0 raid5 on drives 0-2, md2 raid5 on the
# first partitions of 3-5, md1 raid10 on 6, 7 and the second partitions of 3, 4 (resync throttled
# so it still runs in s5); see run.sh for the other drives.

# Device and attribute lists are word-split on purpose; sysfs and /dev names here are plain.
# shellcheck disable=SC2086,SC2010,SC2012 source=lib.sh
. /guest/lib.sh
at script-start
facts
members_012

# --- arrays --------------------------------------------------------------------------------------
step create-md0 mdadm --create /dev/md0 --run --level=5 --raid-devices=3 --chunk=64 --assume-clean --metadata=1.2 $R5
step create-md2 mdadm --create /dev/md2 --run --level=5 --raid-devices=3 --chunk=64 --assume-clean --metadata=1.2 $P5
# Keep md1's resync running through scenario 5: the system limits apply until md1 gets its own
# (md throttles only above speed_limit_min, so both go down).
echo 100 >/proc/sys/dev/raid/speed_limit_min
echo 100 >/proc/sys/dev/raid/speed_limit_max
step create-md1 mdadm --create /dev/md1 --run --level=10 --raid-devices=4 --metadata=1.2 $R10
# As on a host: mdadm.conf names the arrays, so udev's incremental assembly (u1, the second boot)
# brings them back as md0, md1, md2.
mdadm --detail --scan >/etc/mdadm/mdadm.conf
fact mdadm.conf "$(tr '\n' ' ' </etc/mdadm/mdadm.conf)"
val setup md0 level group_thread_cnt stripe_cache_size
val setup md2 level group_thread_cnt
val setup md1 level sync_action

# --- 2a. values already in place are not written (first: needs arrays never written) ----------
# A stripe_cache_size write, even of the value in place, marks a clean array dirty, so the first
# one on a fresh array moves the superblock's event count from 0 to 2 (seen on 6.1 and 6.12; later
# dirty/clean cycles may net to nothing). md0 gets a run whose values are all in place; md2 gets a
# same-value write by hand, the control that shows the count would have moved.
events() { mdadm --detail /dev/$1 | sed -n 's/^ *Events : *//p'; }
fact events.before.md0 "$(events md0)"
fact events.before.md2 "$(events md2)"
mdt s2same '{"arrays":[{"name":"md0","stripe_cache_size":256,"group_thread_cnt":0,"sync_speed_max":"system"}]}'
echo 256 >/sys/block/md2/md/stripe_cache_size
sleep 1
fact events.after.md0 "$(events md0)"
fact events.after.md2 "$(events md2)"

# --- 1. auto: group_thread_cnt = hardware queues (whole disks and partitions) -------------------
# First without the CPU clamp (max 64), so the raw queue count shows, then the default auto.
val s1raw.before md0 group_thread_cnt; val s1raw.before md2 group_thread_cnt
mdt s1raw "{\"arrays\":[{\"name\":\"md0\"},{\"name\":\"md2\"}],\"thread_policy\":{\"mode\":\"auto\",\"max\":64}}"
val s1raw.after md0 group_thread_cnt; val s1raw.after md2 group_thread_cnt
mdt s1 '{"arrays":[{"name":"md0"},{"name":"md2"}],"thread_policy":"auto"}'
val s1.after md0 group_thread_cnt; val s1.after md2 group_thread_cnt

# --- 2. a second identical run changes nothing ---------------------------------------------------
mdt s2 '{"arrays":[{"name":"md0"},{"name":"md2"}],"thread_policy":"auto"}'
val s2.after md0 group_thread_cnt; val s2.after md2 group_thread_cnt

# --- 3. check mode writes nothing ----------------------------------------------------------------
val s3.before md0 $ATTRS
mdt s3 '{"arrays":[{"name":"md0","stripe_cache_size":1024,"group_thread_cnt":1,"sync_speed_max":12345}],"check_mode":true}'
val s3.after md0 $ATTRS

# --- 4. sync_speed_max: number -> "N (local)", idempotent, "system" -> "(system)" ----------------
mdt s4a '{"arrays":[{"name":"md0","sync_speed_max":50000}]}'
val s4a.after md0 sync_speed_max
mdt s4b '{"arrays":[{"name":"md0","sync_speed_max":50000}]}'
val s4b.after md0 sync_speed_max
mdt s4c '{"arrays":[{"name":"md0","sync_speed_max":"system"}]}'
val s4c.after md0 sync_speed_max
fact speed_limit_max.s4 "$(cat /proc/sys/dev/raid/speed_limit_max)"

# --- 5. raid10: glob skips raid456 settings, exact name fails, sync limits tuned mid-resync ------
val s5.before md1 sync_action sync_completed
val s5.before md0 stripe_cache_size; val s5.before md2 stripe_cache_size
mdt s5a '{"arrays":[{"name":"md*","stripe_cache_size":512}]}'
val s5a.after md0 stripe_cache_size; val s5a.after md2 stripe_cache_size
mdt s5b '{"arrays":[{"name":"md1","stripe_cache_size":512}]}'
mdt s5c '{"arrays":[{"name":"md1","sync_speed_min":500,"sync_speed_max":2000}]}'
val s5c.after md1 sync_speed_min sync_speed_max sync_action
echo 1000 >/proc/sys/dev/raid/speed_limit_min
echo 200000 >/proc/sys/dev/raid/speed_limit_max

# --- b1: a sync boost that ends with md1's resync (docs/reference.md §2, sync_boost). md1 still
# resyncs, throttled at s5c's 2000 KiB/s; the boost lifts it until the resync ends, then one tick
# puts s5c's limits back and a second changes nothing.
val b1.before md1 sync_action sync_speed_min sync_speed_max
mdt b1a '{"arrays":[{"name":"md1","sync_speed_min":500,"sync_speed_max":2000,"sync_boost":{"sync_speed_min":1000000,"sync_speed_max":2000000}}]}'
val b1a.after md1 sync_speed_min sync_speed_max
fact b1a.record "$(cat /run/mdtune/boost-md1.json 2>&1)"
i=0
while [ $i -lt 250 ]; do
  read -r a </sys/block/md1/md/sync_action
  [ "$a" = idle ] && break
  sleep 0.1; i=$((i + 1))
done
fact b1.waited "$i"
val b1.ended md1 sync_action sync_speed_min sync_speed_max
mdt b1t1 - --tick
val b1t1.after md1 sync_speed_min sync_speed_max
fact b1t1.records "$(ls /run/mdtune/boost-* 2>/dev/null)"
mdt b1t2 - --tick
val b1t2.after md1 sync_speed_min sync_speed_max

# --- 6. out-of-range values are refused, the kernel keeps its value -----------------------------
val s6.before md0 group_thread_cnt stripe_cache_size
mdt s6a '{"arrays":[{"name":"md0","group_thread_cnt":9000}]}'
mdt s6b '{"arrays":[{"name":"md0","stripe_cache_size":16}]}'
val s6.after md0 group_thread_cnt stripe_cache_size

# --- 7. state: query reports compliance, writes nothing ----------------------------------------
D7='"arrays":[{"name":"md0","stripe_cache_size":2048,"sync_speed_max":40000}]'
val s7.before md0 $ATTRS
mdt s7a "{$D7,\"state\":\"query\"}"
val s7a.after md0 $ATTRS
mdt s7b "{$D7}"
val s7b.after md0 $ATTRS
mdt s7c "{$D7,\"state\":\"query\"}"

# --- 8. stop + re-assemble resets the kernel's values; the next run restores them ---------------
step stop-md0 mdadm --stop /dev/md0
step assemble-md0 mdadm --assemble /dev/md0 $R5
val s8.before md0 $ATTRS
mdt s8 "{$D7}"
val s8.after md0 $ATTRS

# --- 9. persistence: persist, re-assemble, apply as the udev rule does --------------------------
D9='{"arrays":[{"name":"md2","stripe_cache_size":4096,"sync_speed_max":30000}],"persist":true}'
mdt s9a "$D9"
val s9a.after md2 $ATTRS
fact persist.files "$(find /etc/mdtune /etc/udev /usr/local/sbin -type f 2>/dev/null | tr '\n' ' ')"
fact persist.rule "$(cat /etc/udev/rules.d/*mdtune* 2>/dev/null | grep -v '^#' | tr '\n' ' ')"
step stop-md2 mdadm --stop /dev/md2
step assemble-md2 mdadm --assemble /dev/md2 $P5
val s9.reassembled md2 $ATTRS
# As the rule runs it (no udevd yet; u1-u6 below have one): the installed copy when there is one.
fact udev.binary "$(command -v mdtune)"
mdt s9b - --udev md2
val s9b.after md2 $ATTRS
fact log.s9b "$(grep -c 'mdtune' /tmp/messages)"
fact log.s9b.text "$(grep 'mdtune' /tmp/messages | tr '\n' ' ')"
# A repeated change event (udev's watch option): reads only, so nothing to log.
mdt s9c - --udev md2
val s9c.after md2 $ATTRS
fact log.s9c "$(grep -c 'mdtune' /tmp/messages)"

# --- 10. revert: the values saved before the first change come back, persisted files go -------
mdt s10a '{"state":"reverted"}'
val s10a.after md0 $ATTRS; val s10a.after md2 $ATTRS; val s10a.after md1 sync_speed_min sync_speed_max
fact revert.files "$(find /etc/mdtune /etc/udev/rules.d /usr/local/sbin -type f 2>/dev/null | tr '\n' ' ')"
mdt s10b '{"state":"reverted"}'

# --- p1: a run during a check pauses it around the writes that suspend the array -----
# md0 runs a check, throttled by its own sync_speed_max so that it lasts about 15 s, while a
# loop reads and writes md0 with O_DIRECT (counted in /tmp/p1.io, replaced by a rename so that a
# reader never finds it empty; a failed dd in /tmp/p1.err).
# mdtune sets group_thread_cnt and skip_copy: the check is paused (kernel log: "md0: data-check
# interrupted", from 6.7 "md0: check interrupted") and resumes at sync_min, no earlier than where
# it stood before. Then the check is let go, and the values must still be in force after it ended.
echo 2000 >/sys/block/md0/md/sync_speed_max
echo check >/sys/block/md0/md/sync_action
step p1-progress progress md0
rm -f /tmp/p1.stop; : >/tmp/p1.err; echo 0 >/tmp/p1.io
(
  n=0
  while [ ! -e /tmp/p1.stop ]; do
    at=$((n % 64 * 4))
    dd if=/dev/md0 of=/dev/null bs=64k count=4 skip=$at iflag=direct 2>/dev/null || echo "read $n" >>/tmp/p1.err
    dd if=/dev/zero of=/dev/md0 bs=64k count=4 seek=$at oflag=direct conv=notrunc 2>/dev/null || echo "write $n" >>/tmp/p1.err
    n=$((n + 1)); echo $n >/tmp/p1.io.new && mv /tmp/p1.io.new /tmp/p1.io
  done
) &
p1io=$!
sleep 1
fact p1.io.before "$(cat /tmp/p1.io)"
val p1.before md0 sync_action sync_completed sync_min group_thread_cnt skip_copy
mdt p1 '{"arrays":[{"name":"md0","group_thread_cnt":2,"skip_copy":true}]}'
val p1.after md0 sync_action sync_min sync_completed group_thread_cnt skip_copy
fact p1.io.after "$(cat /tmp/p1.io)"
sleep 2
val p1.later md0 sync_action sync_completed
fact p1.io.later "$(cat /tmp/p1.io)"
touch /tmp/p1.stop; wait $p1io
fact p1.io.errors "$(tr '\n' ' ' </tmp/p1.err)"
echo system >/sys/block/md0/md/sync_speed_max
i=0; while [ "$(cat /sys/block/md0/md/sync_action)" != idle ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
val p1.end md0 sync_action last_sync_action mismatch_cnt group_thread_cnt skip_copy
dmesg | grep -E 'md0: (data-)?check|check of RAID array md0' | block p1.dmesg
echo 0 >/sys/block/md0/md/group_thread_cnt
echo 0 >/sys/block/md0/md/skip_copy

# --- k1, k2: a pause that always ends (docs/reference.md §4). md0 checks again, throttled by its
# own sync limits to 500 KiB/s (about a minute for the 32 MiB drives; md throttles only above
# sync_speed_min), and the check is stopped once both are done. The kernel path strace -P names
# is resolved by strace (to /sys/devices/virtual/block/md0/...), so it matches mdtune's writes
# through its descriptors. k1: strace skips mdtune's second write to md0's sync_action, the
# resume after "frozen" (error=EINTR), and kills it (SIGKILL): the check stays frozen, recorded
# in /run/mdtune/pause-md0.json; --verify and --metrics name it; the next run resumes it from
# where it stood (mdtune --tick where this binary has it, else a writing run that changes
# nothing else). k2: strace sends SIGTERM as mdtune's first write to md0's group_thread_cnt
# returns: the run puts the value back, resumes the check at once, removes the record, exit 1.
SA=/sys/block/md0/md/sync_action
echo 100 >/sys/block/md0/md/sync_speed_min
echo 500 >/sys/block/md0/md/sync_speed_max
echo check >$SA
step k-progress progress md0
val k1.before md0 sync_action sync_completed sync_min group_thread_cnt
at k1
out "@@INPUT k1 {\"arrays\":[{\"name\":\"md0\",\"group_thread_cnt\":2}]} (strace: SIGKILL at the 2nd write to $SA)"
echo '{"arrays":[{"name":"md0","group_thread_cnt":2}]}' | timeout 60 strace -f -qq -o /tmp/k1.strace -P $SA \
  -e trace=write -e inject=write:error=EINTR:signal=KILL:when=2 mdtune >/tmp/out 2>/tmp/err
record_run k1 $?
block k1.strace </tmp/k1.strace
val k1.killed md0 sync_action sync_completed sync_min group_thread_cnt
fact k1.record "$(cat /run/mdtune/pause-md0.json 2>&1)"
mdt k1verify - --verify
mdtune --metrics >/tmp/k1.metrics 2>&1
fact k1.metrics.rc $?
grep -E '^mdtune_array_sync_(frozen|action)\{array="md0"' /tmp/k1.metrics | block k1.metrics
if mdtune --help 2>&1 | grep -q -- --tick; then
  fact k1.resumer tick
  mdt k1resume - --tick --root /
else
  fact k1.resumer run
  mdt k1resume '{"arrays":[{"name":"md0","group_thread_cnt":2}]}'
fi
val k1.resumed md0 sync_action sync_min sync_completed group_thread_cnt
fact k1.record.after "$(ls /run/mdtune/pause-* 2>/dev/null)"
sleep 2
val k1.later md0 sync_action sync_completed
# k2 needs the check running: if k1's check was not resumed, it is restarted by hand (k1 fails).
if [ "$(cat $SA)" != check ]; then
  fact k2.restarted "$(cat $SA)"
  echo check >$SA
  progress md0
fi
val k2.before md0 sync_action sync_completed sync_min group_thread_cnt
at k2
out "@@INPUT k2 {\"arrays\":[{\"name\":\"md0\",\"group_thread_cnt\":1}]} (strace: SIGTERM at the 1st write to group_thread_cnt)"
echo '{"arrays":[{"name":"md0","group_thread_cnt":1}]}' | timeout 60 strace -f -qq -o /tmp/k2.strace \
  -P /sys/block/md0/md/group_thread_cnt -e trace=write -e inject=write:signal=TERM:when=1 mdtune >/tmp/out 2>/tmp/err
record_run k2 $?
val k2.after md0 sync_action sync_min sync_completed group_thread_cnt
fact k2.records "$(ls /run/mdtune/pause-* 2>/dev/null)"
block k2.strace </tmp/k2.strace
echo idle >$SA
i=0; while [ "$(cat /sys/block/md0/md/sync_completed)" != none ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
echo 0 >/sys/block/md0/md/sync_min
echo system >/sys/block/md0/md/sync_speed_min
echo system >/sys/block/md0/md/sync_speed_max
echo 0 >/sys/block/md0/md/group_thread_cnt

# --- m1-m3: the effect, measured (docs/reference.md §2 measure, §3 effect). md0 serves a steady
# O_DIRECT load (a dd loop reading and writing 256 KiB at a time). m2: mdtune --measure --json for
# 3 s between two reads of /sys/block/md0/stat by the guest (its bytes must match their growth);
# m1: group_thread_cnt 0 -> 2 measured 2 s before and after. m3: md0 checks (throttled to 2000
# KiB/s), group_thread_cnt 0 -> 2 pauses it; the sync's speed decides, measured once it runs again.
rm -f /tmp/m.stop
(
  n=0
  while [ ! -e /tmp/m.stop ]; do
    at=$((n % 64 * 4))
    dd if=/dev/md0 of=/dev/null bs=64k count=4 skip=$at iflag=direct 2>/dev/null
    dd if=/dev/zero of=/dev/md0 bs=64k count=4 seek=$at oflag=direct conv=notrunc 2>/dev/null
    n=$((n + 1))
  done
) &
mio=$!
sleep 1
read -r s </sys/block/md0/stat; fact m2.stat.before "$s"
mdt m2 - --measure --seconds 3 --json md0
read -r s </sys/block/md0/stat; fact m2.stat.after "$s"
val m1.before md0 group_thread_cnt
mdt m1 '{"arrays":[{"name":"md0","group_thread_cnt":2}],"measure":2}'
val m1.after md0 group_thread_cnt
touch /tmp/m.stop; wait $mio
echo 0 >/sys/block/md0/md/group_thread_cnt
echo 2000 >/sys/block/md0/md/sync_speed_max
echo check >$SA
step m3-progress progress md0
mdt m3 '{"arrays":[{"name":"md0","group_thread_cnt":2}],"measure":2}'
val m3.after md0 sync_action group_thread_cnt
echo idle >$SA
i=0; while [ "$(cat /sys/block/md0/md/sync_completed)" != none ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
echo 0 >/sys/block/md0/md/sync_min
echo system >/sys/block/md0/md/sync_speed_max
echo 0 >/sys/block/md0/md/group_thread_cnt

# --- d1: sync_io_depth (6.16+) per array and system-wide, and the unit of md1's
# (raid10) sync limits. On a kernel with the file: set, read back, "system" restores; without:
# a glob skips it with a reason, an exact name and the top-level key are refused (exit 2).
fact d1.sysctl "$(cat /proc/sys/dev/raid/sync_io_depth 2>/dev/null || echo none)"
val d1.before md1 sync_io_depth layout raid_disks
mdt d1a '{"arrays":[{"name":"md1*","sync_io_depth":64,"sync_speed_max":40000}],"thread_policy":"off"}'
val d1a.after md1 sync_io_depth sync_speed_max
mdt d1b '{"arrays":[{"name":"md1","sync_io_depth":64}],"sync_io_depth":48}'
val d1b.after md1 sync_io_depth
fact d1b.sysctl "$(cat /proc/sys/dev/raid/sync_io_depth 2>/dev/null || echo none)"
mdt d1c '{"arrays":[{"name":"md1","sync_io_depth":"system","sync_speed_max":"system"}],"sync_io_depth":32}'
val d1c.after md1 sync_io_depth sync_speed_max
fact d1c.sysctl "$(cat /proc/sys/dev/raid/sync_io_depth 2>/dev/null || echo none)"
# Before 6.16 d1c is refused whole: md1's sync_speed_max goes back by hand.
echo system >/sys/block/md1/md/sync_speed_max

# === the layouts real hosts have ========================================================
# i1 dm-linear on NVMe partitions as md members (md3), and raid5 over raid1 arrays of partitions
# (md4 over md11-md13). i2 md6: 3 active members with 3 queues, and on a 1-queue drive a write
# journal, a failed member and a spare (recovery frozen so it stays a spare). i4 md5: rotational
# virtio-scsi disk, non-rotational one and NVMe (partitions); md8: non-rotational virtio-scsi disks
# and NVMe. Every SCSI disk counts one queue (its mq/ is the virtio-scsi host's).
stacked_layouts
step create-md6 mdadm --create /dev/md6 --run --level=5 --raid-devices=4 --chunk=64 --assume-clean --metadata=1.2 \
  /dev/$DISK11 /dev/$DISK12 /dev/$DISK13 /dev/${DISK14}p3 --write-journal /dev/${DISK14}p2
step fail-md6 mdadm /dev/md6 --fail /dev/${DISK14}p3
echo frozen >/sys/block/md6/md/sync_action
step spare-md6 mdadm /dev/md6 --add /dev/${DISK14}p1
fact md6.roles "$(for r in /sys/block/md6/md/dev-*; do echo "${r##*dev-}=$(cat $r/state)"; done | tr '\n' ' ')"
step create-md5 mdadm --create /dev/md5 --run --level=5 --raid-devices=3 --chunk=64 --assume-clean --metadata=1.2 \
  /dev/${SCSI0}1 /dev/${SCSI1}1 /dev/${DISK20}p1
step create-md8 mdadm --create /dev/md8 --run --level=5 --raid-devices=3 --chunk=64 --assume-clean --metadata=1.2 \
  /dev/${SCSI1}2 /dev/${DISK20}p2 /dev/$SCSI2
I11='{"arrays":[{"name":"md3"},{"name":"md4"},{"name":"md6"},{"name":"md5"},{"name":"md8"}],"thread_policy":{"mode":"auto","max":64}}'
mdt i11 "$I11"
for md in md3 md4 md6 md5 md8; do val i11.after $md group_thread_cnt; done

# i7 a negative speed_limit_max (a C int; -1 is accepted by the kernel) must not abort the run.
echo system >/sys/block/md0/md/sync_speed_max
echo -1 >/proc/sys/dev/raid/speed_limit_max
fact neg.limit "$(cat /proc/sys/dev/raid/speed_limit_max)"
val neg.before md0 sync_speed_max
mdt i7a '{"state":"query"}'
mdt i7b '{"arrays":[{"name":"md0","sync_speed_max":"system"}],"speed_limit_max":200000}'
fact neg.after "$(cat /proc/sys/dev/raid/speed_limit_max)"
echo 200000 >/proc/sys/dev/raid/speed_limit_max

# i8 rollback in dependency order (docs/reference.md §4, Applying): md0's stripe_cache_size and
# preread_bypass_threshold are lowered, then md2's sync_speed_max cannot be written (a read-only
# file bind-mounted over it: EROFS). The rollback must restore md0's cache before its threshold,
# which the kernel refuses above the live cache.
echo 4096 >/sys/block/md0/md/stripe_cache_size
echo 2000 >/sys/block/md0/md/preread_bypass_threshold
echo system >/sys/block/md2/md/sync_speed_max
mkdir -p /tmp/i8ro
printf '200000 (system)\n' >/tmp/i8ro/speed
# busybox's remount finds the mount point in /proc/mounts by its real path (sys/block/md2 is a link)
ro=$(readlink -f /sys/block/md2/md/sync_speed_max)
if m=$(mount -o bind /tmp/i8ro/speed "$ro" 2>&1 && mount -o remount,ro,bind "$ro" 2>&1); then
  fact i8.rofile ok
  mdt i8 '{"arrays":[{"name":"md0","stripe_cache_size":512,"preread_bypass_threshold":100},{"name":"md2","sync_speed_max":50000}]}'
else
  fact i8.rofile "bind mount failed: $m"
fi
umount "$ro" 2>/dev/null
val i8.after md0 stripe_cache_size preread_bypass_threshold

# q15, on one kernel series: query's time and system calls on real sysfs next to the
# floor program (bench/floor/sysfs_floor.rs, /usr/bin/sysfs_floor), which reads only the files and
# lists only the directories query's answer needs, in its two ways of counting a disk's queues:
# "floor" lists mq/, "links" (--mq-links) takes mq/'s link count, as mdtune does. All get the
# benchmark's job: its three settings on md* (bench/bench.py), root /. First one run of each,
# recorded, so check.py can show they found the same arrays and members (this also warms sysfs's
# inodes for all); then 7 rounds, the order rotated every round, each run between two kernel log
# marks (microseconds); then one run of each under strace -f -c.
if grep -qw vm.strace=1 /proc/cmdline; then
  Q15_ATTRS="group_thread_cnt stripe_cache_size sync_speed_max"
  Q15='{"state":"query","arrays":[{"name":"md*","group_thread_cnt":4,"stripe_cache_size":4096,"sync_speed_max":500000}]}'
  echo "$Q15" >/tmp/q15.json
  fact q15.arrays "$(ls -d /sys/block/md*/md | wc -l)"
  # q15_run mdtune|floor|links: one run; stdin from a file (no pipe, no extra fork).
  q15_run() {
    case $1 in
      mdtune) mdtune </tmp/q15.json ;;
      floor) sysfs_floor / $Q15_ATTRS ;;
      links) sysfs_floor --mq-links / $Q15_ATTRS ;;
    esac
  }
  mdt q15 "$Q15"
  for who in floor links; do
    q15_run $who >/tmp/floor.out 2>/tmp/floor.err; rc=$?
    fact q15.$who.rc "$rc $(tr '\n' ' ' </tmp/floor.err)"
    block q15.$who </tmp/floor.out
  done
  at q15-timed
  rcs=
  for n in 1 2 3 4 5 6 7; do
    case $((n % 3)) in 1) order="mdtune floor links" ;; 2) order="floor links mdtune" ;; *) order="links mdtune floor" ;; esac
    for who in $order; do
      mark "q15.$who.$n.start"; q15_run $who >/dev/null 2>&1; rc=$?; mark "q15.$who.$n.end"
      rcs="$rcs $who.$n=$rc"
    done
  done
  fact q15.rcs "$rcs"
  # strace and its tracee on one vCPU: under TCG every stop handed between two vCPUs costs
  # milliseconds (the counts do not depend on it).
  at q15-strace
  taskset 1 strace -f -c -o /tmp/strace.mdtune mdtune </tmp/q15.json >/dev/null 2>&1
  fact q15.mdtune.strace.rc $?
  taskset 1 strace -f -c -o /tmp/strace.floor sysfs_floor / $Q15_ATTRS >/dev/null 2>&1
  fact q15.floor.strace.rc $?
  taskset 1 strace -f -c -o /tmp/strace.links sysfs_floor --mq-links / $Q15_ATTRS >/dev/null 2>&1
  fact q15.links.strace.rc $?
  for who in mdtune floor links; do block q15.$who.strace </tmp/strace.$who; done
fi

# i5 a running reshape: md7 raid5 grown from 3 to 4 members, throttled by its own sync_speed_max.
# While it runs, group_thread_cnt, skip_copy and a lower stripe_cache_size are held back; a run
# after it ended applies them.
step create-md7 mdadm --create /dev/md7 --run --level=5 --raid-devices=3 --chunk=64 --assume-clean --metadata=1.2 \
  /dev/${DISK15}p1 /dev/${DISK15}p2 /dev/${DISK16}p1
echo 1000 >/sys/block/md7/md/sync_speed_max
echo 1024 >/sys/block/md7/md/stripe_cache_size
step add-md7 mdadm /dev/md7 --add /dev/${DISK16}p2
step grow-md7 mdadm --grow /dev/md7 --raid-devices=4 --backup-file=/tmp/md7.backup
sleep 1
val i5.before md7 sync_action reshape_position group_thread_cnt stripe_cache_size skip_copy
I5='{"arrays":[{"name":"md7","stripe_cache_size":300,"skip_copy":true}]}'
mdt i5a "$I5"
val i5a.after md7 sync_action reshape_position group_thread_cnt stripe_cache_size skip_copy
echo system >/sys/block/md7/md/sync_speed_max
i=0
while [ $i -lt 1200 ]; do
  [ "$(cat /sys/block/md7/md/sync_action)" = idle ] && [ "$(cat /sys/block/md7/md/reshape_position)" = none ] && break
  sleep 0.1; i=$((i + 1))
done
fact i5.wait.ds $i
val i5.ended md7 sync_action reshape_position raid_disks
mdt i5b "$I5"
val i5b.after md7 group_thread_cnt stripe_cache_size skip_copy

# --- h1, h2: the on-call page's health (docs/operations.md). h1: md6 (raid5) has a member
# failed by mdadm --fail (i2): the metrics read it degraded, and its frozen recovery frozen by
# something other than mdtune. h2: a check of md5 run to its end is recorded whole, with its
# mismatch_cnt, by the tick that sees it end (a first tick sees it run: throttled until then).
mdtune --metrics >/tmp/h1.metrics 2>&1
fact h1.metrics.rc $?
grep -E '^mdtune_array_(degraded|sync_frozen)\{array="md6"' /tmp/h1.metrics | block h1.metrics
val h1.md6 md6 degraded sync_action
mdt h2base - --tick --root /
echo 2000 >/sys/block/md5/md/sync_speed_max
echo check >/sys/block/md5/md/sync_action
mdt h2running - --tick --root /
val h2.running md5 sync_action sync_min sync_max
echo system >/sys/block/md5/md/sync_speed_max
i=0; while [ "$(cat /sys/block/md5/md/sync_action)" != idle ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
val h2.done md5 sync_action last_sync_action mismatch_cnt sync_min
mdt h2end - --tick --root /
fact h2.record "$(tr -d '\n' </var/lib/mdtune/checks.json 2>&1)"
mdtune --metrics >/tmp/h2.metrics 2>&1
grep -E '^mdtune_array_last_check_(end_timestamp_seconds|mismatch_sectors)\{array="md5"' /tmp/h2.metrics | block h2.metrics

# === with udev: systemd-udevd, mdadm's rules and (u*) the rule persist installs ==================
start_udevd
udevadm monitor --udev --subsystem-match=block >/tmp/monitor.log 2>&1 &

# i6 IMSM (Intel VROC metadata) without the platform: container on drives 17-19, raid5 volume.
# md/uuid reads all zeros; the uuid comes from udev's md-uuid-* link. stripe_cache_size is written
# only while mdmon runs for the container; without mdmon it is skipped, and the run never hangs.
export IMSM_NO_PLATFORM=1
step imsm-container mdadm --create /dev/md/imsm0 --run --metadata=imsm --raid-devices=3 /dev/$DISK17 /dev/$DISK18 /dev/$DISK19
step imsm-volume mdadm --create /dev/md/vol0 --run --level=5 --raid-devices=3 --chunk=64 --size=16M --assume-clean /dev/md/imsm0
settle
VOL=$(basename "$(readlink -f /dev/md/vol0)")
CONT=$(basename "$(readlink -f /dev/md/imsm0)")
fact imsm.vol "$VOL"
fact imsm.container "$CONT"
fact imsm.mduuid "$(cat /sys/block/$VOL/md/uuid 2>&1)"
fact imsm.links "$(ls /dev/disk/by-id/ | grep md-uuid | tr '\n' ' ')"
fact imsm.export "$(mdadm --detail --export /dev/$VOL | tr '\n' ' ')"
fact imsm.mdmon.before "$(pidof mdmon)"
val i6.before $VOL array_state stripe_cache_size metadata_version
mdt_bounded i6a 20 "{\"arrays\":[{\"name\":\"$VOL\",\"stripe_cache_size\":1024}]}" "mdmon --all"
val i6a.after $VOL array_state stripe_cache_size
# shellcheck disable=SC2046 # one word per pid (busybox sh has no arrays)
kill $(pidof mdmon) 2>/dev/null
i=0; while pidof mdmon >/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
fact imsm.mdmon.stopped "$(pidof mdmon || echo none)"
val i6.nomdmon $VOL array_state stripe_cache_size
mdt_bounded i6b 20 "{\"arrays\":[{\"name\":\"$VOL\",\"stripe_cache_size\":2048}]}" "mdmon --all"
val i6b.after $VOL array_state stripe_cache_size
mdmon --all >/dev/null 2>&1
unset IMSM_NO_PLATFORM

# u1 persist, stop md0-md2, "udevadm trigger --action=add" on their members: mdadm's rules assemble
# them incrementally and the persisted rule re-applies every value, one write per setting at most.
DU='{"arrays":[{"name":"md0","stripe_cache_size":1024,"sync_speed_min":2000},{"name":"md2","stripe_cache_size":4096,"skip_copy":true},{"name":"md1","sync_speed_min":3000}],"persist":true}'
mdt u1a "$DU"
val u1a.after md0 $ATTRS; val u1a.after md2 $ATTRS skip_copy; val u1a.after md1 sync_speed_min
udevadm test --action=change /sys/block/md0 >/tmp/udevtest 2>&1
fact u1.udevtest.mdtune "$(grep -c 'mdtune --udev' /tmp/udevtest)"
settle
for md in md0 md2 md1; do step u1-stop-$md mdadm --stop /dev/$md; done
settle
fact u1.stopped "$(ls /sys/block | grep -E '^md[012]$' | tr '\n' ' ')"
val u1.stopped-md2 md2 array_state
# udevd 252 looks for changed rules at most every 3 s; u1 is not about that (u4 is).
udevadm control --reload
mark u1.trigger
fact log.at.u1 "$(wc -l </tmp/messages)"
# shellcheck disable=SC2046 # one word per device path
udevadm trigger --action=add $(for dev in $R5 $P5 $R10; do echo /sys/class/block/${dev#/dev/}; done)
settle
mark u1.settled
val u1.after md0 $ATTRS; val u1.after md2 $ATTRS skip_copy; val u1.after md1 sync_speed_min
fact log.at.u1end "$(wc -l </tmp/messages)"
fact u1.mdstat "$(tr '\n' ' ' </proc/mdstat)"

# u3 a boot-time resync: md2 re-assembled with a resync, as after an unclean shutdown,
# while udev holds its events back until the resync runs, then plays them, as a boot's coldplug
# meets such an array: the rule pauses the resync around group_thread_cnt and skip_copy and
# resumes it, and the values are in force. Then a change event during the resync and one for an
# inactive array: no error, exit 0. The resync runs at 500 KiB/s (md throttles only above
# speed_limit_min), so that it lasts about 30 s: udev's events take up to 10 s under TCG.
echo 100 >/proc/sys/dev/raid/speed_limit_min
echo 500 >/proc/sys/dev/raid/speed_limit_max
step u3-stop-md2 mdadm --stop /dev/md2
settle
fact log.at.u3 "$(wc -l </tmp/messages)"
udevadm control --stop-exec-queue
step u3-resync-md2 mdadm --assemble /dev/md2 --update=resync $P5
step u3-progress progress md2
val u3.resync md2 sync_action sync_completed group_thread_cnt skip_copy stripe_cache_size
udevadm control --start-exec-queue
settle
val u3.replayed md2 sync_action sync_completed group_thread_cnt skip_copy stripe_cache_size
dmesg | grep -E 'md2: resync|resync of RAID array md2' | block u3.dmesg
udevadm trigger --action=change /sys/block/md2
settle
val u3.after-change md2 sync_action
mdt u3a - --udev md2
step u3-stop-md0 mdadm --stop /dev/md0
settle
step u3-incremental mdadm -I /dev/$DISK0
val u3.inactive md0 array_state
udevadm trigger --action=change /sys/block/md0
settle
mdt u3b - --udev md0
val u3.inactive-after md0 array_state
step u3-stop-inactive mdadm --stop /dev/md0
settle
step u3-assemble-md0 mdadm --assemble /dev/md0 $R5
settle
echo 1000 >/proc/sys/dev/raid/speed_limit_min
echo 200000 >/proc/sys/dev/raid/speed_limit_max

# u5 after a revert the rule is gone: a re-assembly keeps the kernel defaults and "udevadm test"
# shows no mdtune command.
mdt u5a '{"state":"reverted"}'
fact u5.rules "$(ls /etc/udev/rules.d/ | tr '\n' ' ')"
step u5-stop-md0 mdadm --stop /dev/md0
settle
step u5-assemble-md0 mdadm --assemble /dev/md0 $R5
settle
val u5.reassembled md0 $ATTRS
udevadm test --action=change /sys/block/md0 >/tmp/udevtest 2>&1
fact u5.udevtest.mdtune "$(grep -c 'mdtune --udev' /tmp/udevtest)"
fact u5.udevtest.lines "$(wc -l </tmp/udevtest)"

# u4 a re-assembly straight after persist, no pause: tuned. This is also the state the second
# boot must find applied. udevd 252 looks for changed rule files when an event comes in, at most
# every 3 s: the event just before persist makes it look now, so without a reload requested by
# persist the re-assembly's events would still run the old rules (none).
fact log.at.u4 "$(wc -l </tmp/messages)"
udevadm trigger --action=change /sys/block/md2
mdt u4a "$DU"
step u4-stop-md0 mdadm --stop /dev/md0
step u4-assemble-md0 mdadm --assemble /dev/md0 $R5
settle
val u4.after md0 $ATTRS
val u4.after md2 $ATTRS skip_copy

# u6 the rule's run time per change event that changes nothing: udev's whole event (mdadm's
# rules included) and the mdtune command alone, timed by kernel log marks.
for n in 1 2 3 4 5; do
  mark "u6.event.$n.start"; udevadm trigger --settle --action=change /sys/block/md0; mark "u6.event.$n.end"
done
for n in 1 2 3 4 5 6 7 8 9 10; do
  mark "u6.run.$n.start"; /usr/local/sbin/mdtune --udev md0 >/dev/null 2>&1; mark "u6.run.$n.end"
done
val u6.after md0 $ATTRS
syslog_block end
# Only what the checks read: serial output is slow under TCG.
grep -iE 'mdtune|fail|error' /tmp/udevd.log | block udevd
grep -E '/md[0-9]+ ' /tmp/monitor.log | block monitor
dmesg | grep '@@T ' | block marks
out "@@FACT final.mdstat $(tr '\n' ' ' </proc/mdstat)"
# Clean shutdown of what the second boot assembles: md0-md2 stay on disk, with /etc.
mdadm --stop --scan >/dev/null 2>&1
at script-end
exit 0
