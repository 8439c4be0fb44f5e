"""The power-cut boots: persist, then the kernel crashed the moment mdtune exits; on the next boot
the persisted files are whole and the rule put the values back.
"""
import base64
import json
import os
import re

from vmlib import INFO, Run, array, expect, logged_writes, setting


# --- the power cut (docs/reliability.md, "Durable persistence"): tests/vm/guest/powercut.sh and after-powercut.sh --------------------
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
        assert "md0 : active" in run.fact("pc.mdstat"), \
            f"md0 not assembled by udev: {run.fact('pc.mdstat')}; udevd's log: {run.block('udevd')}"
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
