"""The effect, measured, on a real kernel (first boot, m1-m3): mdtune --measure's figures are md0's
own counters (they match the growth of /sys/block/md0/stat the guest read around it), and a
measured run's verdict agrees with its own numbers, under a steady load and during a check."""
import re

from vmlib import array, expect

SECTOR = 512


def stat_fields(text):
    f = [int(x) for x in text.split()]
    return {"read": f[2] * SECTOR, "write": f[6] * SECTOR, "ios": f[0] + f[4]}


def consistent(e, what):
    """The verdict agrees with the deciding figure's before and after."""
    verdict, figure = e.get("verdict"), e.get("decided_by")
    print(f"    {what}: {verdict} by {figure}: {e.get('why')}")
    print(f"    {what}: before {e.get('before')}")
    print(f"    {what}: after  {e.get('after')}")
    if verdict == "inconclusive":
        assert e.get("why"), f"{what}: inconclusive without a why: {e}"
        return
    b, a = e["before"][figure], e["after"][figure]
    if verdict == "faster":
        assert a > b, f"{what}: faster, but {figure} went {b} -> {a}"
    elif verdict == "slower":
        assert a < b, f"{what}: slower, but {figure} went {b} -> {a}"
    else:
        expect(verdict, "same", f"{what}: verdict")
        m = re.search(r"the spread is ±([0-9.]+) (MiB|KiB)/s", e.get("why", ""))
        assert m, f"{what}: same, but its why names no spread: {e.get('why')!r}"
        spread = float(m.group(1)) * (1048576 if m.group(2) == "MiB" else 1)
        # The spread is rounded to a tenth of a MiB/s (or a KiB/s) in the words.
        slack = 0.05 * 1048576 if m.group(2) == "MiB" else 0.5
        assert abs(a - b) <= spread + slack, f"{what}: same, but {figure} went {b} -> {a}, beyond ±{spread}"


def measure_checks(run):
    def m2():
        r = run.result("m2")
        md0 = r["arrays"][0]
        # A window shorter than 4 s is read every quarter of it: 4 intervals of 750 ms.
        expect((md0["name"], md0["samples"], r["seconds"], r["interval_ms"]), ("md0", 4, 3, 750),
               "--measure: array, samples, seconds, interval")
        before, after = (stat_fields(run.fact(f"m2.stat.{k}")) for k in ("before", "after"))
        for figure, key in (("read_bytes_per_second", "read"), ("write_bytes_per_second", "write")):
            grown = after[key] - before[key]
            seen = md0[figure] * r["seconds"]
            print(f"    m2: {figure} {md0[figure]} x 3 s = {seen} bytes; stat grew {grown} bytes around it")
            assert grown > 0, f"harness: md0's stat shows no {key} during --measure (the dd loop?)"
            # The window lies inside the guest's two reads: at most their growth, and most of it.
            assert 0.5 * grown <= seen <= 1.05 * grown, f"--measure {figure}: {seen} bytes in 3 s, stat grew {grown}"

    def m1():
        r = run.result("m1")
        e = array(r, "md0").get("effect")
        assert e, f"m1: no effect in the report: {r.get('msg')!r}"
        expect((e["before"]["samples"], e["after"]["samples"], e["decided_by"] or "bytes_per_second"),
               (4, 4, "bytes_per_second"), "m1: samples per window, deciding figure")
        expect(run.val("m1.after", "md0/group_thread_cnt"), "2", "m1: md0 group_thread_cnt after the run")
        assert e["before"]["bytes_per_second"] > 0, f"m1: no I/O measured under the dd loop: {e}"
        assert "measured: md0 " in r.get("msg", ""), f"m1: msg names no verdict: {r.get('msg')!r}"
        consistent(e, "m1")

    def m3():
        r = run.result("m3")
        a = array(r, "md0")
        e = a.get("effect")
        assert e, f"m3: no effect in the report: {r.get('msg')!r}"
        pause = a.get("sync_pause") or {}
        expect((pause.get("action"), pause.get("resumed")), ("check", True), "m3: the check paused and resumed")
        assert e["before"]["sync_speed_kib_s"], f"m3: no sync speed before the writes: {e}"
        if e["verdict"] != "inconclusive":
            expect(e["decided_by"], "sync_speed_kib_s", "m3: the sync decides while it runs through both windows")
        consistent(e, "m3")

    return [
        ("m2 --measure: md0's figures are its own stat's growth", m2),
        ("m1 a change measured under a steady load: the verdict agrees with the numbers", m1),
        ("m3 a change measured during a check it pauses: the sync's speed after it runs again", m3),
    ]
