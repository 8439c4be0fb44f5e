"""What the VM checks share: the records of one boot (`Run`, read from what tests/vm/run.sh
wrote), the guest's layout (which drives make md0 and md2), and small helpers to read results
and compare. `INFO` collects the measurements that check.py prints after the checks.
"""
import json
import os
import re


class Run:
    """The records of one guest boot."""

    def __init__(self, directory):
        self.dir = directory
        (self.series, self.abi, self.mp, self.qemu_rc, self.phase,
         self.seconds, self.cpu) = open(os.path.join(directory, "boot.txt")).read().split()
        self.facts, self.vals, self.runs, self.inputs, self.steps = {}, {}, {}, {}, {}
        self.blocks, self.at = {}, []
        self.done = None
        path = os.path.join(directory, "results.log")
        lines = open(path, errors="replace").read().replace("\r", "").split("\n") if os.path.exists(path) else []
        i = 0
        while i < len(lines):
            line = lines[i]
            i += 1
            parts = line.split(" ", 3)
            kind = parts[0]
            if kind == "@@FACT" and len(parts) >= 2:
                self.facts[parts[1]] = line.split(" ", 2)[2] if len(parts) > 2 else ""
            elif kind == "@@VAL" and len(parts) >= 3:
                self.vals[(parts[1], parts[2])] = parts[3] if len(parts) > 3 else ""
            elif kind == "@@STEP":
                self.steps[parts[1]] = int(parts[2])
            elif kind == "@@AT" and len(parts) >= 3:
                self.at.append((float(parts[1]), parts[2]))
            elif kind == "@@BLOCK" and len(parts) >= 2:
                name, text = parts[1], []
                while i < len(lines) and lines[i] != f"@@ENDBLOCK {name}":
                    text.append(lines[i])
                    i += 1
                i += 1
                self.blocks[name] = text
            elif kind == "@@INPUT":
                self.inputs[parts[1]] = line.split(" ", 2)[2]
            elif kind == "@@DONE":
                self.done = parts[1]
            elif kind == "@@RUN":
                tag, rc, out, err = parts[1], int(parts[2]), [], []
                into = out
                while i < len(lines) and lines[i] != f"@@END {tag}":
                    if lines[i] == "@@STDERR":
                        into = err
                    else:
                        into.append(lines[i])
                    i += 1
                i += 1
                self.runs[tag] = {"rc": rc, "stdout": "\n".join(out).strip(), "stderr": "\n".join(err).strip()}

    @property
    def label(self):
        return f"{self.series}/{self.phase}(mp={self.mp})"

    # --- accessors that fail with a useful message -------------------------------------------
    def result(self, tag, rc=0):
        """The JSON object of run TAG; asserts the exit status and that stdout is one JSON object."""
        assert tag in self.runs, f"no mdtune run {tag!r} recorded (guest stopped early?)"
        r = self.runs[tag]
        try:
            obj = json.loads(r["stdout"])
        except ValueError:
            raise AssertionError(f"{tag}: stdout is not one JSON object (exit {r['rc']}): "
                                 f"{r['stdout'][:300]!r} stderr: {r['stderr'][:300]!r}") from None
        assert isinstance(obj, dict), f"{tag}: stdout is JSON but not an object: {r['stdout'][:200]}"
        assert r["rc"] == rc, (f"{tag}: exit status {r['rc']}, expected {rc}; msg: {obj.get('msg')!r}; "
                               f"input: {self.inputs.get(tag)}")
        return obj

    def val(self, tag, key):
        assert (tag, key) in self.vals, f"no sysfs value {key} recorded at {tag}"
        return self.vals[(tag, key)]

    def fact(self, key):
        assert key in self.facts, f"no fact {key!r} recorded"
        return self.facts[key]

    def disk(self, i):
        """Kernel name of QEMU drive i (serial MDTi), as the guest found it."""
        name = self.fact(f"disk.{i}")
        assert name, f"the guest found no NVMe namespace with serial MDT{i}"
        return name

    def queues(self, i):
        """The hardware queues of drive i that carry md's I/O: its mq/ entries (its paths' with
        multipath=Y) but those that debugfs names poll queues."""
        return int(self.fact(f"queues.{i}"))

    def pollq(self, i):
        """The poll queues of drive i (of its first path with multipath=Y), from debugfs."""
        return int(self.fact(f"pollq.{i}"))

    def vd(self, serial):
        """Kernel name of the virtio-blk disk with this serial (the auto boot)."""
        return self.fact(f"vd.{serial}")

    def block(self, name):
        assert name in self.blocks, f"no {name} text recorded (guest stopped early?)"
        return self.blocks[name]

    def rc(self, tag):
        assert tag in self.runs, f"no mdtune run {tag!r} recorded (guest stopped early?)"
        return self.runs[tag]["rc"]

    def housekeeping(self):
        """The online CPUs the raid5 workqueue (unbound) may run on: those in the kernel's mask for
        unbound work (workqueue/cpumask) and in raid5wq's own mask when they share any, else the
        online ones that cpu/isolated does not list (docs/auto.md)."""
        online = cpus(self.fact("online"))
        unbound = bitmap(self.facts.get("wq.cpumask", ""))
        if unbound is None:
            return online - cpus(self.facts.get("cpu.isolated", ""))
        own = bitmap(self.facts.get("wq.raid5wq", ""))
        if own is not None and own & unbound:
            unbound &= own
        return online & unbound

    def cpu_nodes(self):
        """The NUMA nodes with CPUs (node/has_cpu), else the possible ones."""
        return nodes(self.facts.get("nodes.has_cpu") or self.fact("nodes.possible"))

    def cap(self):
        """auto's default max (docs/reference.md §2): the housekeeping CPUs / the nodes with CPUs,
        at least 1: the worker groups of CPU-less nodes never run (raid5_wakeup_stripe_thread
        queues work for the submitting CPU's node), and unbound work avoids isolated CPUs."""
        return max(1, len(self.housekeeping()) // self.cpu_nodes())

    def marks(self):
        """Kernel-log time marks (seconds) by name."""
        out = {}
        for line in self.blocks.get("marks", []):
            m = re.match(r"\[\s*([0-9.]+)\]\s+@@T (\S+)", line)
            if m:
                out[m.group(2)] = float(m.group(1))
        return out


def nodes(text):
    """Number of nodes in a kernel node list such as "0-1" or "0"."""
    n = 0
    for part in text.strip().split(","):
        if "-" in part:
            a, b = part.split("-")
            n += int(b) - int(a) + 1
        elif part:
            n += 1
    return max(n, 1)


def cpus(text):
    """The set of CPUs in a kernel CPU list such as "0-2,5" ("" and "(null)", which cpu/nohz_full
    reads without nohz_full=, are none)."""
    out = set()
    if not re.fullmatch(r"[0-9,-]*", text.strip()):
        return out
    for part in text.strip().split(","):
        if "-" in part:
            a, b = part.split("-")
            out.update(range(int(a), int(b) + 1))
        elif part:
            out.add(int(part))
    return out


def bitmap(text):
    """The set of CPUs in a kernel cpumask in hex ("0f", "00000000,0000000f"), None if not one."""
    text = text.strip().replace(",", "")
    if not re.fullmatch(r"[0-9a-fA-F]+", text):
        return None
    mask = int(text, 16)
    return {c for c in range(mask.bit_length()) if mask >> c & 1}


def array(result, name):
    for a in result.get("arrays", []):
        if a.get("name") == name:
            return a
    raise AssertionError(f"array {name} not in result (arrays: {[a.get('name') for a in result.get('arrays', [])]})")


def setting(result, name, attr):
    s = array(result, name).get("settings", {})
    assert attr in s, f"{name}: no setting {attr} in result (settings: {sorted(s)})"
    return s[attr]


def expect(actual, wanted, what):
    assert actual == wanted, f"{what}: got {actual!r}, expected {wanted!r}"


def auto_value(queues, cap):
    """Contract 2, thread policy auto: 1 queue or fewer gives 0, otherwise the count, <= cap."""
    return 0 if queues <= 1 else min(queues, cap)


R5 = [0, 1, 2]   # md0: whole drives (QEMU drive index = serial MDTi)


P5 = [3, 4, 5]   # md2: first partition of each


ATTRS = ["group_thread_cnt", "stripe_cache_size", "sync_speed_max", "sync_speed_min"]


def progress(text, what):
    """[done, total] of a sync_completed value "N / M"."""
    m = re.fullmatch(r"(\d+) / (\d+)", text.strip())
    assert m, f"{what}: sync_completed reads {text!r}, not N / M"
    return [int(m.group(1)), int(m.group(2))]


def member_named(result, md, pattern):
    """The member of array md whose name matches the regex pattern."""
    members = array(result, md).get("members", [])
    found = [m for m in members if re.fullmatch(pattern, str(m.get("name")))]
    assert found, f"{md}: no member named like {pattern!r} (members: {[m.get('name') for m in members]})"
    return found[0]


def disk_or_path(run, i):
    """Regex for the kernel name of drive i or one of its NVMe paths (multipath=Y)."""
    disk = run.disk(i)
    sub, ns = re.fullmatch(r"nvme(\d+)n(\d+)", disk).groups()
    return rf"{disk}|nvme{sub}c\d+n{ns}"


def resolves_to_drives(run, result, md, drives, count):
    """Every member of md resolves to one of the NVMe drives, with that drive's queue count."""
    members = array(result, md).get("members", [])
    expect(len(members), count, f"{md} member count")
    for m in members:
        # What a member resolved to: its device, or (dm, nested md) the devices listed as its paths.
        names = [str(m.get("device"))] + [str(p.get("name")) for p in m.get("paths") or []]
        i = next((i for i in drives if any(re.fullmatch(disk_or_path(run, i), n) for n in names)), None)
        assert i is not None, (f"{md}: member {m.get('name')} resolved to {names}, expected one "
                               f"of {[run.disk(i) for i in drives]} (or their paths): {m}")
        expect(m.get("hw_queues"), run.queues(i), f"{md}: member {m.get('name')} hw_queues")


def logged_writes(lines, md):
    """{setting: count} of the changes mdtune --udev logged for md: the trail's line
    ("udev --udev md2, uid 0: changed md2: setting a -> b, ...")."""
    counts = {}
    caller = f"udev --udev {md}, "
    for line in lines:
        if "mdtune" not in line or caller not in line:
            continue
        what = line.split(caller, 1)[1].partition(": ")[2]
        for setting in re.findall(r"(\w+) \S+ -> \S+", what):
            counts[setting] = counts.get(setting, 0) + 1
    return counts


def mdtune_errors(lines):
    return [line for line in lines
            if "mdtune" in line and ("FAILED" in line or "failed" in line or ".err" in line)]


# The state u1 and u4 persist (first boot) and the second boot finds applied.
PERSISTED = {"md0": {"stripe_cache_size": "1024", "sync_speed_min": "2000 (local)"},
             "md2": {"stripe_cache_size": "4096", "skip_copy": "1"},
             "md1": {"sync_speed_min": "3000 (local)"}}


def persisted_values_ok(run, tag, gtc_cap, arrays=("md0", "md2", "md1")):
    """The kernel shows every persisted value at tag; group_thread_cnt is auto's."""
    for md in arrays:
        for attr, value in PERSISTED[md].items():
            expect(run.val(tag, f"{md}/{attr}"), value, f"{tag}: kernel {md}/{attr}")
    for md, drives in (("md0", R5), ("md2", P5)):
        if md not in arrays:
            continue
        expect(run.val(tag, f"{md}/group_thread_cnt"),
               str(auto_value(min(run.queues(i) for i in drives), gtc_cap)), f"{tag}: kernel {md}/group_thread_cnt (auto)")


INFO = []
