#!/usr/bin/env python3
"""Host-side assertions of the VM suite.

Usage: check.py RUN_DIR...   (each written by tests/vm/run.sh: boot.txt, results.log, console.log)

Reads the records the guest scripts printed in each boot (see tests/vm/guest/lib.sh), checks every
scenario against what the guest itself read from sysfs, prints one line per check and ends with
"N passed, N failed". Exit status 0 only when nothing failed. A boot that did not finish fails
its "boot" check and every scenario check whose records are missing. Lines starting with "info"
are measurements (time per boot phase, the rule's time per event, query's time and system calls
next to the floor program's), not checks.
"""
import base64
import json
import os
import re
import sys


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


def scenarios(run):
    """Returns (name, function) for every check of one boot; a function raises when its check fails."""
    def q0():
        return min(run.queues(i) for i in R5)

    def q2():
        return min(run.queues(i) for i in P5)

    def boot():
        assert run.done is not None, f"guest never finished (qemu exit {run.qemu_rc}; see {run.dir}/console.log)"
        expect(run.done, "0", "guest script exit status")
        for name, rc in run.steps.items():
            expect(rc, 0, f"setup step {name}")
        expect(run.fact("kernel"), run.abi, "guest kernel")

    def layout():
        expect(run.fact("multipath"), run.mp, "nvme_core multipath parameter")
        drives = range(21) if run.phase == "first" else range(11)
        expect(len({run.disk(i) for i in drives}), len(drives), "distinct NVMe namespaces found by serial")
        heads = {run.fact(f"headmq.{i}") for i in drives}
        # multipath=Y: the namespace head has no mq/, queues live on hidden nvmeXcYnZ paths.
        expect(heads, {"yes"} if run.mp == "N" else {"no"}, "mq/ on /sys/block/nvmeXn1")
        for i in range(8):
            assert run.queues(i) >= 2, f"{run.disk(i)} shows {run.queues(i)} queues; the auto checks need >= 2"
        assert q0() != q2(), f"md0 and md2 members have the same queue count {q0()}; the combine check needs them to differ"
        assert int(run.fact("debugfs")) > 0, "harness: no block/ in debugfs (CONFIG_BLK_DEBUG_FS), which names the poll queues"
        # nvme.poll_queues=1: every drive of 3 or 4 queue pairs has a poll queue to leave out.
        for i in range(8):
            expect(run.pollq(i), 1, f"harness: poll queues of {run.disk(i)} (debugfs hctx*/type)")
            if run.mp == "N":
                expect(int(run.fact(f"mqdirs.{i}")), run.queues(i) + run.pollq(i),
                       f"harness: mq/ entries of {run.disk(i)} = queues that carry I/O + poll queues")

    def members_ok(result, md, drives):
        a = array(result, md)
        expect(a.get("hw_queues"), min(run.queues(i) for i in drives), f"{md} hw_queues")
        members = a.get("members", [])
        expect(len(members), len(drives), f"{md} member count")
        for m in members:
            i = next((i for i in drives if re.fullmatch(rf"{run.disk(i)}(p\d+)?", str(m.get("name")))), None)
            assert i is not None, f"{md}: unexpected member {m}"
            disk = run.disk(i)
            sub, ns = re.fullmatch(r"nvme(\d+)n(\d+)", disk).groups()
            # A partition resolves to its disk; with multipath=Y the disk may be reported as a path.
            assert re.fullmatch(rf"{disk}|nvme{sub}c\d+n{ns}", str(m.get("device"))), \
                f"{md}: member {m.get('name')} resolved to {m.get('device')!r}, expected {disk} or one of its paths"
            expect(m.get("hw_queues"), run.queues(i), f"{md}: member {m.get('name')} hw_queues")
            if run.pollq(i):
                assert "poll queues not counted" in str(m.get("note")), \
                    f"{md}: member {m.get('name')} does not say its poll queues were left out: {m}"

    def s1_raw():
        r = run.result("s1raw")
        for md, disks in (("md0", R5), ("md2", P5)):
            want = auto_value(min(run.queues(d) for d in disks), 64)
            assert want > 0, "expected value equals the kernel default; the check would prove nothing"
            s = setting(r, md, "group_thread_cnt")
            expect(s.get("after"), want, f"{md} group_thread_cnt after")
            expect(s.get("source"), "auto", f"{md} group_thread_cnt source")
            expect(run.val("s1raw.after", f"{md}/group_thread_cnt"), str(want), f"{md} kernel group_thread_cnt")
            members_ok(r, md, disks)

    def s1_auto():
        r = run.result("s1")
        for md, q in (("md0", q0()), ("md2", q2())):
            want = auto_value(q, run.cap())
            expect(setting(r, md, "group_thread_cnt").get("after"), want, f"{md} group_thread_cnt after")
            expect(run.val("s1.after", f"{md}/group_thread_cnt"), str(want), f"{md} kernel group_thread_cnt")

    def s2():
        r = run.result("s2")
        expect(r.get("changed"), False, "changed")
        expect(r.get("compliant"), True, "compliant")
        for md in ("md0", "md2"):
            for attr, s in array(r, md).get("settings", {}).items():
                expect(s.get("changed"), False, f"{md} {attr} changed")
            expect(run.val("s2.after", f"{md}/group_thread_cnt"), run.val("s1.after", f"{md}/group_thread_cnt"),
                   f"{md} kernel group_thread_cnt")

    def s2_same():
        r = run.result("s2same")
        expect(r.get("changed"), False, "changed")
        for attr, st in array(r, "md0").get("settings", {}).items():
            expect(st.get("changed"), False, f"md0 {attr} changed")
        before, after = int(run.fact("events.before.md2")), int(run.fact("events.after.md2"))
        assert after > before, f"control: a same-value write by hand left md2's event count at {after}; the check would prove nothing"
        expect(run.fact("events.after.md0"), run.fact("events.before.md0"), "md0 superblock event count (a write would bump it)")

    def s3():
        r = run.result("s3")
        expect(r.get("check_mode"), True, "check_mode in result")
        expect(r.get("changed"), True, "changed (would change)")
        for attr, want in (("stripe_cache_size", 1024), ("group_thread_cnt", 1), ("sync_speed_max", 12345)):
            s = setting(r, "md0", attr)
            expect(s.get("after"), want, f"md0 {attr} after (what would be written)")
            expect(s.get("changed"), True, f"md0 {attr} changed")
        for attr in ATTRS:
            expect(run.val("s3.after", f"md0/{attr}"), run.val("s3.before", f"md0/{attr}"), f"kernel md0 {attr} (must be untouched)")

    def s4():
        r = run.result("s4a")
        expect(r.get("changed"), True, "s4a changed")
        expect(setting(r, "md0", "sync_speed_max").get("after"), 50000, "s4a sync_speed_max after")
        expect(run.val("s4a.after", "md0/sync_speed_max"), "50000 (local)", "kernel sync_speed_max after s4a")
        r = run.result("s4b")
        expect(r.get("changed"), False, "s4b (same again) changed")
        s = setting(r, "md0", "sync_speed_max")
        expect((s.get("before"), s.get("after"), s.get("changed")), (50000, 50000, False), "s4b sync_speed_max before/after/changed")
        r = run.result("s4c")
        s = setting(r, "md0", "sync_speed_max")
        expect((s.get("before"), s.get("after"), s.get("changed")), (50000, "system", True), "s4c sync_speed_max before/after/changed")
        expect(run.val("s4c.after", "md0/sync_speed_max"), f"{run.fact('speed_limit_max.s4')} (system)", "kernel sync_speed_max after s4c")

    def s5_glob_skips():
        expect(run.val("s5.before", "md1/sync_action"), "resync", "md1 sync_action before (harness: resync running)")
        r = run.result("s5a")
        expect(r.get("failed", False), False, "failed")
        md1 = array(r, "md1")
        assert "stripe_cache_size" in json.dumps(md1.get("skipped")), f"md1 skipped does not name stripe_cache_size: {md1.get('skipped')!r}"
        assert "stripe_cache_size" not in md1.get("settings", {}), "md1 has a stripe_cache_size setting"
        for md in ("md0", "md2"):
            expect(run.val("s5a.after", f"{md}/stripe_cache_size"), "512", f"kernel {md} stripe_cache_size")

    def s5_exact_fails():
        r = run.result("s5b", rc=2)
        expect(r.get("failed"), True, "failed")
        msg = str(r.get("msg"))
        assert "md1" in msg and "stripe_cache_size" in msg, f"msg does not name md1 and stripe_cache_size: {msg!r}"

    def s5_resync():
        r = run.result("s5c")
        md1 = array(r, "md1")
        expect((md1.get("sync") or {}).get("action"), "resync", "md1 sync.action in report")
        expect(setting(r, "md1", "sync_speed_min").get("after"), 500, "md1 sync_speed_min after")
        expect(setting(r, "md1", "sync_speed_max").get("after"), 2000, "md1 sync_speed_max after")
        expect(run.val("s5c.after", "md1/sync_speed_min"), "500 (local)", "kernel md1 sync_speed_min")
        expect(run.val("s5c.after", "md1/sync_speed_max"), "2000 (local)", "kernel md1 sync_speed_max")
        expect(run.val("s5c.after", "md1/sync_action"), "resync", "kernel md1 sync_action after the run")

    def s6():
        for tag, key, value in (("s6a", "group_thread_cnt", "9000"), ("s6b", "stripe_cache_size", "16")):
            r = run.result(tag, rc=2)
            expect(r.get("failed"), True, f"{tag} failed")
            expect(r.get("changed", False), False, f"{tag} changed")
            msg = str(r.get("msg"))
            assert key in msg and value in msg, f"{tag}: msg does not name {key} and {value}: {msg!r}"
        for attr in ("group_thread_cnt", "stripe_cache_size"):
            expect(run.val("s6.after", f"md0/{attr}"), run.val("s6.before", f"md0/{attr}"), f"kernel md0 {attr} (must be untouched)")

    def s7():
        r = run.result("s7a")
        expect(r.get("compliant"), False, "s7a (query before) compliant")
        expect(array(r, "md0").get("compliant"), False, "s7a md0 compliant")
        for attr in ATTRS:
            expect(run.val("s7a.after", f"md0/{attr}"), run.val("s7.before", f"md0/{attr}"), f"kernel md0 {attr} after query")
        r = run.result("s7b")
        expect(r.get("changed"), True, "s7b (apply) changed")
        expect(run.val("s7b.after", "md0/stripe_cache_size"), "2048", "kernel md0 stripe_cache_size")
        expect(run.val("s7b.after", "md0/sync_speed_max"), "40000 (local)", "kernel md0 sync_speed_max")
        r = run.result("s7c")
        expect(r.get("compliant"), True, "s7c (query after) compliant")
        expect(array(r, "md0").get("compliant"), True, "s7c md0 compliant")
        expect(r.get("changed"), False, "s7c changed")

    def s8():
        want_gtc = auto_value(q0(), run.cap())
        expect(run.val("s7b.after", "md0/group_thread_cnt"), str(want_gtc), "md0 group_thread_cnt before the stop")
        got = [run.val("s8.before", f"md0/{a}") for a in ("group_thread_cnt", "stripe_cache_size")]
        expect(got, ["0", "256"], "kernel group_thread_cnt, stripe_cache_size after re-assembly (defaults)")
        assert run.val("s8.before", "md0/sync_speed_max").endswith("(system)"), \
            f"sync_speed_max after re-assembly: {run.val('s8.before', 'md0/sync_speed_max')!r}"
        r = run.result("s8")
        expect(r.get("changed"), True, "changed")
        assert "stripe_cache_size" in str(r.get("msg")), f"msg does not say what changed: {r.get('msg')!r}"
        for attr, before, after in (("group_thread_cnt", 0, want_gtc), ("stripe_cache_size", 256, 2048),
                                    ("sync_speed_max", "system", 40000)):
            s = setting(r, "md0", attr)
            expect((s.get("before"), s.get("after"), s.get("changed")), (before, after, True), f"md0 {attr} before/after/changed")
        expect([run.val("s8.after", f"md0/{a}") for a in ("group_thread_cnt", "stripe_cache_size", "sync_speed_max")],
               [str(want_gtc), "2048", "40000 (local)"], "kernel md0 values after the run")

    def s9():
        want = [str(auto_value(q2(), run.cap())), "4096", "30000 (local)"]
        keys = ["md2/group_thread_cnt", "md2/stripe_cache_size", "md2/sync_speed_max"]
        r = run.result("s9a")
        files = (r.get("persist") or {}).get("files") or []
        assert files, f"persist.files is empty: {r.get('persist')!r}"
        expect([run.val("s9a.after", k) for k in keys], want, "kernel md2 after the persisting run")
        on_disk = run.fact("persist.files")
        for needle in ("/etc/mdtune/", "/usr/local/sbin/mdtune", "/etc/udev/rules.d/"):
            assert needle in on_disk, f"no persisted file under {needle} (found: {on_disk!r})"
        assert "--udev" in run.fact("persist.rule"), f"udev rule does not run --udev: {run.fact('persist.rule')!r}"
        expect([run.val("s9.reassembled", k) for k in keys[:2]], ["0", "256"], "kernel md2 after re-assembly (defaults)")
        expect(run.fact("udev.binary"), "/usr/local/sbin/mdtune", "binary the udev rule runs")
        assert "s9b" in run.runs, "no --udev run recorded"
        expect(run.runs["s9b"]["rc"], 0, f"mdtune --udev md2 exit status (stdout {run.runs['s9b']['stdout'][:200]!r})")
        expect([run.val("s9b.after", k) for k in keys], want, "kernel md2 after mdtune --udev md2")
        expect(run.runs["s9c"]["rc"], 0, "second mdtune --udev md2 exit status")
        expect([run.val("s9c.after", k) for k in keys], want, "kernel md2 after the second --udev run")

    def s9_log():
        # Contract 1: --udev logs to syslog (busybox syslogd on /dev/log here) only on change or failure.
        assert int(run.fact("log.s9b")) >= 1, "mdtune --udev md2 changed values but logged nothing to syslog"
        text = run.fact("log.s9b.text")
        assert "md2" in text and "stripe_cache_size" in text, f"syslog does not name md2 and stripe_cache_size: {text!r}"
        expect(run.fact("log.s9c"), run.fact("log.s9b"), "mdtune lines in syslog after a repeated --udev event")

    def s10():
        r = run.result("s10a")
        expect(r.get("changed"), True, "changed")
        defaults = {"group_thread_cnt": "0", "stripe_cache_size": "256"}
        for md in ("md0", "md2"):
            for attr, want in defaults.items():
                expect(run.val("s10a.after", f"{md}/{attr}"), want, f"kernel {md} {attr} after revert")
            for attr in ("sync_speed_max", "sync_speed_min"):
                v = run.val("s10a.after", f"{md}/{attr}")
                assert v.endswith("(system)"), f"kernel {md} {attr} after revert: {v!r}"
        for attr in ("sync_speed_max", "sync_speed_min"):
            v = run.val("s10a.after", f"md1/{attr}")
            assert v.endswith("(system)"), f"kernel md1 {attr} after revert: {v!r}"
        left = run.fact("revert.files")
        for path in ("/etc/mdtune/mdtune.json", "/usr/local/sbin/mdtune", "/etc/udev/rules.d/"):
            assert path not in left, f"{path} still there after revert (files: {left!r})"
        r = run.result("s10b")
        expect(r.get("changed"), False, "second revert changed")

    if run.phase == "auto":
        return [("boot: guest ran all scenarios", boot)] + auto_checks(run)
    if run.phase in ("powercut", "after-powercut"):
        return powercut_checks(run, boot)
    if run.phase == "second":
        return [("boot: guest ran all scenarios", boot),
                ("layout: NVMe layout and queue counts as configured", layout)] + second_checks(run)
    return [
        ("boot: guest ran all scenarios", boot),
        ("layout: NVMe layout and queue counts as configured", layout),
        ("s1 auto: raw queue count, whole disks (md0) and partitions (md2, combine min)", s1_raw),
        ("s1 auto: default auto = queues clamped to online CPUs", s1_auto),
        ("s2 second identical run: changed false", s2),
        ("s2 values in place are not written (superblock events; control write moves them)", s2_same),
        ("s3 check mode: reports the change, writes nothing", s3),
        ("s4 sync_speed_max: N (local), idempotent, system restores (system)", s4),
        ("s5 raid10 + glob: raid456 setting skipped", s5_glob_skips),
        ("s5 raid10 + exact name: raid456 setting fails, exit 2", s5_exact_fails),
        ("s5 raid10 mid-resync: sync_speed_min/max tuned, sync.action resync", s5_resync),
        ("s6 out-of-range values refused, kernel untouched", s6),
        ("s7 state query: compliant false before, true after, writes nothing", s7),
        ("s8 stop + re-assemble: defaults back, next run restores and reports", s8),
        ("s9 persist: --udev re-applies after re-assembly", s9),
        ("s9 --udev logs its change; a repeated event logs nothing", s9_log),
        ("s10 revert: originals back on all arrays, persisted files removed", s10),
    ] + sync_checks(run) + issue11_checks(run) + udev_checks(run)



def progress(text, what):
    """[done, total] of a sync_completed value "N / M"."""
    m = re.fullmatch(r"(\d+) / (\d+)", text.strip())
    assert m, f"{what}: sync_completed reads {text!r}, not N / M"
    return [int(m.group(1)), int(m.group(2))]


def sync_checks(run):
    """Issue 32, item 1: a run during a check pauses the check around the writes that suspend the
    array (group_thread_cnt, skip_copy) and resumes it where it stood, while md0 serves I/O."""
    def p1_paused():
        expect(run.val("p1.before", "md0/sync_action"), "check", "harness: md0 runs a check before the run")
        before = progress(run.val("p1.before", "md0/sync_completed"), "md0 before the run")
        r = run.result("p1")
        pause = array(r, "md0").get("sync_pause")
        assert pause, f"the report says no sync was paused: {r.get('msg')!r}"
        expect((pause.get("action"), pause.get("resumed")), ("check", True), "sync_pause action, resumed")
        expect(sorted(pause.get("settings", [])), ["group_thread_cnt", "skip_copy"], "settings written while paused")
        at, total = pause["paused_at"]
        assert at >= before[0] and total == before[1], f"paused at {at} / {total}, but the check stood at {before} before the run"
        start = pause["resumed_from"]
        assert start >= at - at % 8, f"resumed from {start}, behind where it was paused ({at}): progress lost"
        expect(run.val("p1.after", "md0/sync_min"), str(start), "md0 sync_min after the run (where the check resumed)")
        expect(run.val("p1.after", "md0/sync_action"), "check", "md0 sync_action right after the run (resumed)")
        later = progress(run.val("p1.later", "md0/sync_completed"), "md0 2 s after the run")
        assert later[0] >= start, f"2 s after the run the check stands at {later}, behind {start}: it did not resume there"
        assert f"(check paused at {at} / {total}, resumed from {start})" in r.get("msg", ""), f"msg: {r.get('msg')!r}"
        # md_do_sync's own words: "data-check" up to 6.6, "check" (md_sync_action_name) from 6.7.
        dmesg = "\n".join(run.block("p1.dmesg"))
        assert re.search(r"md0: (data-)?check interrupted", dmesg), f"the kernel log shows no interrupted check of md0: {dmesg!r}"
        assert len(re.findall(r"(data-)?check of RAID array md0", dmesg)) >= 2, f"the kernel log shows no restarted check of md0: {dmesg!r}"

    def p1_served():
        n = [int(run.fact(f"p1.io.{k}")) for k in ("before", "after", "later")]
        assert n[0] > 0 and n[0] <= n[1] < n[2], f"O_DIRECT reads and writes of md0 done before, right after and 2 s after the run: {n}"
        expect(run.fact("p1.io.errors"), "", "failed reads or writes of md0 during the check")
        for attr, want in (("group_thread_cnt", "2"), ("skip_copy", "1")):
            expect(run.val("p1.after", f"md0/{attr}"), want, f"kernel md0/{attr} right after the run")
            expect(run.val("p1.end", f"md0/{attr}"), want, f"kernel md0/{attr} after the check ended")
        expect([run.val("p1.end", f"md0/{a}") for a in ("sync_action", "last_sync_action", "mismatch_cnt")],
               ["idle", "check", "0"], "md0 after the check: sync_action, last_sync_action, mismatch_cnt")

    def d1():
        has = run.fact("d1.sysctl") != "none"
        expect(run.fact("kernel").startswith("7.") or not has, True, "harness: only 7.x has sync_io_depth here")
        glob = run.result("d1a")
        md1 = array(glob, "md1")
        # near 2 copies over 4 raid disks (mdadm's default layout 0x102 = 258)
        layout, disks = int(run.val("d1.before", "md1/layout")), int(run.val("d1.before", "md1/raid_disks"))
        copies = (layout & 0xff) * ((layout >> 8) & 0xff)
        expect((copies, disks), (2, 4), "harness: md1 near 2 copies over 4 raid disks")
        s = setting(glob, "md1", "sync_speed_max")
        expect(s.get("per_member_kib_s"), 40000 * copies // disks, "md1 sync_speed_max per_member_kib_s")
        assert "array sectors" in s.get("unit", ""), f"md1 sync_speed_max unit: {s.get('unit')!r}"
        if has:
            expect(run.val("d1a.after", "md1/sync_io_depth"), "64 (local)", "kernel md1/sync_io_depth after a glob run")
            expect(setting(glob, "md1", "sync_io_depth").get("after"), 64, "md1 sync_io_depth after")
            r = run.result("d1b")
            expect(r.get("system", {}).get("sync_io_depth", {}).get("after"), 48, "system sync_io_depth after")
            expect(run.fact("d1b.sysctl"), "48", "kernel /proc/sys/dev/raid/sync_io_depth")
            run.result("d1c")
            expect(run.val("d1c.after", "md1/sync_io_depth"), "32 (system)", "md1 sync_io_depth after \"system\"")
            expect(run.fact("d1c.sysctl"), "32", "kernel sync_io_depth back at its default")
        else:
            skipped = [x for x in md1.get("skipped", []) if x.get("setting") == "sync_io_depth"]
            assert skipped and "Linux 6.16" in skipped[0].get("reason", ""), f"md1 skipped: {md1.get('skipped')}"
            expect(run.val("d1a.after", "md1/sync_io_depth"), "(unreadable)", "harness: no md1/sync_io_depth")
            for tag, key in (("d1b", "arrays[0].sync_io_depth"), ("d1c", "arrays[0].sync_io_depth")):
                r = run.result(tag, rc=2)
                assert r.get("msg", "").startswith(key) and "6.16" in r["msg"], f"{tag}: {r.get('msg')!r}"

    return [
        ("d1 sync_io_depth set and restored (6.16+) or skipped/refused; raid10 limits per member", d1),
        ("p1 run during a check: check paused around the writes, resumed where it stood", p1_paused),
        ("p1 run during a check: md0 serves I/O throughout, values in force after the check", p1_served),
    ]


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


def issue11_checks(run):
    """Issue 11 on the first boot: the layouts real hosts have."""
    def i1_dm():
        r = run.result("i11")
        resolves_to_drives(run, r, "md3", [8, 9, 10], 3)
        expect(array(r, "md3").get("hw_queues"), min(run.queues(i) for i in (8, 9, 10)), "md3 hw_queues")
        expect(run.val("i11.after", "md3/group_thread_cnt"), str(auto_value(run.queues(8), 64)), "kernel md3 group_thread_cnt")

    def i1_nested():
        r = run.result("i11")
        want = min(run.queues(i) for i in (8, 9, 10))
        expect(array(r, "md4").get("hw_queues"), want, "md4 (raid5 over raid1 arrays of partitions) hw_queues")
        expect(run.val("i11.after", "md4/group_thread_cnt"), str(auto_value(want, 64)), "kernel md4 group_thread_cnt")

    def i2_roles():
        roles = run.fact("md6.roles")
        for want in ("spare", "journal", "faulty"):
            assert want in roles, f"harness: md6 shows no {want} member ({roles!r})"
        r = run.result("i11")
        active = min(run.queues(i) for i in (11, 12, 13))
        assert run.queues(14) < active, "harness: the spare/journal/failed drive must have fewer queues"
        expect(array(r, "md6").get("hw_queues"), active, "md6 hw_queues (active members only)")
        expect(run.val("i11.after", "md6/group_thread_cnt"), str(auto_value(active, 64)), "kernel md6 group_thread_cnt")
        d = run.disk(14)
        for part, role in (("p1", "spare"), ("p2", "journal"), ("p3", "faulty")):
            m = member_named(r, "md6", d + part)
            assert role in json.dumps(m), f"md6 member {d}{part} does not report its role {role}: {m}"
            expect(m.get("counted", False), False, f"md6 member {d}{part} ({role}) counted")

    def i4_scsi():
        expect([run.fact(f"rotational.{i}") for i in range(3)], ["1", "0", "0"], "harness: queue/rotational of the virtio-scsi disks")
        assert int(run.fact("scsiqueues.1")) > 1, "harness: the virtio-scsi host gives its LUNs one queue: the SCSI rule proves nothing"
        r = run.result("i11")
        # Every SCSI disk counts 1, a hard disk or not: its mq/ is its host's (scsi_mq_setup_tags).
        for md, scsi in (("md5", (0, 1)), ("md8", (1, 2))):
            for i in scsi:
                m = member_named(r, md, run.fact(f"scsi.{i}") + r"\d*")
                expect(m.get("hw_queues"), 1, f"{md}: SCSI member {m.get('name')} hw_queues")
                assert "SCSI disk, counted as 1 queue" in str(m.get("note")), f"{md}: SCSI member does not say why it counts 1: {m}"
            expect(array(r, md).get("hw_queues"), 1, f"{md} hw_queues (a SCSI member counts 1)")
            expect(run.val("i11.after", f"{md}/group_thread_cnt"), "0", f"kernel {md} group_thread_cnt")

    def i5_reshape():
        expect(run.val("i5.before", "md7/sync_action"), "reshape", "harness: md7 reshaping during i5a")
        r = run.result("i5a")
        expect(r.get("failed", False), False, "i5a failed")
        expect(array(r, "md7").get("compliant"), False, "i5a md7 compliant")
        warns = json.dumps(r.get("warnings", []))
        assert "md7" in warns and "reshape" in warns, f"i5a: no warning naming md7 and the reshape: {warns}"
        for attr in ("group_thread_cnt", "skip_copy", "stripe_cache_size"):
            expect(run.val("i5a.after", f"md7/{attr}"), run.val("i5.before", f"md7/{attr}"), f"kernel md7 {attr} during the reshape (held back)")
        expect(run.val("i5.ended", "md7/sync_action"), "idle", "harness: md7 reshape ended (waited "
               f"{int(run.fact('i5.wait.ds')) / 10} s)")
        expect(run.val("i5.ended", "md7/raid_disks"), "4", "md7 raid_disks after the reshape")
        r = run.result("i5b")
        expect(r.get("changed"), True, "i5b changed")
        want = auto_value(min(run.queues(i) for i in (15, 16)), run.cap())
        expect([run.val("i5b.after", f"md7/{a}") for a in ("group_thread_cnt", "stripe_cache_size", "skip_copy")],
               [str(want), "300", "1"], "kernel md7 after the reshape ended")

    def i6_uuid():
        vol = run.fact("imsm.vol")
        expect(run.fact("imsm.mduuid"), "00000000-0000-0000-0000-000000000000", "harness: md/uuid of the IMSM volume")
        m = re.search(r"MD_UUID=(\S+)", run.fact("imsm.export"))
        assert m, f"mdadm --detail --export shows no MD_UUID: {run.fact('imsm.export')}"
        assert f"md-uuid-{m.group(1)}" in run.fact("imsm.links"), "harness: no udev md-uuid link for the volume"
        r = run.result("i6a")
        expect(array(r, vol).get("uuid"), m.group(1), f"{vol} uuid (from the md-uuid-* link, not the zero md/uuid)")

    def i6_mdmon():
        vol = run.fact("imsm.vol")
        assert run.fact("imsm.mdmon.before"), "harness: mdmon was not running after the volume was created"
        r = run.result("i6a")
        expect(run.val("i6a.after", f"{vol}/stripe_cache_size"), "1024", f"kernel {vol} stripe_cache_size (mdmon running)")
        expect(run.fact("imsm.mdmon.stopped"), "none", "harness: mdmon stopped")
        assert run.rc("i6b") != 124, "i6b: mdtune still running after 20 s with mdmon stopped (hung on the stripe_cache_size write)"
        r = run.result("i6b")
        expect(r.get("failed", False), False, "i6b failed")
        warns = json.dumps(r.get("warnings", []))
        assert "stripe_cache_size" in warns and "mdmon" in warns, f"i6b: no warning naming stripe_cache_size and mdmon: {warns}"
        expect(run.val("i6b.after", f"{vol}/stripe_cache_size"), "1024", f"kernel {vol} stripe_cache_size (skipped without mdmon)")

    def i7_negative():
        expect(run.fact("neg.limit"), "-1", "harness: speed_limit_max reads -1")
        r = run.result("i7a")
        expect(r.get("failed", False), False, "i7a (query of every array) failed")
        assert any(a.get("name") == "md0" for a in r.get("arrays", [])), "i7a does not report md0"
        r = run.result("i7b")
        s = (r.get("system") or {}).get("speed_limit_max") or {}
        expect((s.get("before"), s.get("after")), (-1, 200000), "i7b system speed_limit_max before/after")
        expect(run.fact("neg.after"), "200000", "kernel speed_limit_max after i7b")

    def i8_rollback_order():
        expect(run.fact("i8.rofile"), "ok", "harness: read-only file bind-mounted over md2's sync_speed_max")
        r = run.result("i8", rc=1)
        expect(r.get("failed"), True, "i8 failed (md2's sync_speed_max is read-only)")
        order = [(w.get("target"), w.get("setting")) for w in r.get("rolled_back", [])]
        cache, threshold = ("md0", "stripe_cache_size"), ("md0", "preread_bypass_threshold")
        assert cache in order and threshold in order, f"i8: md0's cache and threshold not both rolled back: {order}"
        assert order.index(cache) < order.index(threshold), f"i8: threshold restored before the cache: {order}"
        expect(r.get("not_restored", []), [], "i8 not_restored")
        expect(run.val("i8.after", "md0/stripe_cache_size"), "4096", "kernel md0 stripe_cache_size after the rollback")
        expect(run.val("i8.after", "md0/preread_bypass_threshold"), "2000", "kernel md0 preread_bypass_threshold after the rollback")

    checks = [
        ("i1 dm-linear on NVMe partitions as members resolve to the drives", i1_dm),
        ("i1 raid5 over raid1 arrays of partitions: queues of the drives below", i1_nested),
        ("i2 spare, write journal, failed member reported, not counted", i2_roles),
        ("i4 virtio-scsi: every SCSI disk counts 1 (rotational or not), next to NVMe", i4_scsi),
        ("i5 reshape: held back while it runs (exit 0, warning), applied after", i5_reshape),
        ("i6 IMSM: uuid from the md-uuid link, not the zero md/uuid", i6_uuid),
        ("i6 IMSM: stripe_cache_size with mdmon, skipped without, never hangs", i6_mdmon),
        ("i7 negative speed_limit_max does not abort the run", i7_negative),
        ("i8 a failed write rolls back the stripe cache before the preread threshold", i8_rollback_order),
    ]
    if "q15.mdtune.strace" in run.blocks or "vm.strace=1" in open(os.path.join(run.dir, "console.log"), errors="replace").read(4096):
        checks.append(("q15 query vs the floor program on real sysfs: same arrays found, time and system calls measured", lambda: q15(run)))
    return checks


Q15_SETTINGS = ("group_thread_cnt", "stripe_cache_size", "sync_speed_max")  # bench/bench.py's
Q15_ROUNDS = 7
# What q15 runs: mdtune's query, the floor program listing mq/, and counting it by link count.
Q15_WHO = {"mdtune": "mdtune query", "floor": "floor (lists mq/)", "links": "floor --mq-links"}


def strace_counts(lines, what):
    """{system call: calls} and the total from an `strace -c` summary."""
    per, total = {}, None
    for line in lines:
        f = line.split()
        if len(f) >= 5 and f[-1] == "total":
            total = int(f[3])
        elif len(f) >= 5 and f[0][0].isdigit():
            per[f[-1]] = int(f[3])
    assert total, f"{what}: no total line in strace -c's summary: {lines[-3:]}"
    expect(sum(per.values()), total, f"{what}: strace -c's calls per system call add up to its total")
    return per, total


def md_role(state, slot):
    """The role md shows for a member's dev-*/state and slot, as mdtune names it (src/host/topology.rs)."""
    flags = state.split(",")
    # faulty next to in_sync or spare: bad blocks md has not acknowledged yet (state_show)
    if "faulty" in flags and "in_sync" not in flags and "spare" not in flags:
        return "faulty"
    if "journal" in flags or slot == "journal":
        return "journal"
    if slot.isdigit():
        return "active" if "in_sync" in flags else "replacement" if "replacement" in flags else "rebuilding"
    if slot:
        return "spare"
    return "active" if "in_sync" in flags else "spare" if "spare" in flags else "unknown"


def floor_arrays(lines):
    """What bench/floor/sysfs_floor.rs printed, one line per array: {array: fields, "members": [...]}.
    A member is NAME:QUEUES:STATE/SLOT:SCSI[:stacked] (QUEUES: its mq/ entries without poll
    queues; SCSI 1 for a SCSI disk); STATE is a comma list, and members
    are joined by commas too, so a piece that does not start a member continues the state."""
    found = {}
    for line in lines:
        if not line.strip():
            continue
        name, *fields = line.split("\t")
        kv = dict(f.split("=", 1) for f in fields if "=" in f)
        assert "members" in kv, f"floor line without members=: {line!r}"
        pieces = []
        for piece in kv["members"].split(",") if kv["members"] else []:
            if re.match(r"^[\w.-]+:\d+:", piece) or not pieces:
                pieces.append(piece)
            else:
                pieces[-1] += "," + piece
        members = []
        for piece in pieces:
            m = re.match(r"^([\w.-]+):(\d+):([^/]*)/([^:]*):([^:]*)(:stacked)?$", piece)
            assert m, f"floor: member {piece!r} of {name} unreadable"
            members.append({"name": m.group(1), "mq": int(m.group(2)), "role": md_role(m.group(3), m.group(4)),
                            "scsi": m.group(5) == "1", "stacked": bool(m.group(6))})
        kv["members"] = members
        found[name] = kv
    return found


def same_work(floor, answer, who):
    """Asserts that the floor found what mdtune's query reports: the same arrays, devname, uuid,
    level, values of the reported settings, members with their roles and (for members that are
    not stacked) queue counts. Returns the members whose queues the floor did not read: it lists a
    stacked device's slaves/ but does not follow them to the drives below, as mdtune must."""
    mine = {a["name"]: a for a in answer.get("arrays", [])}
    expect(sorted(floor), sorted(mine), f"q15: arrays {who} found vs mdtune's query")
    stacked = []
    for name, a in mine.items():
        f = floor[name]
        expect(f["devname"], a.get("devname") or "", f"q15 {name}: devname, {who} vs mdtune")
        expect(re.sub("[^0-9a-f]", "", f["uuid"]), re.sub("[^0-9a-f]", "", a.get("uuid") or ""), f"q15 {name}: uuid, {who} vs mdtune")
        expect(f["level"], a.get("level"), f"q15 {name}: level, {who} vs mdtune")
        settings = a.get("settings", {})
        for attr in Q15_SETTINGS:
            skipped = any(s.get("setting") == attr for s in a.get("skipped", []))
            assert attr in settings or skipped, f"q15 {name}: mdtune neither reports nor skips {attr}"
            if attr in settings:
                raw = f.get(attr, "")
                value = "system" if raw.endswith("(system)") else raw.split(" ")[0]
                expect(value, str(settings[attr].get("before")), f"q15 {name}/{attr}: {who} read vs mdtune's before")
        theirs = {m["name"]: m for m in f["members"]}
        ours = {m["name"]: m for m in a.get("members", [])}
        expect(sorted(theirs), sorted(ours), f"q15 {name}: members, {who} vs mdtune")
        for member, m in ours.items():
            t = theirs[member]
            expect(t["role"], m.get("role"), f"q15 {name}/{member}: role, {who} (state/slot) vs mdtune")
            if t["stacked"]:
                stacked.append(f"{name}/{member}")
                continue
            queues = 1 if t["scsi"] else t["mq"]
            expect(queues, m.get("hw_queues"), f"q15 {name}/{member}: queues, {who} (mq/ without poll queues, SCSI) vs mdtune")
    return stacked


def q15(run):
    """Issue 15: mdtune's query against the floor program (both ways of counting queues) on the
    guest's arrays, real sysfs."""
    answer = run.result("q15")
    found = {}
    for who in ("floor", "links"):
        expect(run.fact(f"q15.{who}.rc").strip(), "0", f"sysfs_floor ({who}) exit status (and stderr)")
        found[who] = floor_arrays(run.block(f"q15.{who}"))
        expect(len(found[who]), int(run.fact("q15.arrays")), f"q15 {who}: arrays found vs /sys/block/md*/md")
        stacked = same_work(found[who], answer, who)
    rcs = dict(w.split("=") for w in run.fact("q15.rcs").split())
    expect(len(rcs), len(Q15_WHO) * Q15_ROUNDS, f"q15: timed runs recorded ({sorted(rcs)})")
    bad = {k: v for k, v in rcs.items() if v != "0"}
    expect(bad, {}, "q15: timed runs that did not exit 0")
    marks = run.marks()
    times, calls = {}, {}
    for who in Q15_WHO:
        missing = [n for n in range(1, Q15_ROUNDS + 1)
                   if f"q15.{who}.{n}.start" not in marks or f"q15.{who}.{n}.end" not in marks]
        assert not missing, f"q15: no kernel log marks around {who} runs {missing}"
        times[who] = [marks[f"q15.{who}.{n}.end"] - marks[f"q15.{who}.{n}.start"] for n in range(1, Q15_ROUNDS + 1)]
        assert all(t > 0 for t in times[who]), f"q15: {who} runs of no time: {times[who]}"
        expect(run.fact(f"q15.{who}.strace.rc"), "0", f"strace -f -c of {who}: exit status")
        calls[who] = strace_counts(run.block(f"q15.{who}.strace"), f"q15 {who}")

    def med(values):
        return sorted(values)[len(values) // 2]

    def figures(who):
        t, (per, total) = sorted(times[who]), calls[who]
        top = ", ".join(f"{k} {v}" for k, v in sorted(per.items(), key=lambda kv: -kv[1])[:6])
        return (f"{Q15_WHO[who]:<18} {med(t) * 1000:.1f} ms ({t[0] * 1000:.1f}-{t[-1] * 1000:.1f}), "
                f"{total} system calls ({top})")

    def ratio(floor):
        # Per round the runs are next to each other in time, so their ratio shrugs off the host's
        # load changing between rounds better than the ratio of the medians does.
        paired = sorted(m / f for m, f in zip(times["mdtune"], times[floor]))
        return (f"mdtune / {Q15_WHO[floor]}: time {med(times['mdtune']) / med(times[floor]):.2f}x (per round: median "
                f"{med(paired):.2f}x, {paired[0]:.2f}-{paired[-1]:.2f}), system calls "
                f"{calls['mdtune'][1] / calls[floor][1]:.2f}x")

    floor = found["floor"]
    members = sum(len(f["members"]) for f in floor.values())
    plain = [m for f in floor.values() for m in f["members"] if not m["stacked"]]
    disks = {m.get("device") for a in answer["arrays"] for m in a.get("members", [])
             if f"{a['name']}/{m['name']}" not in stacked}
    INFO.append(f"info  {run.label:<32} q15 query vs the floor, {len(floor)} arrays ({members} members), real sysfs, "
                f"under TCG: ms per run, median (min-max) of {Q15_ROUNDS} rounds (order rotated); "
                f"system calls of one run under strace -f -c")
    for who in Q15_WHO:
        INFO.append(f"info  {run.label:<32} q15   {figures(who)}")
    for who in ("floor", "links"):
        INFO.append(f"info  {run.label:<32} q15   {ratio(who)}")
    INFO.append(f"info  {run.label:<32} q15   all found the same arrays, members, roles, values and queues. Not the "
                f"same work: the floor lists but does not follow slaves/ of {len(stacked)} stacked members "
                f"({' '.join(stacked)}; mdtune counts the drives below), and reads mq/, slaves/, scsi_disk/ and io_poll "
                f"once per member ({len(plain)} plain members on {len(disks)} disks), mdtune once per disk")


def udev_checks(run):
    """Issue 12 with a real systemd-udevd on the first boot."""
    def logs(name):
        return run.block(f"syslog.{name}")

    def u1():
        expect(run.fact("udevd.control"), "yes", "harness: systemd-udevd's control socket")
        expect(run.fact("u1.stopped"), "", "arrays md0-md2 left after mdadm --stop")
        persisted_values_ok(run, "u1.after", run.cap())
        lines = logs("end")[int(run.fact("log.at.u1")):int(run.fact("log.at.u1end"))]
        events = sum(1 for line in run.block("monitor") if re.search(r"change\s+\S+/block/md[012] ", line))
        for md, want in PERSISTED.items():
            writes = logged_writes(lines, md)
            for attr in want:
                expect(writes.get(attr), 1, f"{md} {attr}: writes mdtune logged after the re-assembly "
                       f"({events} change events on md0-md2 seen by udevadm monitor)")
            assert all(n <= 1 for n in writes.values()), f"{md}: a setting written more than once: {writes}"

    def u1_udevtest():
        assert int(run.fact("u1.udevtest.mdtune")) >= 1, "udevadm test --action=change on md0 shows no mdtune command with the rule installed"

    def u3_boot_resync():
        expect(run.val("u3.resync", "md2/sync_action"), "resync", "harness: md2 resyncing before udev plays its events")
        before = progress(run.val("u3.resync", "md2/sync_completed"), "md2 before the events")
        expect(run.val("u3.resync", "md2/skip_copy"), "0", "harness: md2 skip_copy at the kernel's default before the events")
        expect(run.val("u3.replayed", "md2/sync_action"), "resync", "md2 sync_action after the rule's run (the resync goes on)")
        after = progress(run.val("u3.replayed", "md2/sync_completed"), "md2 after the events")
        for attr, value in PERSISTED["md2"].items():
            expect(run.val("u3.replayed", f"md2/{attr}"), value, f"kernel md2/{attr} after the rule's run during the resync")
        lines = logs("end")[int(run.fact("log.at.u3")):int(run.fact("log.at.u4"))]
        paused = [m for line in lines if "udev --udev md2, " in line
                  for m in re.findall(r"\(resync paused at (\d+) / (\d+), resumed from the kernel's checkpoint\)", line)]
        assert len(paused) == 1, f"the rule's runs logged {len(paused)} paused resyncs of md2: {[x for x in lines if 'md2' in x]}"
        at = int(paused[0][0])
        assert before[0] <= at <= after[0], f"resync at {before[0]} before the events, paused at {at}, at {after[0]} after: progress lost"
        dmesg = "\n".join(run.block("u3.dmesg"))
        assert "md2: resync interrupted" in dmesg, f"the kernel log shows no interrupted resync of md2: {dmesg!r}"

    def u3_resync():
        expect(run.val("u3.resync", "md2/sync_action"), "resync", "harness: md2 resyncing at the change event")
        expect(run.rc("u3a"), 0, "mdtune --udev md2 during the resync, exit status")
        lines = logs("end")[int(run.fact("log.at.u3")):int(run.fact("log.at.u4"))]
        errors = [line for line in mdtune_errors(lines) + run.block("udevd")
                  if "mdtune" in line and "md2" in line and "failed" in line]
        assert not errors, f"errors logged for the change events: {errors}"

    def u3_inactive():
        expect(run.val("u3.inactive", "md0/array_state"), "inactive", "harness: md0 inactive after mdadm -I of one member")
        r = run.result("u3b")
        expect(r.get("failed", False), False, "mdtune --udev md0 (inactive) failed")
        expect(r.get("changed", False), False, "mdtune --udev md0 (inactive) changed")

    def u5():
        assert "mdtune" not in run.fact("u5.rules"), f"the rule is still there after the revert: {run.fact('u5.rules')}"
        reloaded("u5a")
        got = [run.val("u5.reassembled", f"md0/{a}") for a in ("group_thread_cnt", "stripe_cache_size")]
        expect(got, ["0", "256"], "kernel md0 after the re-assembly following the revert (defaults)")
        assert run.val("u5.reassembled", "md0/sync_speed_min").endswith("(system)"), "md0 sync_speed_min after revert + re-assembly"
        assert int(run.fact("u5.udevtest.lines")) > 10, "harness: udevadm test printed (almost) nothing"
        expect(run.fact("u5.udevtest.mdtune"), "0", "mdtune commands in udevadm test after the revert")

    def reloaded(tag):
        # Issue 12: with root / and udevd running, persist and revert reload udev's rules and say so.
        text = json.dumps(run.result(tag).get("persist"))
        assert "udevadm control --reload" in text and "reloaded" in text, f"{tag}: persist does not report a udev reload: {text[:300]}"

    def u4():
        expect(run.rc("u4a"), 0, "persist exit status")
        reloaded("u4a")
        for attr, want in PERSISTED["md0"].items():
            expect(run.val("u4.after", f"md0/{attr}"), want, f"kernel md0/{attr} after a re-assembly straight after persist")

    def u6():
        marks = run.marks()
        for kind, count in (("event", 5), ("run", 10)):
            times = sorted(marks[f"u6.{kind}.{n}.end"] - marks[f"u6.{kind}.{n}.start"] for n in range(1, count + 1)
                           if f"u6.{kind}.{n}.end" in marks)
            assert len(times) == count, f"only {len(times)} timed u6 {kind}s of {count} in the kernel log marks"
            what = ("udev change event on md0 (trigger + rules + settle)" if kind == "event"
                    else "the rule's command, mdtune --udev md0")
            med = times[len(times) // 2] * 1000
            goal = "" if kind == "event" else f" [goal <= 50 ms: {'met' if med <= 50 else 'NOT met'}]"
            INFO.append(f"info  {run.label:<32} u6 {what}, nothing to change: median {med:.1f} ms "
                        f"(min {times[0] * 1000:.1f}, max {times[-1] * 1000:.1f}){goal}")
        for attr, want in PERSISTED["md0"].items():
            expect(run.val("u6.after", f"md0/{attr}"), want, f"kernel md0/{attr} after the timed events")
        lines = run.block("syslog.end")[int(run.fact("log.at.u4")):]
        expect(logged_writes(lines, "md0").get("stripe_cache_size"), 1,
               "md0 stripe_cache_size writes logged from u4 to the end (the 15 timed events change nothing)")

    return [
        ("u1 udev: incremental assembly re-tuned by the rule, one write per setting", u1),
        ("u1 udevadm test shows the rule's mdtune command (control for u5)", u1_udevtest),
        ("u3 boot-time resync: the rule pauses it around its writes and resumes it; values in force", u3_boot_resync),
        ("u3 change event during a resync: exit 0, nothing logged as error", u3_resync),
        ("u3 change event for an inactive array: exit 0, does nothing", u3_inactive),
        ("u5 after revert: rule gone, udev reloaded, re-assembly keeps defaults, udevadm test clean", u5),
        ("u4 persist reloads udev; a re-assembly straight after it is tuned", u4),
        ("u6 rule run time per event reported; events change nothing", u6),
    ]


def second_checks(run):
    """The second boot: a real reboot with multipath=Y and two NUMA nodes."""
    def r2(arrays=("md2", "md1")):
        expect(nodes(run.fact("nodes.possible")), 2, "harness: possible NUMA nodes")
        persisted_values_ok(run, "r2", run.cap(), arrays)
        lines = run.block("syslog.r2")
        for md in arrays:
            assert logged_writes(lines, md), f"no mdtune --udev {md} change in syslog: the values did not come from the rule"

    def r2_initramfs():
        # Debian: the initramfs assembles the root array (mdadm's rules, local-block/mdadm) where
        # neither /usr/local/sbin/mdtune nor /etc/mdtune exist; the real root's udevd then only
        # sees the coldplug "add" event for it.
        r2(("md0",))

    def y1_raw():
        r = run.result("y1raw")
        for md, drives in (("md0", R5), ("md2", P5)):
            want = auto_value(min(run.queues(i) for i in drives), 64)
            expect(run.val("y1raw.after", f"{md}/group_thread_cnt"), str(want), f"kernel {md} group_thread_cnt (raw queues via paths)")
            resolves_to_drives(run, r, md, drives, 3)

    def y1_numa():
        r = run.result("y1")
        cap = run.cap()
        expect(cap, 1, "harness: 2 CPUs / 2 possible nodes")
        for md, drives in (("md0", R5), ("md2", P5)):
            want = auto_value(min(run.queues(i) for i in drives), cap)
            expect(setting(r, md, "group_thread_cnt").get("after"), want, f"{md} group_thread_cnt after (max = CPUs / nodes)")
            expect(run.val("y1.after", f"{md}/group_thread_cnt"), str(want), f"kernel {md} group_thread_cnt")

    def y11():
        r = run.result("y11")
        resolves_to_drives(run, r, "md3", [8, 9, 10], 3)
        want = min(run.queues(i) for i in (8, 9, 10))
        for md in ("md3", "md4"):
            expect(array(r, md).get("hw_queues"), want, f"{md} hw_queues")
            expect(run.val("y11.after", f"{md}/group_thread_cnt"), str(auto_value(want, 64)), f"kernel {md} group_thread_cnt")

    return [
        ("r2 reboot: udev assembled md1, md2 and the rule tuned them before the script looked", r2),
        ("r2 reboot: md0 assembled before udevd (as an initramfs does) tuned after coldplug", r2_initramfs),
        ("y1 auto on multipath heads: raw queue count through the paths", y1_raw),
        ("y1 NUMA: default max = online CPUs / nodes with CPUs", y1_numa),
        ("y11 dm-linear and nested raid on partitions of multipath heads", y11),
    ]


def auto_checks(run):
    """The auto boot: a CPU-less NUMA node, an isolated CPU, virtio-blk disks, roles inside nested
    arrays, a multipath map with no paths, a revert ordered from the values (docs/auto.md)."""
    def q(serial):
        return int(run.fact(f"vdqueues.{serial}"))

    def layout():
        expect(run.fact("nodes.possible"), "0-1", "harness: node/possible")
        expect(run.fact("nodes.has_cpu"), "0", "harness: node/has_cpu (node 1 has memory, no CPUs)")
        expect(run.fact("online"), "0-4", "harness: cpu/online")
        expect(run.fact("cpu.isolated"), "4", "harness: cpu/isolated (isolcpus=4)")
        nohz = run.fact("cpu.nohz_full")
        assert nohz in ("3", ""), f"harness: cpu/nohz_full {nohz!r} (nohz_full=3; empty without NO_HZ_FULL)"
        # isolcpus= takes a CPU out of the kernel's mask for unbound work on every series;
        # nohz_full= does on some (6.1, 6.12) and not on others (7.x): the mask decides.
        unbound = bitmap(run.fact("wq.cpumask"))
        assert unbound is not None and 4 not in unbound, f"harness: workqueue/cpumask {run.fact('wq.cpumask')!r}"
        for serial, want in (("V0", 5), ("V3", 3), ("V5", 1)):
            expect(q(serial), want, f"harness: virtqueues (mq/ entries) of {serial}")
            expect(run.fact(f"vdrotational.{serial}"), "1", f"harness: virtio-blk {serial} queue/rotational")
        assert run.fact("vddevice.V0").endswith(" virtio"), f"harness: vda's device: {run.fact('vddevice.V0')!r}"
        assert "faulty" in run.fact("md32.roles") and "spare" in run.fact("md31.roles"), \
            f"harness: roles md31 {run.fact('md31.roles')!r}, md32 {run.fact('md32.roles')!r}"
        assert run.vd("V5") in run.fact("md31.slaves") and run.vd("V5") in run.fact("md32.slaves"), \
            "harness: the spare and the failed member are in the nested arrays' slaves/"

    def virtio():
        r = run.result("a1")
        want = auto_value(min(q(s) for s in ("V0", "V1", "V2")), 64)
        assert want > 1, "harness: virtio-blk disks with one queue prove nothing"
        s = setting(r, "md30", "group_thread_cnt")
        expect(s.get("after"), want, "md30 group_thread_cnt after (virtio-blk counts its virtqueues)")
        expect(run.val("a1.after", "md30/group_thread_cnt"), str(want), "kernel md30 group_thread_cnt")
        for m in array(r, "md30").get("members", []):
            expect(m.get("hw_queues"), want, f"md30 member {m.get('name')} hw_queues")
            assert "note" not in m, f"md30 member counted as rotational: {m}"

    def nested():
        r = run.result("a1")
        want = auto_value(min(q("V3"), q("V4")), 64)
        expect(setting(r, "md33", "group_thread_cnt").get("after"), want,
               "md33 group_thread_cnt after (the nested spare and failed member not counted)")
        expect(run.val("a1.after", "md33/group_thread_cnt"), str(want), "kernel md33 group_thread_cnt")
        expect(array(r, "md33").get("hw_queues"), want, "md33 hw_queues")

    def ceiling():
        r = run.result("a2")
        cap = run.cap()
        expect(cap, len(run.housekeeping()), "harness: CPUs open to unbound work / 1 node with CPUs")
        assert cap != 5 // 2, "harness: the old rule (online / possible nodes) gives the same ceiling"
        want = auto_value(min(q(s) for s in ("V0", "V1", "V2")), cap)
        s = setting(r, "md30", "group_thread_cnt")
        expect(s.get("after"), want, "md30 default auto")
        expect(run.val("a2.after", "md30/group_thread_cnt"), str(want), "kernel md30 group_thread_cnt")
        why = str(s.get("why"))
        for part in (f"capped at {cap}", f"{cap} CPUs (5 online, {5 - cap} isolated)", "1 node with CPUs"):
            assert part in why, f"md30 why does not say {part!r}: {why!r}"

    def no_paths():
        expect(run.fact("a3.slaves"), "", f"harness: slaves/ of {run.fact('a3.dm')} with no paths")
        expect(run.fact("a3.mq"), "1", "harness: the map's own mq/ (dm_mq_nr_hw_queues)")
        expect(run.val("a3.before", "md34/group_thread_cnt"), "2", "harness: md34 group_thread_cnt before")
        r = run.result("a3")
        expect(r.get("changed"), False, "changed")
        expect(run.val("a3.after", "md34/group_thread_cnt"), "2", "kernel md34 group_thread_cnt (no write)")
        warnings = json.dumps(r.get("warnings"))
        assert "md34" in warnings and run.fact("a3.dm") in warnings, f"no warning naming md34 and the map: {warnings}"
        m = array(r, "md34").get("members", [])[0]
        expect(m.get("hw_queues"), None, f"md34 member {m.get('name')} hw_queues")

    def revert_order():
        expect([run.val("a4.before", f"md30/{a}") for a in ("stripe_cache_size", "preread_bypass_threshold")],
               ["256", "1500"], "harness: md30 threshold above the cache (the kernel allows it)")
        run.result("a4a")
        expect([run.val("a4a.after", f"md30/{a}") for a in ("stripe_cache_size", "preread_bypass_threshold")],
               ["4096", "3000"], "kernel md30 after tuning")
        r = run.result("a4b")
        expect(r.get("failed", False), False, "revert failed")
        expect([run.val("a4b.after", f"md30/{a}") for a in ("stripe_cache_size", "preread_bypass_threshold")],
               ["256", "1500"], "kernel md30 after the revert")
        expect(run.val("a4b.after", "md33/group_thread_cnt"), "0", "kernel md33 group_thread_cnt after the revert")

    def poll_queues():
        # nvme.write_queues=2 nvme.poll_queues=2 on 5 vCPUs, 8 queue pairs: 2/4/2 default/read/poll.
        assert int(run.fact("debugfs")) > 0, "harness: no block/ in debugfs (CONFIG_BLK_DEBUG_FS), which names the poll queues"
        for i in range(3):
            types = dict(w.split("=") for w in run.fact(f"hctx.{i}").split())
            polled = sorted(int(n) for n, t in types.items() if t == "poll")
            expect(len(polled), 2, f"harness: poll queues of {run.disk(i)} (debugfs: {types})")
            expect(polled, [len(types) - 2, len(types) - 1], f"harness: {run.disk(i)}'s poll queues are its last")
            assert "read" in types.values(), f"harness: {run.disk(i)} has no read queue (nvme.write_queues=2): {types}"
            expect(int(run.fact(f"mqdirs.{i}")), len(types), f"harness: mq/ entries of {run.disk(i)} vs debugfs")
        r = run.result("a6")
        want = min(run.queues(i) for i in range(3))
        expect(want, int(run.fact("mqdirs.0")) - 2, "harness: queues that carry md's I/O = mq/ entries - 2 poll queues")
        expect(array(r, "md35").get("hw_queues"), want, "md35 hw_queues (poll queues not counted)")
        expect(setting(r, "md35", "group_thread_cnt").get("after"), auto_value(want, 64), "md35 group_thread_cnt")
        for m in array(r, "md35").get("members", []):
            i = next(i for i in range(3) if run.disk(i) == m.get("name"))
            expect(m.get("hw_queues"), run.queues(i), f"md35 member {m.get('name')} hw_queues")
            note = str(m.get("note"))
            assert f"({run.fact(f'mqdirs.{i}')} mq/, 2 poll)" in note, f"md35 member {m.get('name')} note: {note!r}"

    def bad_blocks():
        state = run.fact("a7.state").split(",")
        assert "faulty" in state and "in_sync" in state, f"harness: md35/dev-{run.disk(1)} state {state} (unacknowledged bad blocks)"
        r = run.result("a7")
        m = member_named(r, "md35", run.disk(1))
        expect((m.get("role"), m.get("counted")), ("active", True), f"md35 member {run.disk(1)} with unacknowledged bad blocks")
        expect(array(r, "md35").get("hw_queues"), min(run.queues(i) for i in range(3)), "md35 hw_queues")
        INFO.append(f"info  {run.label:<32} a7 state with unacknowledged bad blocks: {run.fact('a7.state')!r}, "
                    f"after the run: {run.fact('a7.state.after')!r}")

    def masks():
        # What the kernel gives besides cpu/isolated, for docs/auto.md (not asserted).
        INFO.append(f"info  {run.label:<32} auto masks: cpu/isolated {run.fact('cpu.isolated')!r}, "
                    f"cpu/nohz_full {run.fact('cpu.nohz_full')!r}, workqueue/cpumask {run.fact('wq.cpumask')!r}, "
                    f"raid5wq/cpumask {run.fact('wq.raid5wq')!r}")

    return [
        ("a0 layout: CPU-less node, isolated CPU, virtio-blk queues, nested roles", layout),
        ("a1 virtio-blk: raid5 counts the virtqueues (rotational 1 is not a hard disk)", virtio),
        ("a1 nested roles: raid5 over raid1 pairs, spare and failed member not counted", nested),
        ("a2 ceiling: CPUs open to unbound work / nodes with CPUs, and why says so", ceiling),
        ("a3 multipath map with no paths: no write, a warning", no_paths),
        ("a4 revert restores a threshold above the restored cache", revert_order),
        ("a5 masks recorded", masks),
        ("a6 NVMe poll queues (2/4/2 default/read/poll): not counted, as debugfs names them", poll_queues),
        ("a7 a member with unacknowledged bad blocks (faulty,in_sync,blocked) counts", bad_blocks),
    ]


# --- the power cut (issue 31): tests/vm/guest/powercut.sh and after-powercut.sh --------------------
# What the power-cut run persists, and the files it writes (the order of docs/reference.md §6).
PC_WANTED = {"stripe_cache_size": ("4096", 4096), "sync_speed_max": ("30000 (local)", 30000)}
PC_FILES = {"manifest": "/etc/mdtune/installed.json", "state": "/etc/mdtune/mdtune.json",
            "binary": "/usr/local/sbin/mdtune", "rule": "/etc/udev/rules.d/90-mdtune.rules"}


def console_marks(run):
    """Kernel time (s) of the power-cut boot's console marks (level 3 "@@T NAME") and of the
    panic that sysrq c causes ("panic")."""
    path = os.path.join(run.dir, "console.log")
    text = open(path, errors="replace").read() if os.path.exists(path) else ""
    out = {m.group(2): float(m.group(1)) for m in re.finditer(r"\[\s*([0-9.]+)\]\s+@@T (\S+)", text)}
    m = re.search(r"\[\s*([0-9.]+)\]\s+Kernel panic - not syncing: sysrq triggered crash", text)
    if m:
        out["panic"] = float(m.group(1))
    return out


def powercut_checks(run, boot):
    """The power cut: powercut.sh persists and crashes the kernel the moment mdtune has exited;
    after-powercut.sh, booted from the same disks, must find every persisted file whole and the
    values put back by the rule (docs/reliability.md, durable persistence)."""
    def crashed():
        expect(run.done, None, "guest script end (@@DONE): the boot must end in the crash, not in /init's poweroff")
        expect(run.fact("pc.crash"), "now", "the script's last record before sysrq c")
        for name, rc in run.steps.items():
            expect(rc, 0, f"setup step {name}")
        expect(run.fact("kernel"), run.abi, "guest kernel")
        marks = console_marks(run)
        assert "panic" in marks, f"no 'Kernel panic - not syncing: sysrq triggered crash' in {run.dir}/console.log"
        expect(run.qemu_rc, "0", "QEMU's exit status (panic=-1 and -no-reboot: it exits at the reset)")

    def persisted():
        fs, opts = (run.fact("pc.mount").split() + ["", "", ""])[2:4]
        expect(fs, "ext4", "harness: the /etc disk's file system")
        hiding = {"sync", "dirsync", "data=journal"} & set(opts.split(","))
        assert not hiding, f"harness: /etc disk mounted with {sorted(hiding)}, which would write without mdtune asking"
        r = run.result("pc")
        expect(r.get("changed"), True, "changed")
        expect((r.get("persist") or {}).get("changed"), True, "persist.changed")
        expect((r.get("persist") or {}).get("files"), list(PC_FILES.values()), "persist.files, in the order written")
        for attr, (kernel, value) in PC_WANTED.items():
            before = run.val("pc.before", f"md0/{attr}")
            assert before != kernel, f"harness: md0/{attr} already {before} before the run; it must change"
            s = setting(r, "md0", attr)
            expect((s.get("after"), s.get("changed")), (value, True), f"md0 {attr} after/changed")

    def right_after():
        marks = console_marks(run)
        for name in ("pc.start", "pc.exit", "panic"):
            assert name in marks, f"no {name} mark on the console ({run.dir}/console.log)"
        ran, gap = marks["pc.exit"] - marks["pc.start"], marks["panic"] - marks["pc.exit"]
        INFO.append(f"info  {run.label:<32} power cut: mdtune's persist run took {ran:.2f} s, the kernel "
                    f"panicked {gap:.2f} s after it exited ({marks['panic'] - marks['pc.start']:.2f} s after it started)")
        # ext4 commits its journal every 5 s on its own; a crash later than that could let an
        # unsynced rename through and prove less.
        assert 0 <= gap < 3, f"the crash came {gap:.2f} s after mdtune exited; it must come at once (under 3 s)"

    def pc_run():
        return Run(os.path.join(os.path.dirname(run.dir), "powercut"))

    def written(pc, path):
        """What the power-cut run said it wrote to path (its diff's after)."""
        for d in pc.result("pc").get("diff") or []:
            if d.get("after_header") == path:
                return d.get("after")
        raise AssertionError(f"the power-cut run's diff has no entry for {path}")

    def on_disk(name):
        text = run.fact(f"pc.file.{name}")
        assert text != "missing", f"{PC_FILES[name]} is missing after the power cut"
        size, _, data = text.partition(" ")
        content = base64.b64decode(data).decode(errors="replace")
        expect(len(content.encode()), int(size), f"{PC_FILES[name]}: bytes received vs its size")
        assert content, f"{PC_FILES[name]} is empty after the power cut (its data never reached the disk)"
        return content

    def journal():
        assert "recovery complete" in run.fact("pc.journal"), \
            f"harness: ext4 did not replay the /etc disk's journal, so it was not cut off: {run.fact('pc.journal')!r}"

    def state():
        pc = pc_run()
        content = on_disk("state")
        try:
            saved = json.loads(content)
        except ValueError as e:
            raise AssertionError(f"{PC_FILES['state']} is not valid JSON ({e}): {content[:200]!r}") from None
        assert isinstance(saved, dict), f"{PC_FILES['state']} is not a JSON object: {content[:200]!r}"
        for key, value in json.loads(pc.inputs["pc"]).items():
            if key not in ("persist", "diff"):
                expect(saved.get(key), value, f"{PC_FILES['state']}: the input's {key}")
        expect(content, written(pc, PC_FILES["state"]), f"{PC_FILES['state']} vs what the run reported writing")

    def manifest_rule_binary():
        pc = pc_run()
        for name in ("manifest", "rule"):
            expect(on_disk(name), written(pc, PC_FILES[name]), f"{PC_FILES[name]} vs what the run reported writing")
        listed = json.loads(on_disk("manifest"))
        assert isinstance(listed, dict), f"the manifest is not a JSON object: {listed!r}"
        expect(listed.get("created"), sorted(p for n, p in PC_FILES.items() if n != "manifest"),
               "the manifest's files (created)")
        assert isinstance(listed.get("written_unix"), int), f"the manifest has no written_unix: {listed!r}"
        assert f"{PC_FILES['binary']} --udev %k" in on_disk("rule"), "the rule does not run the installed binary"
        size = re.fullmatch(r"<binary, (\d+) bytes>\n?", written(pc, PC_FILES["binary"]) or "")
        assert size, f"the run's diff for {PC_FILES['binary']}: {written(pc, PC_FILES['binary'])!r}"
        expect(run.fact("pc.binary"), f"{size.group(1)} same", f"{PC_FILES['binary']}: size, and cmp with the binary run")

    def query():
        pc = pc_run()
        want = {**{k: v for k, v in json.loads(pc.inputs["pc"]).items() if k != "diff"}, "state": "query"}
        expect(json.loads(run.inputs["pcq"]), want, "harness: the query's input is the power-cut run's")
        r = run.result("pcq")
        expect((r.get("persist") or {}).get("files"), [], "persisted files that differ from what a persist writes")
        expect(r.get("compliant"), True, "query compliant (persisted files and live values)")

    def values():
        assert "md0 : active" in run.fact("pc.mdstat"), f"md0 not assembled by udev: {run.fact('pc.mdstat')}"
        for attr, (kernel, _) in PC_WANTED.items():
            expect(run.val("pc.after", f"md0/{attr}"), kernel, f"kernel md0/{attr} after the assembly")
        # Auto's group_thread_cnt is persisted too (thread_policy's default): as the run set it.
        gtc = setting(pc_run().result("pc"), "md0", "group_thread_cnt")
        expect(run.val("pc.after", "md0/group_thread_cnt"), str(gtc.get("after")), "kernel md0/group_thread_cnt (auto)")
        changed = [a for a, s in array(pc_run().result("pc"), "md0").get("settings", {}).items() if s.get("changed")]
        writes = logged_writes(run.block("syslog.pc"), "md0")
        expect(sorted(writes), sorted(changed), "settings mdtune --udev md0 logged writing (the rule put them back)")

    if run.phase == "powercut":
        return [
            ("pc boot: md0 built, /etc synced, then the kernel crashed by sysrq c", crashed),
            ("pc persist: exit 0, changed, four files, values other than the live ones", persisted),
            ("pc the crash came right after mdtune exited", right_after),
        ]
    return [
        ("boot: guest ran all scenarios", boot),
        ("pc after the power cut: ext4 replayed the /etc disk's journal", journal),
        ("pc after the power cut: the state file whole, the input as persist writes it", state),
        ("pc after the power cut: manifest, rule and binary as the run wrote them", manifest_rule_binary),
        ("pc after the power cut: a query of the input finds every persisted file as persist writes it", query),
        ("pc after the power cut: udev assembled md0, the rule put the values back", values),
    ]


INFO = []


def timing(run):
    """Where a boot's time went: the guest's uptime at each step, the longest gaps."""
    if not run.at:
        return
    at = run.at + [(run.at[-1][0], "end")]
    gaps = sorted(((b[0] - a[0], a[1]) for a, b in zip(at, at[1:])), reverse=True)[:4]
    INFO.append(f"info  {run.label:<32} boot {run.seconds} s on the host (QEMU CPU time {run.cpu} s); script from {at[0][0]:.0f} s to "
                f"{at[-1][0]:.0f} s of guest uptime; longest: " + ", ".join(f"{n} {g:.1f} s" for g, n in gaps))

def main():
    passed = failed = 0
    for d in sys.argv[1:]:
        run = Run(d)
        run_failed = 0
        for name, fn in scenarios(run):
            try:
                fn()
                print(f"ok    {run.label:<32} {name}")
                passed += 1
            except Exception as e:  # AssertionError, or a result shaped unlike the contract
                detail = str(e) if isinstance(e, AssertionError) else f"{type(e).__name__}: {e}"
                print(f"FAIL  {run.label:<32} {name}\n        {detail}")
                failed += 1
                run_failed += 1
        timing(run)
        if run_failed and run.done is None:
            console = os.path.join(d, "console.log")
            tail = open(console, errors="replace").read().splitlines()[-25:] if os.path.exists(console) else []
            print(f"---- last lines of {console}:\n" + "\n".join(tail))
    for line in INFO:
        print(line)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
