#!/usr/bin/env python3
"""Host-side assertions of the VM suite.

Usage: check.py RUN_DIR...   (each written by tests/vm/run.sh: boot.txt, results.log, console.log)

Reads the records the guest scripts printed in each boot (see tests/vm/guest/lib.sh), checks every
scenario against what the guest itself read from sysfs, prints one line per check and ends with
"N passed, N failed". Exit status 0 only when nothing failed. A boot that did not finish fails
its "boot" check and every scenario check whose records are missing. Lines starting with "info"
are measurements (time per boot phase, the rule's time per event, query's time and system calls
next to the floor program's), not checks.
"""
import os
import sys

from checks_first import scenarios
from vmlib import INFO, Run


def timing(run):
    """Where a boot's time went: the guest's uptime at each step, the longest gaps."""
    if not run.at:
        return
    at = run.at + [(run.at[-1][0], "end")]
    gaps = sorted(((b[0] - a[0], a[1]) for a, b in zip(at, at[1:])), reverse=True)[:4]
    INFO.append(f"info  {run.label:<32} boot {run.seconds} s on the host (QEMU CPU time {run.cpu} s); script from {at[0][0]:.0f} s to "
                f"{at[-1][0]:.0f} s of guest uptime; longest: " + ", ".join(f"{n} {g:.1f} s" for g, n in gaps))


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
        timing(run)
        if run_failed and run.done is None:
            console = os.path.join(d, "console.log")
            tail = open(console, errors="replace").read().splitlines()[-25:] if os.path.exists(console) else []
            print(f"---- last lines of {console}:\n" + "\n".join(tail))
    for line in INFO:
        print(line)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
