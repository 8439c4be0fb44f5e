"""The on-call page's health on a real kernel (first boot, h1-h2): a raid5 with a member failed by
mdadm --fail reads degraded in the metrics, and a check run to its end is recorded whole, with its
mismatch_cnt, by the tick that sees it end."""
import json

from vmlib import expect


def health_checks(run):
    def h1():
        expect(run.fact("h1.metrics.rc"), "0", "mdtune --metrics exit status")
        expect(run.val("h1.md6", "md6/degraded"), "1", "harness: md6/degraded after mdadm --fail")
        lines = set(run.block("h1.metrics"))
        for want in ('mdtune_array_degraded{array="md6",device="md6"} 1',
                     'mdtune_array_sync_frozen{array="md6",device="md6",by="other"} 1'):
            assert want in lines, f"--metrics lacks {want!r}: {sorted(lines)}"

    def h2():
        expect(run.val("h2.running", "md5/sync_action"), "check", "harness: md5's check runs at the first tick")
        expect(run.val("h2.done", "md5/sync_action"), "idle", "harness: md5's check ended")
        expect(run.val("h2.done", "md5/last_sync_action"), "check", "md5/last_sync_action")
        mismatches = int(run.val("h2.done", "md5/mismatch_cnt"))
        end = run.result("h2end")
        recorded = end.get("recorded") or []
        assert len(recorded) == 1, f"the tick after the end recorded {recorded!r}; msg {end.get('msg')!r}"
        got = recorded[0]
        expect((got.get("array"), got.get("action"), got.get("whole"), got.get("mismatch_cnt")),
               ("md5", "check", True, mismatches), "the recorded check: array, action, whole, mismatch_cnt")
        history = json.loads(run.fact("h2.record"))
        checks = [c for c in history.get("checks", []) if c.get("array") == "md5"]
        assert checks and checks[-1].get("whole") is True, f"var/lib/mdtune/checks.json: {history!r}"
        lines = run.block("h2.metrics")
        want = (f'mdtune_array_last_check_mismatch_sectors{{array="md5",device="md5",level="raid5",'
                f'action="check",whole="true"}} {mismatches}')
        assert want in lines, f"--metrics lacks {want!r}: {lines}"
        assert any(line.startswith('mdtune_array_last_check_end_timestamp_seconds{array="md5"') for line in lines), \
            f"--metrics has no last check end for md5: {lines}"

    return [
        ("h1 md6 with a member failed by mdadm --fail reads degraded and frozen by other in the metrics", h1),
        ("h2 a check of md5 run to its end is recorded whole with its mismatch_cnt", h2),
    ]
