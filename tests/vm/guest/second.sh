#!/bin/sh
# The VM suite's second boot (nvme_core.multipath=Y, two NUMA nodes), run by /init after a real
# reboot: the md members of md0-md2 and the persistent /etc (mdadm.conf, the persisted state and
# rule, /usr/local/sbin/mdtune) are the first boot's. Records: lib.sh.
#   r2   md0 is assembled first, with no udevd, as the initramfs assembles a root array before the
#        real root (and /etc) is mounted; then systemd-udevd starts and the devices are triggered
#        with "add" as the real root's systemd-udev-trigger.service does (coldplug): mdadm's rules
#        assemble md1 and md2 and the persisted rule tunes them, and md0, before anything here looks.
#   y1   auto on NVMe multipath heads (whole and partitions): the queues are on hidden path devices;
#        the default max is online CPUs / possible NUMA nodes.
#   y11  dm-linear on partitions of multipath heads, and raid5 over raid1 arrays of such partitions.

# Device and attribute lists are word-split on purpose; sysfs and /dev names here are plain.
# shellcheck disable=SC2086 source=lib.sh
. /guest/lib.sh
at script-start
step r2-initramfs-md0 mdadm --assemble /dev/md0
# A host's boot triggers every device; only block devices matter to md, and under TCG the rest
# (PCI, memory blocks, CPUs, ...) would cost seconds.
start_udevd
udevadm trigger --type=subsystems --action=add --subsystem-match=block
udevadm trigger --type=devices --action=add --subsystem-match=block
settle
facts
members_012
fact r2.mdstat "$(tr '\n' ' ' </proc/mdstat)"
val r2 md0 $ATTRS; val r2 md2 $ATTRS skip_copy; val r2 md1 sync_speed_min
fact r2.persisted "$(tr '\n' ' ' </etc/mdtune/mdtune.json 2>&1)"
syslog_block r2

# --- y1: auto on multipath heads, NUMA default max ------------------------------------------------
mdt y1raw '{"arrays":[{"name":"md0"},{"name":"md2"}],"thread_policy":{"mode":"auto","max":64}}'
val y1raw.after md0 group_thread_cnt; val y1raw.after md2 group_thread_cnt
mdt y1 '{"arrays":[{"name":"md0"},{"name":"md2"}],"thread_policy":"auto"}'
val y1.after md0 group_thread_cnt; val y1.after md2 group_thread_cnt

# --- y11: dm-linear and nested arrays on partitions of multipath heads ----------------------------
stacked_layouts
mdt y11 '{"arrays":[{"name":"md3"},{"name":"md4"}],"thread_policy":{"mode":"auto","max":64}}'
for md in md3 md4; do val y11.after $md group_thread_cnt; done
grep -iE 'mdtune|fail|error' /tmp/udevd.log | block udevd
out "@@FACT final.mdstat $(tr '\n' ' ' </proc/mdstat)"
mdadm --stop --scan >/dev/null 2>&1
at script-end
exit 0
