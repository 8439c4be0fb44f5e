#!/bin/sh
# The VM suite's guest side (busybox sh, run by /init). Builds real md arrays on the emulated
# NVMe drives, runs mdtune against the live sysfs and reports what happened on fd 3 (the second
# serial port). It asserts nothing itself: tests/vm/check.py reads these records on the host.
#
# Records, one per line unless noted:
#   @@FACT key value           what the guest sees (queue counts, CPUs, kernel, layout)
#   @@VAL tag mdX/attr value   a sysfs value read by the script itself, not by mdtune
#   @@STEP name rc             a setup command (mdadm ...) and its exit code
#   @@INPUT tag json [args]    what the next mdtune run gets (for reading logs)
#   @@RUN tag rc  ...stdout (several lines)...  @@STDERR ...  @@END tag
#                              one mdtune run: exit code, stdout, stderr
#   @@DONE rc                  printed by /init when this script has ended
#
# Arrays (drive i is QEMU's drive with serial MDTi): md0 raid5 on whole drives 0-2, md2 raid5 on
# the first partitions of drives 3-5, md1 raid10 on drives 6, 7 and the second partitions of
# drives 3, 4 (its resync throttled so that it is still running in scenario 5).

# Device and attribute lists are word-split on purpose; sysfs and /dev names here are plain.
# shellcheck disable=SC2086,SC2010,SC2012,SC2231,SC2154,SC1091
out() { echo "$*" >&3; }
fact() { k=$1; shift; out "@@FACT $k $*"; }
step() { name=$1; shift; "$@" >/tmp/step.out 2>&1; rc=$?; out "@@STEP $name $rc"; [ $rc -eq 0 ] || cat /tmp/step.out >&3; }
# val TAG ARRAY ATTR...: read md/ATTR of ARRAY as the kernel shows it
val() { tag=$1; md=$2; shift 2; for a in "$@"; do out "@@VAL $tag $md/$a $(cat /sys/block/$md/md/$a 2>&1)"; done; }
# mdt TAG JSON [ARGS...]: run mdtune with JSON on stdin (JSON "-" means no stdin)
mdt() {
  tag=$1; json=$2; shift 2
  echo "scenarios: mdtune run $tag"
  out "@@INPUT $tag $json $*"
  if [ "$json" = - ]; then
    timeout 60 mdtune "$@" </dev/null >/tmp/out 2>/tmp/err; rc=$?
  else
    echo "$json" | timeout 60 mdtune "$@" >/tmp/out 2>/tmp/err; rc=$?
  fi
  out "@@RUN $tag $rc"; cat /tmp/out >&3; echo >&3
  out "@@STDERR"; cat /tmp/err >&3; echo >&3
  out "@@END $tag"
}
# hw queue count of NVMe namespace $1 (nvmeXnY): its own mq/, else the smallest of its paths' mq/
queues() {
  d=$1
  if [ -d /sys/block/$d/mq ]; then ls -d /sys/block/$d/mq/[0-9]* | wc -l; return; fi
  rest=${d#nvme}; sub=${rest%%n*}; ns=${rest##*n}; best=
  for p in /sys/block/nvme${sub}c*n$ns; do
    [ -d "$p/mq" ] || continue
    c=$(ls -d $p/mq/[0-9]* | wc -l)
    [ -z "$best" ] || [ "$c" -lt "$best" ] && best=$c
  done
  echo "${best:-0}"
}

# Kernel names follow probe order, not QEMU's -device order: find drive i by its serial MDTi.
for d in $(ls /sys/block | grep -E '^nvme[0-9]+n[0-9]+$'); do
  serial=$(tr -d ' ' </sys/block/$d/device/serial 2>/dev/null)
  case $serial in MDT[0-7]) eval "DISK${serial#MDT}=$d" ;; esac
done
R5="/dev/$DISK0 /dev/$DISK1 /dev/$DISK2"
P5="/dev/${DISK3}p1 /dev/${DISK4}p1 /dev/${DISK5}p1"
R10="/dev/$DISK6 /dev/$DISK7 /dev/${DISK3}p2 /dev/${DISK4}p2"
ATTRS="group_thread_cnt stripe_cache_size sync_speed_max sync_speed_min"

# --- facts -------------------------------------------------------------------------------------
fact kernel "$(uname -r)"
fact cpus "$(grep -c ^processor /proc/cpuinfo)"
fact multipath "$(cat /sys/module/nvme_core/parameters/multipath 2>&1)"
for i in 0 1 2 3 4 5 6 7; do
  eval "d=\${DISK$i:-}"
  fact disk.$i "$d"
  [ -n "$d" ] || continue
  fact queues.$i "$(queues $d)"
  fact headmq.$i "$([ -d /sys/block/$d/mq ] && echo yes || echo no)"
done
fact paths "$(ls /sys/block | tr '\n' ' ')"
fact devs "$(ls /dev | grep nvme | tr '\n' ' ')"

# --- arrays --------------------------------------------------------------------------------------
export MDADM_NO_UDEV=1
step create-md0 mdadm --create /dev/md0 --run --level=5 --raid-devices=3 --chunk=64 --assume-clean --metadata=1.2 $R5
step create-md2 mdadm --create /dev/md2 --run --level=5 --raid-devices=3 --chunk=64 --assume-clean --metadata=1.2 $P5
# Keep md1's resync running through scenario 5: the system limit applies until md1 gets its own.
echo 1000 >/proc/sys/dev/raid/speed_limit_max
step create-md1 mdadm --create /dev/md1 --run --level=10 --raid-devices=4 --metadata=1.2 $R10
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
echo 200000 >/proc/sys/dev/raid/speed_limit_max

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
# As the rule runs it: the installed copy when there is one (PATH starts with /usr/local/sbin).
fact udev.binary "$(command -v mdtune)"
mdt s9b - --udev md2
val s9b.after md2 $ATTRS
fact kmsg.s9b "$(dmesg | grep -c 'mdtune')"
fact kmsg.s9b.text "$(dmesg | grep 'mdtune' | tr '\n' ' ')"
# A repeated change event (udev's watch option): reads only, so nothing to log.
mdt s9c - --udev md2
val s9c.after md2 $ATTRS
fact kmsg.s9c "$(dmesg | grep -c 'mdtune')"

# --- 10. revert: the values saved before the first change come back, persisted files go -------
mdt s10a '{"state":"reverted"}'
val s10a.after md0 $ATTRS; val s10a.after md2 $ATTRS; val s10a.after md1 sync_speed_min sync_speed_max
fact revert.files "$(find /etc/mdtune /etc/udev/rules.d /usr/local/sbin -type f 2>/dev/null | tr '\n' ' ')"
mdt s10b '{"state":"reverted"}'

out "@@FACT final.mdstat $(cat /proc/mdstat | tr '\n' ' ')"
exit 0
