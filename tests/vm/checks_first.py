"""The checks of each boot, by phase (`scenarios`), and on the first boot the scenarios s1-s10 of
the whole contract on a real kernel and the sync-aware writes (p1, d1; k1 and k2 in checks_pause).
"""
import json
import re

from checks_auto import auto_checks
from checks_layouts import layout_checks
from checks_measure import measure_checks
from checks_boost import boost_checks
from checks_pause import pause_checks
from checks_health import health_checks
from checks_powercut import powercut_checks
from checks_udev import second_checks, udev_checks
from vmlib import ATTRS, P5, R5, array, auto_value, expect, progress, setting


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
    ] + sync_checks(run) + boost_checks(run) + pause_checks(run) + measure_checks(run) + layout_checks(run) + health_checks(run) + udev_checks(run)


def sync_checks(run):
    """A run during a check (docs/reference.md §4, Applying) pauses the check around the writes that suspend the
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
