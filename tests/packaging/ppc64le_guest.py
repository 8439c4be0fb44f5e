"""The ppc64le guest of tests/packaging/ppc64le-vm.sh, on the host's side.

modules MODDIR DEST NAME...  copies the kernel modules NAME... and what they depend on into DEST,
                             and writes DEST/order: the load order, dependencies first, which the
                             guest's /init (ppc64le-init.sh) loads with insmod. The resolution is
                             the VM suite's (tests/vm/initramfs.py).
results CONSOLE SECONDS      reads the guest's "@@TAG ..." console lines and checks them; prints
                             one "ok:" or "FAIL:" line per check, exit 1 if one failed.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vm"))
from initramfs import builtin_modules, module_order


def modules(moddir, dest, *wanted):
    order, blobs = module_order(moddir, builtin_modules(moddir), list(wanted))
    for name in order:
        with open(os.path.join(dest, name + ".ko"), "wb") as f:
            f.write(blobs[name])
    with open(os.path.join(dest, "order"), "w") as f:
        f.write("\n".join(order) + "\n")


class Console:
    """The guest's console lines by tag, and the checks made on them."""

    def __init__(self, path):
        self.lines = {}
        for line in open(path):
            if line.startswith("@@"):
                tag, _, rest = line[2:].rstrip("\n").partition(" ")
                self.lines[tag] = rest
        self.bad = 0

    def check(self, what, ok):
        print(("ok: " if ok else "FAIL: ") + what)
        self.bad += not ok

    def run(self, tag):
        """The exit status and the JSON report of the mdtune run the guest tagged so."""
        code, _, text = self.lines.get(tag, "? {}").partition(" ")
        return int(code) if code.isdigit() else None, json.loads(text or "{}")


def md0_of(report):
    return next((a for a in report.get("arrays") or [] if a["name"] == "md0"), {})


def results(console, seconds):
    c = Console(console)
    lines = c.lines
    print(f"guest: {lines.get('KERNEL')}, boot and run {seconds} s")
    queues = int(lines["QUEUES"].split()[0])
    cpus = int(lines["KERNEL"].split(", ")[1].split()[0])
    want = queues  # auto: the members' queues, below the CPU cap
    c.check(
        f"the kernel is ppc64le and md0 is raid5 with the default group_thread_cnt ({lines.get('LEVEL')})",
        lines["KERNEL"].startswith("ppc64le ")
        and lines.get("LEVEL", "").startswith("raid5 threads=0"),
    )
    c.check(
        f"each NVMe namespace has {queues} hardware queues, fewer than the {cpus} CPUs (queue device "
        f"{lines['QUEUES'].split()[1]})",
        1 < queues < cpus,
    )
    code, q = c.run("QUERY")
    md0 = md0_of(q)
    c.check(
        f"query: exit {code}, not compliant, md0 members resolved to {md0.get('hw_queues')} queues",
        code == 0 and q.get("compliant") is False and md0.get("hw_queues") == queues,
    )
    code, a = c.run("APPLY")
    gtc = md0_of(a).get("settings", {}).get("group_thread_cnt", {})
    c.check(
        f"auto: exit {code}, changed, group_thread_cnt {gtc.get('before')} -> {gtc.get('after')} "
        f"(want {want}): {a.get('msg')}",
        code == 0
        and a.get("changed") is True
        and gtc.get("after") == want
        and gtc.get("source") == "auto",
    )
    c.check(
        f"the kernel's md0/md/group_thread_cnt reads {lines.get('SYSFS')}",
        lines.get("SYSFS") == str(want),
    )
    code, b = c.run("AGAIN")
    c.check(
        f"second run: exit {code}, changed {b.get('changed')}: {b.get('msg')}",
        code == 0 and b.get("changed") is False,
    )
    return 1 if c.bad else 0


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "modules":
        modules(*sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "results":
        sys.exit(results(*sys.argv[2:]))
    else:
        sys.exit(f"usage: {sys.argv[0]} modules MODDIR DEST NAME... | results CONSOLE SECONDS")
