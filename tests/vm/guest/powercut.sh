#!/bin/sh
# The VM suite's power-cut boot (docs/reliability.md, "Durable persistence"), run by
# /init on a fresh persistent /etc disk (ext4, mounted as init mounts it: the kernel's defaults,
# data=ordered with delayed allocation and a 5 s journal commit). Records: lib.sh.
#   pc   md0, a raid5 on drives 0-2, named in mdadm.conf; everything on the /etc disk so far is
#        synced; then one `persist: true` run sets values other than the live ones, and the
#        moment it has exited the kernel is crashed (sysrq c: a panic, and with panic=-1 and
#        QEMU's -no-reboot the machine is gone). Nothing runs in between that writes or syncs a
#        disk: only the run's records go out on the serial port (drained, so they reach the host)
#        and a kernel log mark. What mdtune did not make durable itself is lost, as in a power
#        cut; after-powercut.sh boots from the same disks and looks.

# Device and attribute lists are word-split on purpose; sysfs and /dev names here are plain.
# shellcheck disable=SC2086 source=lib.sh
. /guest/lib.sh
at script-start
facts
R5="/dev/$DISK0 /dev/$DISK1 /dev/$DISK2"
step create-md0 mdadm --create /dev/md0 --run --level=5 --raid-devices=3 --chunk=64 --assume-clean --metadata=1.2 $R5
mdadm --detail --scan >/etc/mdadm/mdadm.conf
fact pc.mount "$(grep ' /persist ' /proc/mounts)"
val pc.before md0 stripe_cache_size sync_speed_max group_thread_cnt
# Only mdtune's own writes may be at stake: /init's copy of /etc, mdadm.conf, the directories.
step pc-sync sync

# kmark NAME: a time mark the console shows (level 3), next to the panic's own line.
kmark() { echo "<3>@@T $1" >/dev/kmsg; }
PC='{"arrays":[{"name":"md0","stripe_cache_size":4096,"sync_speed_max":30000}],"persist":true,"diff":true}'
at pc
out "@@INPUT pc $PC"
kmark pc.start
echo "$PC" | timeout 60 mdtune >/tmp/out 2>/tmp/err
rc=$?
kmark pc.exit
record_run pc $rc
out "@@FACT pc.crash now"
# tcsetattr(TCSADRAIN): returns once the serial port has sent every byte written to it, so the
# records above reach the host before the machine stops. It touches no disk.
stty -echo <&3
echo c >/proc/sysrq-trigger
# Not reached when the crash works.
out "@@FACT pc.crash failed: still running after sysrq c"
exit 1
