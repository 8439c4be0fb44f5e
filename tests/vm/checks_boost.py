"""First boot, b1: a sync boost that ends with the sync (docs/reference.md §2, `sync_boost`), on
md1's real raid10 resync. While the resync runs, a run writes the boost's values after recording
the values before it in /run/mdtune/boost-md1.json; once the kernel ends the resync (no uevent),
one `mdtune --tick` puts the earlier limits back and removes the record; a second tick changes
nothing.
"""
import json

from vmlib import INFO, expect


def boost_checks(run):
    def b1_boosted():
        expect(run.val("b1.before", "md1/sync_action"), "resync", "harness: md1 resyncs before b1")
        r = run.result("b1a")
        b = r["arrays"][0]["sync_boost"]
        expect((b["active"], b["limits"]), (True, {"sync_speed_min": 1000000, "sync_speed_max": 2000000}),
               "b1a: the boost is active with its values")
        expect(run.val("b1a.after", "md1/sync_speed_min"), "1000000 (local)", "md1/sync_speed_min while boosted")
        expect(run.val("b1a.after", "md1/sync_speed_max"), "2000000 (local)", "md1/sync_speed_max while boosted")
        rec = json.loads(run.fact("b1a.record"))
        expect((rec["action"], rec["saved"]), ("resync", {"sync_speed_min": "500", "sync_speed_max": "2000"}),
               "b1a: the record keeps the resync and the values before the boost")

    def b1_ended():
        expect(run.val("b1.ended", "md1/sync_action"), "idle", "md1 resync ended (within 25 s, boosted)")
        expect(run.val("b1.ended", "md1/sync_speed_max"), "2000000 (local)", "md1 still boosted before the tick")
        t = run.result("b1t1")
        expect(t["changed"], True, "b1t1 changed")
        ended = t["ended"]
        expect([(e["array"], e["sync"], e["left_alone"]) for e in ended], [("md1", "resync", {})],
               "b1t1 ended md1's resync boost, nothing left alone")
        expect(run.val("b1t1.after", "md1/sync_speed_min"), "500 (local)", "md1/sync_speed_min after the tick")
        expect(run.val("b1t1.after", "md1/sync_speed_max"), "2000 (local)", "md1/sync_speed_max after the tick")
        expect(run.fact("b1t1.records"), "", "boost records left after the tick")
        t2 = run.result("b1t2")
        expect((t2["changed"], t2["ended"], t2["boosted"]), (False, [], []), "b1t2 (a second tick) changes nothing")
        expect(run.val("b1t2.after", "md1/sync_speed_max"), "2000 (local)", "md1/sync_speed_max after the second tick")
        INFO.append(f"info  {run.label:<32} b1 boosted resync of md1 ended after {int(run.fact('b1.waited')) / 10:.1f} s")

    return [
        ("b1 sync boost: in force while md1 resyncs, recorded first", b1_boosted),
        ("b1 sync boost: one tick after the resync puts the limits back, a second changes nothing", b1_ended),
    ]
