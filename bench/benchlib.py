"""What every section of the mdtune benchmarks (bench/bench.py) shares: the settings every
contender converges, running and timing a command, side-by-side rounds and their statistics, the
fake roots (made by `mkroot bench`, made to print what the kernel prints, converged) and the
empty module, bench/floor/floor.rs.

Standard library only.
"""

import json
import os
import re
import statistics
import subprocess
import sys
import time

# The settings every contender converges: the same three attributes on every array.
SETTINGS = {"group_thread_cnt": 4, "stripe_cache_size": 4096, "sync_speed_max": 500000}
# What the kernel prints for sync_speed_* once an array has its own value.
SYNC_SPEED_ATTRS = ("sync_speed_min", "sync_speed_max")


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def run(argv, **kw):
    """Runs a command, failing loudly with its output when it fails."""
    p = subprocess.run(argv, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise SystemExit(
            f"bench: {' '.join(map(str, argv))} exited {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
        )
    return p


def timed(argv, **kw):
    """(wall, cpu) seconds of one run; cpu is the child's user + system time (wait4), which a
    busy machine disturbs less than the wall time. Output discarded; fails when the command fails.
    """
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=False, **kw)
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"bench: {' '.join(map(str, argv))} exited {p.returncode}")
    return dt, ru.ru_utime + ru.ru_stime, ru.ru_stime


class Stats:
    def __init__(self, samples):
        self.samples = sorted(samples)
        self.median = statistics.median(self.samples)

    def ms(self, digits=1):
        return f"{self.median * 1e3:.{digits}f}"

    def spread_ms(self, digits=1):
        return f"{self.samples[0] * 1e3:.{digits}f}-{self.samples[-1] * 1e3:.{digits}f}"

    def s(self):
        return f"{self.median:.2f}"

    def spread_s(self):
        return f"{self.samples[0]:.2f}-{self.samples[-1]:.2f}"


def side_by_side(contenders, rounds, before_each=None):
    """Runs each contender once per round, in turn; returns {name: Stats}.

    `contenders` is a list of (name, callable returning seconds). `before_each(name)` runs before
    every timed call, outside the timing (used to make the fake root print what the kernel prints).
    """
    samples = {name: [] for name, _ in contenders}
    cpu = {name: [] for name, _ in contenders}
    kernel = {name: [] for name, _ in contenders}
    for r in range(rounds):
        # Rotate the order each round so no contender always runs first (cold caches, CPU boost).
        order = contenders[r % len(contenders):] + contenders[: r % len(contenders)]
        for name, fn in order:
            if before_each:
                before_each(name)
            t = fn()
            if isinstance(t, tuple):
                t, c, k = t
                cpu[name].append(c)
                kernel[name].append(k)
            samples[name].append(t)
    stats = {name: Stats(s) for name, s in samples.items()}
    for name, s in samples.items():
        # In round order, for ratios of two contenders within each round (per_round).
        stats[name].rounds = s
    for name, c in cpu.items():
        if c:
            stats[name].cpu = Stats(c)
            stats[name].kernel = Stats(kernel[name])
    return stats


def per_round(a, b):
    """The median over the rounds of a's time / b's time in the same round: two runs made a few
    milliseconds apart, which a change of the machine's load between rounds moves less than the
    ratio of the two medians."""
    return statistics.median(x / y for x, y in zip(a.rounds, b.rounds))


# --- fake roots ------------------------------------------------------------------------------------

def md_names(root):
    block = os.path.join(root, "sys/block")
    return sorted(
        (n for n in os.listdir(block) if os.path.isdir(os.path.join(block, n, "md"))),
        key=lambda n: int(n[2:]),
    )


def kernelize(root):
    """Makes the root print sync_speed_* as the kernel does ("500000 (local)", "200000 (system)").

    mdtune and `echo` write a bare number, which a regular file then keeps; a kernel never prints
    one. Without this, Salt's sysfs.present would compare equal on a fake root and not on a host.
    """
    for md in md_names(root):
        for attr in SYNC_SPEED_ATTRS:
            path = os.path.join(root, "sys/block", md, "md", attr)
            with open(path) as f:
                text = f.read().strip()
            if re.fullmatch(r"\d+", text):
                with open(path, "w") as f:
                    f.write(f"{text} (local)\n")
            elif text == "system":
                with open(path, "w") as f:
                    f.write("200000 (system)\n")


FLOOR_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "floor", "floor.rs")


def build_floor(out, replay=None, pad=None):
    """Builds bench/floor/floor.rs (no libc, no std, static, x86_64) with rustc; see its header."""
    argv = ["rustc", "--edition", "2021", "--target", "x86_64-unknown-linux-gnu", "-C", "panic=abort",
            "-C", "opt-level=s", "-C", "strip=symbols", "-C", "relocation-model=static",
            "-C", "link-arg=-nostartfiles", "-C", "link-arg=-static", "-C", "link-arg=-nodefaultlibs",
            "-o", out, FLOOR_SRC]
    env = dict(os.environ)
    if replay:
        argv[1:1] = ["--cfg", "replay"]
        env.update(FLOOR_REPLAY=replay, FLOOR_PAD=pad)
    run(argv, env=env)
    return out


def make_root(mkroot, path, arrays):
    run([mkroot, "bench", path, str(arrays)])
    return path


def mdtune_input(root, state="present", arrays=None):
    entry = {"name": "md*", **SETTINGS}
    return {"root": root, "state": state, "arrays": arrays or [entry]}


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f)
    return path


def mdtune_once(binary, args_file):
    out = json.loads(run([binary, args_file]).stdout)
    if out.get("failed"):
        raise SystemExit(f"bench: mdtune failed: {out.get('msg')}")
    return out


def converge(binary, root, tmp):
    """Applies SETTINGS once, then checks a second run changes nothing."""
    args = write_json(os.path.join(tmp, "converge.json"), mdtune_input(root))
    mdtune_once(binary, args)
    kernelize(root)
    again = mdtune_once(binary, args)
    if again.get("changed") or not again.get("compliant"):
        raise SystemExit(f"bench: {root} did not converge: {again.get('msg')}")
