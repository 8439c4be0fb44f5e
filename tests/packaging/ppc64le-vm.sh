#!/usr/bin/env bash
# Boots Debian's ppc64le kernel (linux-image-powerpc64le) under qemu-system-ppc64 -M pseries
# (TCG: emulated, slow) with 4 CPUs and four emulated NVMe drives of 3 I/O queues each, builds
# an md raid5 over them with mdadm, and runs the ppc64le mdtune binary given on the command line
# against the real sysfs:
#   1. query with the auto policy: not compliant, md0's members have more than one hardware queue;
#   2. present: group_thread_cnt becomes the members' queue count, 3 (not the 4 CPUs), and the
#      kernel's own md/group_thread_cnt file says so afterwards;
#   3. present again: changed false (idempotent on a real kernel).
#
#   tests/packaging/ppc64le-vm.sh BINARY
#
# Kernel, busybox-static, mdadm and mdadm's libraries (all ppc64el) come from
# ${MDTUNE_PACKAGING_CACHE:-.cache/packaging}/ppc64el, filled by .ci/setup-packaging.sh.
# The guest's console is in target/packaging/ppc64le-vm.log.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "${1:?usage: ppc64le-vm.sh BINARY}")
cache=${MDTUNE_PACKAGING_CACHE:-$PWD/.cache/packaging}/ppc64el
die() { echo "ppc64le-vm: $*" >&2; exit 1; }
[ -s "$cache/kernel.abi" ] || die "no ppc64el kernel in $cache: run .ci/setup-packaging.sh"
command -v qemu-system-ppc64 >/dev/null || die "qemu-system-ppc64 missing: run .ci/setup-packaging.sh"
command -v cpio >/dev/null || die "cpio missing: run .ci/setup-packaging.sh"
abi=$(cat "$cache/kernel.abi")
root=$cache/root
kernel=$root/boot/vmlinux-$abi
moddir=$root/lib/modules/$abi
file -b "$bin" | grep -q '64-bit PowerPC' || die "$bin is not a ppc64 binary: $(file -b "$bin")"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log=$PWD/target/packaging/ppc64le-vm.log
mkdir -p "$(dirname "$log")"

# --- initramfs ------------------------------------------------------------------------------------
ird=$tmp/initrd
mkdir -p "$ird"/{bin,sbin,lib/modules,lib64,proc,sys,dev,run,tmp,etc,usr/sbin}
cp "$root/bin/busybox" "$ird/bin/busybox"
ln -s busybox "$ird/bin/sh"
cp "$root/sbin/mdadm" "$ird/sbin/mdadm"
mkdir -p "$ird/lib/powerpc64le-linux-gnu"
for lib in ld64.so.2 libc.so.6 libcap.so.2 libudev.so.1; do
  f=$(find "$root/lib/powerpc64le-linux-gnu" "$root/usr/lib/powerpc64le-linux-gnu" -name "$lib" | head -n1)
  [ -n "$f" ] || die "$lib not found under $root"
  cp -L "$f" "$ird/lib/powerpc64le-linux-gnu/$lib"
done
ln -s ../lib/powerpc64le-linux-gnu/ld64.so.2 "$ird/lib64/ld64.so.2"
cp "$bin" "$ird/usr/sbin/mdtune"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$ird/etc/passwd"
printf 'root:x:0:\ndisk:x:6:\n' >"$ird/etc/group"
# The modules raid456 and nvme need, dependencies first (read from each module's depends= field).
# crc32c_generic: libcrc32c (for raid456) asks the crypto API for crc32c when it loads (softdep).
python3 - "$moddir" "$ird/lib/modules" nvme crc32c_generic raid456 <<'EOF'
import os, re, shutil, sys
moddir, dest, wanted = sys.argv[1], sys.argv[2], sys.argv[3:]
files = {}
for d, _, fs in os.walk(moddir):
    for f in fs:
        if f.endswith(".ko"):
            files[f[:-3].replace("-", "_")] = os.path.join(d, f)
order = []
def visit(name):
    key = name.replace("-", "_")
    if key in order:
        return
    if key not in files:
        sys.exit(f"module {name} not found in {moddir}")
    data = open(files[key], "rb").read()
    m = re.search(rb"\0depends=([^\0]*)\0", data)
    for dep in (m.group(1).decode().split(",") if m else []):
        if dep:
            visit(dep)
    order.append(key)
    shutil.copy(files[key], os.path.join(dest, key + ".ko"))
for w in wanted:
    visit(w)
open(os.path.join(dest, "order"), "w").write("\n".join(order) + "\n")
EOF
cat >"$ird/init" <<'EOF'
#!/bin/sh
/bin/busybox --install -s /bin
export PATH=/usr/sbin:/sbin:/bin
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
done_() { echo "@@DONE $1"; sync; poweroff -f; }
while read -r m; do insmod "/lib/modules/$m.ko" || { echo "insmod $m failed"; done_ 90; }; done </lib/modules/order
i=0
while [ "$(ls /sys/block | grep -cE '^nvme[0-9]+n1$')" -lt 4 ]; do
  i=$((i + 1)); [ $i -lt 600 ] || { echo "the 4 NVMe namespaces did not appear"; done_ 91; }; sleep 0.1
done
echo "@@KERNEL $(uname -m) $(uname -r), $(grep -c ^processor /proc/cpuinfo) CPUs"
# Debian's kernel has native NVMe multipath: nvme0n1 is then a head without mq/, and its queues
# are those of the path device nvme0c0n1 under the controller.
echo "@@QUEUES $(ls -d /sys/class/nvme/nvme0/nvme0*n1/mq/[0-9]* | wc -l) $(ls /sys/class/nvme/nvme0/ | grep -E '^nvme0(c[0-9]+)?n1$')"
mdadm --create /dev/md0 --run --assume-clean --level=5 --raid-devices=4 --metadata=1.2 \
  --name=hana_data /dev/nvme0n1 /dev/nvme1n1 /dev/nvme2n1 /dev/nvme3n1 >/dev/null 2>&1 ||
  { echo "mdadm --create failed"; done_ 92; }
echo "@@LEVEL $(cat /sys/block/md0/md/level) threads=$(cat /sys/block/md0/md/group_thread_cnt)"
echo '{"state": "query", "thread_policy": "auto"}' | mdtune >/tmp/q; echo "@@QUERY $? $(cat /tmp/q)"
echo '{"thread_policy": "auto", "arrays": [{"name": "md0"}]}' | mdtune >/tmp/a; echo "@@APPLY $? $(cat /tmp/a)"
echo "@@SYSFS $(cat /sys/block/md0/md/group_thread_cnt)"
echo '{"thread_policy": "auto", "arrays": [{"name": "md0"}]}' | mdtune >/tmp/b; echo "@@AGAIN $? $(cat /tmp/b)"
done_ 0
EOF
chmod +x "$ird/init"
(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) >"$tmp/initrd.gz"

# --- boot -----------------------------------------------------------------------------------------
drives=()
for n in 0 1 2 3; do
  truncate -s 64M "$tmp/nvme$n.img"
  drives+=(-drive "file=$tmp/nvme$n.img,if=none,format=raw,id=d$n" -device "nvme,drive=d$n,serial=mdtune$n,max_ioqpairs=3")
done
start=$(date +%s)
# x-vof=on: QEMU's Virtual Open Firmware instead of SLOF, which boots a -kernel much faster.
timeout "${MDTUNE_PPC_TIMEOUT:-900}" qemu-system-ppc64 -M pseries,x-vof=on -accel tcg,thread=multi \
  -smp 4 -m 1G -nographic -nodefaults -serial stdio -no-reboot \
  -kernel "$kernel" -initrd "$tmp/initrd.gz" -append "console=hvc0 quiet panic=-1" \
  "${drives[@]}" </dev/null >"$log" 2>&1 || true
secs=$(($(date +%s) - start))
tr -d '\r' <"$log" >"$tmp/console"
grep -q '^@@DONE 0' "$tmp/console" || { tail -n 40 "$tmp/console" >&2; die "the guest did not finish its run ($secs s; console: $log)"; }

python3 - "$tmp/console" "$secs" <<'EOF'
import json, sys
lines = {}
for line in open(sys.argv[1]):
    if line.startswith("@@"):
        tag, _, rest = line[2:].rstrip("\n").partition(" ")
        lines[tag] = rest
bad = 0
def check(what, ok):
    global bad
    print(("ok: " if ok else "FAIL: ") + what)
    bad += not ok
def run(tag):
    code, _, text = lines.get(tag, "? {}").partition(" ")
    return int(code) if code.isdigit() else None, json.loads(text or "{}")
print(f"guest: {lines.get('KERNEL')}, boot and run {sys.argv[2]} s")
queues = int(lines["QUEUES"].split()[0])
cpus = int(lines["KERNEL"].split(", ")[1].split()[0])
want = queues  # auto: the members' queues, below the CPU cap
check(f"the kernel is ppc64le and md0 is raid5 with the default group_thread_cnt ({lines.get('LEVEL')})",
      lines["KERNEL"].startswith("ppc64le ") and lines.get("LEVEL", "").startswith("raid5 threads=0"))
check(f"each NVMe namespace has {queues} hardware queues, fewer than the {cpus} CPUs (queue device "
      f"{lines['QUEUES'].split()[1]})", 1 < queues < cpus)
code, q = run("QUERY")
md0 = next(a for a in q.get("arrays", []) if a["name"] == "md0") if q.get("arrays") else {}
check(f"query: exit {code}, not compliant, md0 members resolved to {md0.get('hw_queues')} queues",
      code == 0 and q.get("compliant") is False and md0.get("hw_queues") == queues)
code, a = run("APPLY")
md0 = next(x for x in a.get("arrays", []) if x["name"] == "md0") if a.get("arrays") else {}
gtc = md0.get("settings", {}).get("group_thread_cnt", {})
check(f"auto: exit {code}, changed, group_thread_cnt {gtc.get('before')} -> {gtc.get('after')} (want {want}): {a.get('msg')}",
      code == 0 and a.get("changed") is True and gtc.get("after") == want and gtc.get("source") == "auto")
check(f"the kernel's md0/md/group_thread_cnt reads {lines.get('SYSFS')}", lines.get("SYSFS") == str(want))
code, b = run("AGAIN")
check(f"second run: exit {code}, changed {b.get('changed')}: {b.get('msg')}", code == 0 and b.get("changed") is False)
sys.exit(1 if bad else 0)
EOF
