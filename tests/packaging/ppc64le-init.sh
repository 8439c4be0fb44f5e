#!/bin/sh
# /init of the ppc64le guest tests/packaging/ppc64le-vm.sh boots (busybox sh): loads the modules
# /lib/modules/order lists, waits for the 4 NVMe namespaces, builds md0 (raid5) over them and
# runs mdtune against the real sysfs: query, present, the kernel's own group_thread_cnt, present
# again. Each result is a line "@@TAG ..." on the console, which ppc64le_guest.py results reads.
/bin/busybox --install -s /bin
export PATH=/usr/sbin:/sbin:/bin
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
done_() { echo "@@DONE $1"; sync; poweroff -f; }
while read -r m; do insmod "/lib/modules/$m.ko" || { echo "insmod $m failed"; done_ 90; }; done </lib/modules/order
namespaces() { set -- /sys/block/nvme[0-9]n1; [ -e "$1" ] && echo $# || echo 0; }
i=0
while [ "$(namespaces)" -lt 4 ]; do
  i=$((i + 1)); [ $i -lt 600 ] || { echo "the 4 NVMe namespaces did not appear"; done_ 91; }; sleep 0.1
done
echo "@@KERNEL $(uname -m) $(uname -r), $(grep -c ^processor /proc/cpuinfo) CPUs"
# Debian's kernel has native NVMe multipath: nvme0n1 is then a head without mq/, and its queues
# are those of the path device nvme0c0n1 under the controller.
queues() { set -- /sys/class/nvme/nvme0/nvme0*n1/mq/[0-9]*; echo $#; }
echo "@@QUEUES $(queues) $(cd /sys/class/nvme/nvme0 && echo nvme0*n1)"
mdadm --create /dev/md0 --run --assume-clean --level=5 --raid-devices=4 --metadata=1.2 \
  --name=hana_data /dev/nvme0n1 /dev/nvme1n1 /dev/nvme2n1 /dev/nvme3n1 >/dev/null 2>&1 ||
  { echo "mdadm --create failed"; done_ 92; }
echo "@@LEVEL $(cat /sys/block/md0/md/level) threads=$(cat /sys/block/md0/md/group_thread_cnt)"
echo '{"state": "query", "thread_policy": "auto"}' | mdtune >/tmp/q; echo "@@QUERY $? $(cat /tmp/q)"
echo '{"thread_policy": "auto", "arrays": [{"name": "md0"}]}' | mdtune >/tmp/a; echo "@@APPLY $? $(cat /tmp/a)"
echo "@@SYSFS $(cat /sys/block/md0/md/group_thread_cnt)"
echo '{"thread_policy": "auto", "arrays": [{"name": "md0"}]}' | mdtune >/tmp/b; echo "@@AGAIN $? $(cat /tmp/b)"
done_ 0
