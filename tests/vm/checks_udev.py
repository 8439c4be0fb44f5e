"""A real systemd-udevd on the first boot (u1-u6: the rule tunes what udev assembles, pauses a
boot-time resync, reloads, goes after a revert) and the second boot (a reboot: udev assembled
and tuned, multipath and NUMA).
"""
import json
import re

from vmlib import (
    INFO, P5, PERSISTED, R5, array, auto_value, expect, logged_writes, mdtune_errors, nodes,
    persisted_values_ok, progress, resolves_to_drives, setting,
)


def udev_checks(run):
    """The udev replay (docs/reference.md §6, Persistence and revert) with a real systemd-udevd on
    the first boot."""
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
        # With root / and udevd running, persist and revert reload udev's rules and say so.
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
            what = ("udev change event on md0 (trigger --settle: to the event's end)" if kind == "event"
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
