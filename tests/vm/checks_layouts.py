"""The first boot's layouts (i1-i8: dm, nested md, virtio-scsi, reshape, IMSM, rollback order) and
q15: query's time and system calls on real sysfs next to the floor program's.
"""
import json
import os
import re

from vmlib import INFO, array, auto_value, expect, member_named, resolves_to_drives


def layout_checks(run):
    """The layouts real hosts have (docs/auto.md), on the first boot."""
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


Q15_SETTINGS = ("group_thread_cnt", "stripe_cache_size", "sync_speed_max")  # bench/benchlib.py's SETTINGS


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
    """mdtune's query against the floor program (both ways of counting queues) on the
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
