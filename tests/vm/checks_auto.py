"""The auto boot (a0-a7): a KVM guest's shape, where `auto` must count virtqueues, nested roles,
NUMA nodes without CPUs, isolated CPUs, poll queues and unacknowledged bad blocks right.
"""
import json

from vmlib import INFO, array, auto_value, bitmap, expect, member_named, setting


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
