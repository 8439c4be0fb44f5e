#!/usr/bin/env python3
"""Host-side assertions of the VM suite.

Usage: check.py RUN_DIR...   (each written by tests/vm/run.sh: boot.txt, results.log, console.log)

Reads the records tests/vm/scenarios.sh printed in each guest (see its header), checks every
scenario against what the guest itself read from sysfs, prints one line per check and ends with
"N passed, N failed". Exit status 0 only when nothing failed. A boot that did not finish fails
its "boot" check and every scenario check whose records are missing.
"""
import json
import os
import re
import sys


class Run:
    """The records of one guest boot."""

    def __init__(self, directory):
        self.dir = directory
        self.series, self.abi, self.mp, self.qemu_rc = open(os.path.join(directory, "boot.txt")).read().split()
        self.facts, self.vals, self.runs, self.inputs, self.steps = {}, {}, {}, {}, {}
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
        return f"{self.series}/multipath={self.mp}"

    # --- accessors that fail with a useful message -------------------------------------------
    def result(self, tag, rc=0):
        """The JSON object of run TAG; asserts the exit status and that stdout is one JSON object."""
        assert tag in self.runs, f"no mdtune run {tag!r} recorded (guest stopped early?)"
        r = self.runs[tag]
        try:
            obj = json.loads(r["stdout"])
        except ValueError:
            raise AssertionError(f"{tag}: stdout is not one JSON object (exit {r['rc']}): "
                                 f"{r['stdout'][:300]!r} stderr: {r['stderr'][:300]!r}")
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
        return int(self.fact(f"queues.{i}"))


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

    def cpus():
        return int(run.fact("cpus"))

    def boot():
        assert run.done is not None, f"guest never finished (qemu exit {run.qemu_rc}; see {run.dir}/console.log)"
        expect(run.done, "0", "guest script exit status")
        for name, rc in run.steps.items():
            expect(rc, 0, f"setup step {name}")
        expect(run.fact("kernel"), run.abi, "guest kernel")

    def layout():
        expect(run.fact("multipath"), run.mp, "nvme_core multipath parameter")
        expect(len({run.disk(i) for i in range(8)}), 8, "distinct NVMe namespaces found by serial")
        heads = {run.fact(f"headmq.{i}") for i in range(8)}
        # multipath=Y: the namespace head has no mq/, queues live on hidden nvmeXcYnZ paths.
        expect(heads, {"yes"} if run.mp == "N" else {"no"}, "mq/ on /sys/block/nvmeXn1")
        for i in range(8):
            assert run.queues(i) >= 2, f"{run.disk(i)} shows {run.queues(i)} queues; the auto checks need >= 2"
        assert q0() != q2(), f"md0 and md2 members have the same queue count {q0()}; the combine check needs them to differ"

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
            want = auto_value(q, cpus())
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
        want_gtc = auto_value(q0(), cpus())
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
        want = [str(auto_value(q2(), cpus())), "4096", "30000 (local)"]
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
        # README: --udev logs to the system log (/dev/kmsg here) only when it changed something.
        assert int(run.fact("kmsg.s9b")) >= 1, "mdtune --udev md2 changed values but logged nothing to the kernel log"
        text = run.fact("kmsg.s9b.text")
        assert "md2" in text and "stripe_cache_size" in text, f"kernel log does not name md2 and stripe_cache_size: {text!r}"
        expect(run.fact("kmsg.s9c"), run.fact("kmsg.s9b"), "mdtune lines in the kernel log after a repeated --udev event")

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
    ]


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
        if run_failed and run.done is None:
            console = os.path.join(d, "console.log")
            tail = open(console, errors="replace").read().splitlines()[-25:] if os.path.exists(console) else []
            print(f"---- last lines of {console}:\n" + "\n".join(tail))
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
