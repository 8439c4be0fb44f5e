"""First boot, k1 and k2: a pause that always ends (docs/reference.md §4), on a real raid5 check.
k1: a run killed with SIGKILL between its freeze of md0's check and the resume (strace skips the
resume write and kills it) leaves the check frozen and recorded in /run/mdtune/pause-md0.json,
`--verify` (exit 3) and `--metrics` name it, and the next run (`--tick`, or a writing run)
resumes it where it stood and says so in `resumed`. k2: a run sent SIGTERM as its write of
group_thread_cnt returns rolls the value back, resumes the check at once and exits 1.
"""
import json
import re

from vmlib import INFO, expect, progress


def pause_checks(run):
    def killed():
        """The harness part of k1: where the check stood before the run (past 0, so that a
        restart from 0 shows), and that strace let `frozen` through, cut off the next write to
        md0/sync_action (the resume) and killed the run there. Returns that position and the
        killed run's pid."""
        expect(run.val("k1.before", "md0/sync_action"), "check", "harness: md0 runs a check before k1")
        before = progress(run.val("k1.before", "md0/sync_completed"), "md0 before k1")
        assert before[0] > 0, f"harness: the check had done nothing before k1 ({before}); a reset to 0 would go unseen"
        trace = "\n".join(run.block("k1.strace"))
        writes = re.findall(r'^(\d+) +write\(\d+, "(\w+)\\n", \d+\)\s*=\s*(\S+)', trace, re.M)
        expect([w[1:] for w in writes], [("frozen", "7"), ("check", "?")],
               "harness: mdtune's writes to md0/sync_action under strace (frozen done, the resume cut off)")
        assert re.search(r"^\d+ +\+\+\+ killed by SIGKILL \+\+\+", trace, re.M), f"harness: strace did not kill mdtune: {trace!r}"
        r = run.runs.get("k1")
        assert r is not None, "no k1 run recorded (guest stopped early?)"
        expect((r["rc"], r["stdout"]), (137, ""), "k1 exit status (128 + SIGKILL) and its stdout (nothing)")
        return before, int(writes[0][0])

    def k1_frozen():
        before, pid = killed()
        expect(run.val("k1.killed", "md0/sync_action"), "frozen", "md0/sync_action after the kill")
        expect(run.val("k1.killed", "md0/sync_completed"), "none", "md0/sync_completed after the kill (no sync thread)")
        expect(run.val("k1.killed", "md0/group_thread_cnt"), "2", "md0/group_thread_cnt after the kill (written before it)")
        text = run.fact("k1.record")
        try:
            rec = json.loads(text)
        except ValueError:
            raise AssertionError(f"/run/mdtune/pause-md0.json after the kill: {text!r}") from None
        expect((rec.get("array"), rec.get("action"), rec.get("pid")), ("md0", "check", pid),
               "the record's array, action and pid (the killed run's)")
        at = rec.get("paused_at") or [0, 0]
        assert at[0] >= before[0] and at[1] == before[1], f"the record's paused_at {at}, the check stood at {before} before"
        start = rec.get("resume_from")
        assert isinstance(start, int) and start % 8 == 0 and start >= at[0] - at[0] % 8, \
            f"the record's resume_from {start!r}: not a multiple of 8 at or past where it was paused ({at})"
        expect(run.val("k1.killed", "md0/sync_min"), str(start), "md0/sync_min while frozen (set by the pause)")

    def k1_named():
        _, pid = killed()
        out = run.runs.get("k1verify")
        assert out is not None, "no --verify run recorded"
        expect(out["rc"], 3, "mdtune --verify exit status with md0 frozen")
        assert re.search(rf"md0 sync: frozen by an mdtune run \(pid {pid}\) killed mid-pause", out["stdout"]), \
            f"--verify does not name md0 frozen by the killed run (pid {pid}): {out['stdout'][-800:]!r}"
        start = run.val("k1.killed", "md0/sync_min")
        for hand in (f"echo {start} > /sys/block/md0/md/sync_min", "echo check > /sys/block/md0/md/sync_action"):
            assert hand in out["stdout"], f"--verify does not say {hand!r}: {out['stdout'][-800:]!r}"
        expect(run.fact("k1.metrics.rc"), "0", "mdtune --metrics exit status")
        lines = set(run.block("k1.metrics"))
        for want in ('mdtune_array_sync_frozen{array="md0",device="md0",by="mdtune"} 1',
                     'mdtune_array_sync_frozen{array="md0",device="md0",by="other"} 0',
                     'mdtune_array_sync_action{array="md0",device="md0",action="frozen"} 1'):
            assert want in lines, f"--metrics lacks {want!r}: {sorted(lines)}"

    def k1_resumed():
        before, pid = killed()
        how = run.fact("k1.resumer")
        r = run.result("k1resume")
        resumed = r.get("resumed") or []
        assert len(resumed) == 1, f"the {how} resumed {resumed!r}, expected md0's check; msg: {r.get('msg')!r}"
        got = resumed[0]
        expect((got.get("array"), got.get("action"), got.get("outcome"), got.get("pid")),
               ("md0", "check", "resumed", pid), f"the {how}'s resumed[0] array, action, outcome, pid")
        start = got.get("from")
        expect(str(start), run.val("k1.killed", "md0/sync_min"), f"the {how}'s resumed[0].from (sync_min while frozen)")
        assert start >= before[0] - before[0] % 8, f"resumed from {start}, behind where the check stood before k1 ({before})"
        expect(r.get("changed"), True, f"the {how}'s changed (a resumed sync is a change)")
        expect(run.val("k1.resumed", "md0/sync_action"), "check", "md0/sync_action right after the resume")
        expect(run.val("k1.resumed", "md0/sync_min"), str(start), "md0/sync_min after the resume")
        expect(run.fact("k1.record.after"), "", "pause records left after the resume")
        later = progress(run.val("k1.later", "md0/sync_completed"), "md0 2 s after the resume")
        assert later[0] >= start and later[1] == before[1], \
            f"2 s after the resume the check stands at {later}, behind {start}: it did not resume there"
        expect(run.val("k1.later", "md0/sync_action"), "check", "md0/sync_action 2 s after the resume")
        paused = json.loads(run.fact("k1.record")).get("paused_at", [None])[0]
        INFO.append(f"info  {run.label:<32} k1 kill -9 mid-pause: sync_completed {before[0]} / {before[1]} before, "
                    f"paused at {paused}, resumed ({how}) from {start}, {later[0]} 2 s later")

    def k2_sigterm():
        expect(run.val("k2.before", "md0/sync_action"), "check", "harness: md0 runs a check before k2")
        before = progress(run.val("k2.before", "md0/sync_completed"), "md0 before k2")
        expect(run.val("k2.before", "md0/group_thread_cnt"), "2", "harness: md0/group_thread_cnt before k2")
        trace = "\n".join(run.block("k2.strace"))
        assert re.search(r'"1\\n", 2\)\s*=\s*(2|\? ERESTARTSYS .*)\n(\d+ +)?--- SIGTERM ', trace), \
            f"harness: strace did not send SIGTERM at mdtune's write of 1: {trace!r}"
        r = run.result("k2", rc=1)
        expect(r.get("failed"), True, "k2 failed")
        assert "interrupted by SIGTERM" in str(r.get("msg")), f"k2 msg: {r.get('msg')!r}"
        # The write of 1 goes in, SIGTERM arrives as it returns, the rollback writes 2 back. Where
        # the write suspends the array interruptibly (6.12, 7.x), the signal sent at the write's entry
        # ends it with ERESTARTSYS first, and the kernel restarts it (signal-hook's SA_RESTART).
        writes = re.findall(r'write\(\d+, "(\d+)\\n", \d+\)\s*=\s*(\S+)', trace)
        restarted = writes[:1] == [("1", "?")]
        expect(writes[1:] if restarted else writes, [("1", "2"), ("2", "2")],
               "k2's writes to md0/group_thread_cnt under strace (the rollback's last)")
        expect(run.val("k2.after", "md0/group_thread_cnt"), "2", "md0/group_thread_cnt after k2 (rolled back)")
        expect(run.val("k2.after", "md0/sync_action"), "check", "md0/sync_action right after k2 (resumed at once)")
        start = int(run.val("k2.after", "md0/sync_min"))
        assert start >= before[0] - before[0] % 8, f"md0/sync_min after k2 is {start}, behind where the check stood ({before})"
        expect(run.fact("k2.records"), "", "pause records left after k2")
        INFO.append(f"info  {run.label:<32} k2 SIGTERM mid-pause: sync_completed {before[0]} / {before[1]} before, "
                    f"resumed from {start}; the write of group_thread_cnt "
                    + ("ended by the signal (ERESTARTSYS) and restarted" if restarted else "completed"))

    return [
        ("k1 kill -9 mid-pause: check left frozen, recorded where it stood", k1_frozen),
        ("k1 kill -9 mid-pause: --verify exits 3 naming it, --metrics frozen by mdtune", k1_named),
        ("k1 kill -9 mid-pause: mdtune --tick resumes it where it stood, record removed", k1_resumed),
        ("k2 SIGTERM mid-pause: exit 1, value rolled back, check resumed at once, no record", k2_sigterm),
    ]
