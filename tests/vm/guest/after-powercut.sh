#!/bin/sh
# The VM suite's boot after the power cut (powercut.sh), run by /init from the same disks: the
# /etc disk as the crash left it (init's mount replays ext4's journal) and md0's members. Records:
# lib.sh. The persisted files are sent to the host byte for byte (base64) before anything reads
# or writes them; then systemd-udevd starts and every block device gets "add" (the real root's
# coldplug): mdadm's rules assemble md0 and the persisted rule, if it survived, puts the values
# back. Last, a query of the persisted input asks mdtune whether each file holds what a persist
# of that input writes.

# SC2012: ls -la is only shown, for reading logs.
# shellcheck disable=SC2012 source=lib.sh
. /guest/lib.sh
at script-start
facts
fact pc.journal "$(dmesg | grep -E 'EXT4-fs .*(recover|orphan)' | tr '\n' ' ')"
fact pc.listing "$(ls -la /etc/mdtune /etc/udev/rules.d /usr/local/sbin 2>&1 | tr '\n' ' ')"
# pc_file NAME PATH: the file's size and bytes (base64), or "missing".
pc_file() {
  if [ -f "$2" ]; then fact "pc.file.$1" "$(wc -c <"$2") $(base64 -w0 "$2")"; else fact "pc.file.$1" missing; fi
}
pc_file state /etc/mdtune/mdtune.json
pc_file manifest /etc/mdtune/installed.json
pc_file rule /etc/udev/rules.d/90-mdtune.rules
fact pc.binary "$(wc -c </usr/local/sbin/mdtune 2>&1) $(cmp /usr/bin/mdtune /usr/local/sbin/mdtune 2>&1 && echo same)"

start_udevd
udevadm trigger --type=subsystems --action=add --subsystem-match=block
udevadm trigger --type=devices --action=add --subsystem-match=block
settle
fact pc.mdstat "$(tr '\n' ' ' </proc/mdstat)"
val pc.after md0 stripe_cache_size sync_speed_max group_thread_cnt
syslog_block pc
grep -iE 'mdtune|fail|error' /tmp/udevd.log | block udevd
mdt pcq '{"state":"query","arrays":[{"name":"md0","stripe_cache_size":4096,"sync_speed_max":30000}],"persist":true}'
mdadm --stop --scan >/dev/null 2>&1
at script-end
exit 0
