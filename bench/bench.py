#!/usr/bin/env python3
"""mdtune benchmarks: scaling, Ansible and Salt side by side, system calls.

Run through bench/run.sh, which builds the binaries and passes their paths. Everything runs in
one temporary directory (fake roots made by `examples/mkroot.rs` with the tests' fake-root builder,
tests/fakeroot; Ansible and Salt config and caches); nothing outside it is written except the
results file.

Every comparison is measured side by side: each round runs every contender once, in turn, on
the same converged fake root, and the tables report the median over the rounds, the spread
(min-max) and ratios of medians. No single timing is ever reported.

Standard library only; Ansible and Salt are run from the venv given by --venv.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
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
    for name, c in cpu.items():
        if c:
            stats[name].cpu = Stats(c)
            stats[name].kernel = Stats(kernel[name])
    return stats


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


# --- 1. scaling --------------------------------------------------------------------------------------

def bench_scaling(a, tmp, out):
    sizes = [int(s) for s in a.sizes.split(",")]
    binaries = a.bin  # [(label, path)]
    contenders = []
    for n in sizes:
        root = make_root(a.mkroot, os.path.join(tmp, f"scale-{n}"), n)
        converge(binaries[0][1], root, tmp)
        for state in ("query", "present"):
            args = write_json(os.path.join(tmp, f"scale-{n}-{state}.json"), mdtune_input(root, state))
            for label, path in binaries:
                contenders.append(((label, n, state), (lambda p=path, f=args: timed([p, f]))))
    # The cost of starting any process from here: the floor module, spawned the same way.
    contenders.append((("floor", 0, "-"), lambda: timed([a.floor, "x"])))
    log(f"scaling: {len(contenders)} contenders x {a.rounds} rounds")
    stats = side_by_side(contenders, a.rounds)
    floor = stats[("floor", 0, "-")]

    out.append("## 1. Scaling: one run on hosts of 1 to 256 arrays\n")
    out.append(
        f"Generated hosts (`mkroot bench DIR N`): N raid5 arrays, each over 8 NVMe drives with 64 "
        f"hardware queues, already converged; input `arrays: [{{name: \"md*\", "
        f"{', '.join(f'{k}: {v}' for k, v in SETTINGS.items())}}}]`. `query` reads and reports; "
        f"`present` also takes the lock, and writes nothing because every value is in place. "
        f"Each run is `mdtune ARGS_FILE` as Ansible calls it; {a.rounds} rounds, all cells "
        f"interleaved. Starting any process from the harness (the floor module) costs "
        f"{floor.ms(2)} ms (median), included in every cell. *CPU ms* is the median user + system "
        f"time of the run (from wait4), which other load on the machine disturbs less than the "
        f"wall time.\n"
    )
    out.append("| binary | arrays | query ms (median, min-max) | query ms/array | query CPU ms | present ms (median, min-max) | present ms/array | present CPU ms |")
    out.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, _ in binaries:
        for n in sizes:
            q = stats[(label, n, "query")]
            p = stats[(label, n, "present")]
            out.append(
                f"| {label} | {n} | {q.ms(2)} ({q.spread_ms(2)}) | {q.median * 1e3 / n:.3f} | {q.cpu.ms(1)} "
                f"| {p.ms(2)} ({p.spread_ms(2)}) | {p.median * 1e3 / n:.3f} | {p.cpu.ms(1)} |"
            )
    if len(sizes) >= 2:
        lo, hi = sizes[-2], sizes[-1]
        costs = []
        for label, _ in binaries:
            q0, q1 = stats[(label, lo, "query")].median, stats[(label, hi, "query")].median
            p0, p1 = stats[(label, lo, "present")].median, stats[(label, hi, "present")].median
            costs.append(f"{(q1 - q0) * 1e3 / (hi - lo):.3f} ms (query) and "
                         f"{(p1 - p0) * 1e3 / (hi - lo):.3f} ms (present)"
                         + (f" for `{label}`" if len(binaries) > 1 else ""))
        out.append(
            f"\nEach array added between {lo} and {hi} arrays costs {'; '.join(costs)}. Growth is "
            f"linear; the time per array falls with more arrays only because the fixed cost of a "
            f"run (process, input, lock, output) is spread over more of them.\n"
        )
    if len(binaries) > 1:
        base = binaries[0][0]
        out.append(f"\nRatio of medians against `{base}` (lower is faster):\n")
        out.append("| binary | " + " | ".join(f"{n} array{'s' if n > 1 else ''}: query / present" for n in sizes) + " |")
        out.append("| --- |" + " ---: |" * len(sizes))
        for label, _ in binaries:
            cells = []
            for n in sizes:
                cells.append(
                    f"{stats[(label, n, 'query')].median / stats[(base, n, 'query')].median:.2f} / "
                    f"{stats[(label, n, 'present')].median / stats[(base, n, 'present')].median:.2f}"
                )
            out.append(f"| {label} | " + " | ".join(cells) + " |")
    out.append("")
    return stats


# --- 2. Ansible --------------------------------------------------------------------------------------

ANSIBLE_CFG = """[defaults]
inventory = {tmp}/hosts.ini
library = {tmp}/library
callback_plugins = {here}/ansible/callback_plugins
callbacks_enabled = bench_timer
local_tmp = {tmp}/ansible-local
remote_tmp = {tmp}/ansible-remote
host_key_checking = false
retry_files_enabled = false
interpreter_python = {python}
nocows = true
"""

MDTUNE_PLAY = """- hosts: all
  gather_facts: false
  tasks:
{tasks}"""

MDTUNE_TASK = """    - name: tune md arrays ({module}, {n})
      {module}:
        root: "{{{{ root }}}}"
        arrays:
          - name: "md*"
{settings}
"""

SHELL_PLAY = """- hosts: all
  gather_facts: false
  vars:
    arrays: {arrays}
    settings: {settings}
  tasks:
    - name: read the current values
      command: cat {{{{ root }}}}/sys/block/{{{{ item.0 }}}}/md/{{{{ item.1 }}}}
      loop: "{{{{ arrays | product(settings.keys() | list) | list }}}}"
      register: current
      changed_when: false
    - name: write the values that differ
      shell: echo {{{{ settings[item.item.1] }}}} > {{{{ root }}}}/sys/block/{{{{ item.item.0 }}}}/md/{{{{ item.item.1 }}}}
      loop: "{{{{ current.results }}}}"
      loop_control:
        label: "{{{{ item.item.0 }}}}/{{{{ item.item.1 }}}}"
      when: (item.stdout.split() | first) != (settings[item.item.1] | string)
      changed_when: true
"""


# The contenders that are one binary module, each run as `--ansible-tasks` identical tasks.
MODULE_CONTENDERS = ("mdtune", "floor", "replay", "size", "answer")


def bench_ansible(a, tmp, out):
    venv_bin = os.path.join(a.venv, "bin")
    playbook = os.path.join(venv_bin, "ansible-playbook")
    if not os.access(playbook, os.X_OK):
        raise SystemExit(f"bench: no {playbook}: run .ci/setup-python.sh")
    d = os.path.join(tmp, "ansible")
    os.makedirs(os.path.join(d, "library"))
    root = make_root(a.mkroot, os.path.join(d, "root"), a.arrays)
    converge(a.bin[0][1], root, tmp)
    shutil.copy(a.bin[0][1], os.path.join(d, "library", "mdtune"))
    shutil.copy(a.floor, os.path.join(d, "library", "floor"))
    # The replay module: mdtune's size and mdtune's answer on this host, no work.
    answer = os.path.join(d, "answer.json")
    with open(answer, "w") as f:
        f.write(run([a.bin[0][1], write_json(os.path.join(d, "args.json"), mdtune_input(root))]).stdout)
    build_floor(os.path.join(d, "library", "replay"), replay=answer, pad=a.bin[0][1])
    # Apart: mdtune's size with the empty module's answer, and mdtune's answer from a tiny module.
    empty_answer, no_pad = os.path.join(d, "empty-answer.json"), os.path.join(d, "no-pad")
    with open(empty_answer, "w") as f:
        f.write('{"changed": false}\n')
    open(no_pad, "w").close()
    build_floor(os.path.join(d, "library", "size"), replay=empty_answer, pad=a.bin[0][1])
    build_floor(os.path.join(d, "library", "answer"), replay=answer, pad=no_pad)
    # Further --bin builds (another branch, main) as their own modules, in the per-task table.
    extras = {}
    for label, path in a.bin[1:]:
        m = "mdtune_" + re.sub(r"\W", "_", label)
        shutil.copy(path, os.path.join(d, "library", m))
        extras[m] = (label, len(run([path, os.path.join(d, "args.json")]).stdout))
    with open(os.path.join(d, "ansible.cfg"), "w") as f:
        f.write(ANSIBLE_CFG.format(tmp=d, here=a.here, python=os.path.join(venv_bin, "python")))
    with open(os.path.join(d, "hosts.ini"), "w") as f:
        f.write(f"localhost ansible_connection=local root={root}\n")
    settings = "\n".join(f"            {k}: {v}" for k, v in SETTINGS.items())
    k = a.ansible_tasks

    def module_play(m, tasks):
        return MDTUNE_PLAY.format(tasks="".join(MDTUNE_TASK.format(module=m, n=i + 1, settings=settings)
                                                for i in range(tasks)))
    # One task each for the whole-playbook comparison; k tasks each for the cost per task.
    plays = {m: module_play(m, 1) for m in ("mdtune", "floor", "replay") + tuple(extras)}
    plays["shell"] = SHELL_PLAY.format(arrays=json.dumps(md_names(root)), settings=json.dumps(SETTINGS))
    per_task_plays = {f"{m}-x{k}": m for m in MODULE_CONTENDERS + tuple(extras)}
    plays.update({name: module_play(m, k) for name, m in per_task_plays.items()})
    for name, text in plays.items():
        with open(os.path.join(d, f"{name}.yml"), "w") as f:
            f.write(text)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(d, "ansible.cfg"), ANSIBLE_HOME=os.path.join(d, "home"),
               PATH=venv_bin + os.pathsep + os.environ.get("PATH", ""))
    task_times = {name: [] for name in plays}

    def play(name, check=True):
        timer = os.path.join(d, f"timer-{name}.json")
        e = dict(env, BENCH_TIMER_OUT=timer)
        log_file = os.path.join(d, f"{name}.out")
        with open(log_file, "w") as lf:
            t0 = time.perf_counter()
            p = subprocess.Popen([playbook, os.path.join(d, f"{name}.yml")], cwd=d, env=e, stdout=lf, stderr=subprocess.STDOUT)
            _, status, ru = os.wait4(p.pid, 0)
            dt = time.perf_counter() - t0
        with open(log_file) as lf:
            text = lf.read()
        if os.waitstatus_to_exitcode(status) != 0 or (check and not re.search(r"changed=0\s+unreachable=0\s+failed=0", text)):
            raise SystemExit(f"bench: ansible-playbook {name}.yml was not a converged, successful run:\n{text[-3000:]}")
        with open(timer) as f:
            task_times[name].append(json.load(f)["tasks"])
        return dt, ru.ru_utime + ru.ru_stime, ru.ru_stime

    # Warm-up (and proof that each one is converged): one run each, not counted.
    for name in plays:
        if (name.split("_")[0] in a.ansible_contenders.split(",")
                or per_task_plays.get(name, "").split("_")[0] in a.ansible_contenders.split(",")):
            play(name)
    for v in task_times.values():
        v.clear()
    log(f"ansible: {a.ansible_contenders} x {a.ansible_rounds} rounds")
    wanted = a.ansible_contenders.split(",")
    names = [n for n in ("mdtune", "shell", "floor", "replay") if n in wanted]
    names += [m for m in extras if "mdtune" in wanted]
    names += [n for n, m in per_task_plays.items() if m.split("_")[0] in wanted]
    stats = side_by_side([(n, (lambda n=n: play(n))) for n in names], a.ansible_rounds,
                         before_each=lambda _: kernelize(root))
    tasks = {n: Stats(v) for n, v in task_times.items() if v}
    n_items = len(md_names(root)) * len(SETTINGS)
    fl, tf = stats["floor"], tasks["floor"]
    out.append("## 2. Ansible: mdtune against the shell idiom and an empty module\n")
    out.append(
        f"Real `ansible-playbook` (ansible-core from the venv, `ansible_connection=local`, "
        f"`gather_facts: false`) on a converged fake root with {a.arrays} arrays; the same "
        f"{len(SETTINGS)} settings ({', '.join(SETTINGS)}) on every array, {n_items} values in all. "
        f"*mdtune*: the binary from `library/`, one task. *shell idiom*: a `command: cat` loop over "
        f"the {n_items} files, then a `shell: echo V > FILE` loop with `when:` comparing in Jinja "
        f"and `changed_when: true` (every write skipped when converged). *floor*: a "
        f"{os.path.getsize(a.floor)}-byte static binary module that prints `{{\"changed\": false}}`, "
        f"one task with the same arguments. *replay*: a binary module as big as mdtune "
        f"({os.path.getsize(os.path.join(d, 'library', 'replay'))} bytes) that prints the "
        f"{os.path.getsize(answer)}-byte result mdtune prints on this host and does nothing else. "
        f"Every run must end `changed=0 failed=0`. {a.ansible_rounds} rounds, interleaved. "
        f"*Playbook* is the wall time of the whole `ansible-playbook` process; *tasks* is from the "
        f"first task's start to the end of the play (a callback plugin, "
        f"bench/ansible/callback_plugins/bench_timer.py), which leaves out Ansible's own start-up; "
        f"*CPU* is the user + system time of ansible-playbook and every process it ran.\n"
    )
    out.append("| contender | playbook s (median, min-max) | tasks ms (median, min-max) | CPU s | playbook / floor | tasks / floor | CPU / floor |")
    out.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    labels = {"mdtune": "mdtune (1 task)", "shell": f"shell idiom (2 tasks, {2 * n_items} loop items)",
              "floor": "floor (empty module)", "replay": "replay (mdtune's size and answer, no work)"}
    for name in (n for n in names if n in labels):
        st, tt = stats[name], tasks[name]
        out.append(f"| {labels[name]} | {st.s()} ({st.spread_s()}) | {tt.ms(0)} ({tt.spread_ms(0)}) | {st.cpu.s()} "
                   f"| {st.median / fl.median:.2f}x | {tt.median / tf.median:.2f}x | {st.cpu.median / fl.cpu.median:.2f}x |")
    m, tm = stats["mdtune"], tasks["mdtune"]
    ratio = m.median / fl.median
    goals = [(f"mdtune within 1.1x of the floor: playbook {ratio:.2f}x, CPU "
              f"{m.cpu.median / fl.cpu.median:.2f}x ({'met' if ratio <= 1.1 else 'NOT met'})")]
    per_task = (f"Per task, mdtune costs {(tm.median - tf.median) * 1e3:.0f} ms more than the floor "
                f"({tm.median / tf.median:.2f}x of an almost empty task)")
    if "replay" in tasks:
        tr = tasks["replay"]
        per_task += (f": the replay module accounts for {(tr.median - tf.median) * 1e3:.0f} ms of it "
                     f"(a module of mdtune's size and its answer), mdtune's own run for the other "
                     f"{(tm.median - tr.median) * 1e3:.0f} ms (see the 8-array row of the scaling table)")
    per_task += (f". The playbook's own run-to-run spread (floor: {fl.spread_s()} s) is wider than "
                 f"that difference, so the playbook ratio moves around 1.0-1.1 from run to run.")
    if "shell" in stats:
        s, ts = stats["shell"], tasks["shell"]
        goals.append(f"at least 8x faster than the shell idiom: playbook {s.median / m.median:.1f}x, "
                     f"tasks {ts.median / tm.median:.1f}x ({'met' if s.median / m.median >= 8 else 'NOT met'})")
    out.append("\nGoals: " + "; ".join(goals) + ". " + per_task + "\n")
    out.extend(per_task_table(per_task_plays, tasks, k, d, answer, extras, stats))
    return stats, tasks


def per_task_table(per_task_plays, tasks, k, d, answer, extras, stats):
    """The cost of one task: plays of k identical tasks of each binary module, so Ansible's own
    start-up and the play's spread weigh k times less than in a one-task play. Where a module
    also ran as a one-task play, its CPU per task is (CPU of the k-task play - CPU of the
    one-task play) / (k - 1): Ansible's start-up cancels out, and CPU time is what a busy
    machine disturbs least."""
    rows = {m: tasks[name] for name, m in per_task_plays.items() if name in tasks}
    if "floor" not in rows or "mdtune" not in rows:
        return []
    each = {m: st.median / k for m, st in rows.items()}
    fl = each["floor"]
    size = os.path.getsize
    what = {
        "mdtune": "mdtune",
        "floor": f"floor: the empty module ({size(os.path.join(d, 'library', 'floor'))} bytes)",
        "replay": f"replay: mdtune's size ({size(os.path.join(d, 'library', 'replay'))} bytes) and answer "
                  f"({size(answer)} bytes), no work",
        "size": "size: mdtune's size, the empty module's answer",
        "answer": f"answer: a {size(os.path.join(d, 'library', 'answer'))}-byte module printing mdtune's answer",
    }
    what.update({m: f"mdtune `{label}` (answer {n} bytes)" for m, (label, n) in extras.items()})
    out = [(f"**Cost per task**: each module as {k} identical tasks in one play (the same converged host), "
            f"so a task's cost is the play's tasks time / {k}; same rounds, interleaved with the plays above.\n"),
           ("| module | per task ms (median) | tasks ms of the play (min-max) | per task / floor "
            "| over the floor ms | CPU ms per task | CPU / floor |"),
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    cpu = {m: (stats[f"{m}-x{k}"].cpu.median - stats[m].cpu.median) / (k - 1)
           for m in rows if m in stats and f"{m}-x{k}" in stats and k > 1}
    for m in MODULE_CONTENDERS + tuple(extras):
        if m in rows:
            st = rows[m]
            c = (f"{cpu[m] * 1e3:.1f} | {cpu[m] / cpu['floor']:.2f}x" if m in cpu and cpu.get("floor")
                 else "| ")
            out.append(f"| {what[m]} | {each[m] * 1e3:.1f} | {st.ms(0)} ({st.spread_ms(0)}) | "
                       f"{each[m] / fl:.2f}x | {(each[m] - fl) * 1e3:+.1f} | {c} |")
    ratio = each["mdtune"] / fl
    line = (f"\nPer task within 1.15x of an empty binary module: {'met' if ratio <= 1.15 else 'NOT met'} "
            f"({ratio:.2f}x: {each['mdtune'] * 1e3:.1f} ms against {fl * 1e3:.1f} ms, "
            f"{(each['mdtune'] - fl) * 1e3:+.1f} ms; mdtune's answer on this host: {size(answer)} bytes)")
    if "replay" in each:
        line += (f"; of the difference, a module of mdtune's size and answer accounts for "
                 f"{(each['replay'] - fl) * 1e3:+.1f} ms")
        if "size" in each and "answer" in each:
            line += (f" (the size alone {(each['size'] - fl) * 1e3:+.1f} ms, the answer alone "
                     f"{(each['answer'] - fl) * 1e3:+.1f} ms)")
        line += f", and mdtune's own run for {(each['mdtune'] - each['replay']) * 1e3:+.1f} ms"
    for m, (label, n) in extras.items():
        if m in each:
            line += (f". `{label}` in the same run: {each[m] / fl:.2f}x ({each[m] * 1e3:.1f} ms, "
                     f"answer {n} bytes)")
    if "mdtune" in cpu and cpu.get("floor"):
        line += (f". CPU per task (start-up cancelled): mdtune {cpu['mdtune'] / cpu['floor']:.2f}x "
                 f"the empty module's ({cpu['mdtune'] * 1e3:.1f} against {cpu['floor'] * 1e3:.1f} ms)")
        for m, (label, _) in extras.items():
            if m in cpu:
                line += f", `{label}` {cpu[m] / cpu['floor']:.2f}x"
    out.append(line + ".\n")
    return out


# --- 3. Salt ----------------------------------------------------------------------------------------

def bench_salt(a, tmp, out):
    venv_bin = os.path.join(a.venv, "bin")
    salt_call = os.path.join(venv_bin, "salt-call")
    if not os.access(salt_call, os.X_OK):
        raise SystemExit(f"bench: no {salt_call}: run .ci/setup-python.sh")
    d = os.path.join(tmp, "salt")
    states = os.path.join(d, "states")
    os.makedirs(states)
    root = make_root(a.mkroot, os.path.join(d, "root"), a.arrays)
    converge(a.bin[0][1], root, tmp)
    modules_dir = a.salt_modules
    own_state = os.path.isfile(os.path.join(modules_dir, "_states", "mdtune.py"))
    if not own_state:
        raise SystemExit(f"bench: no Salt state module in {modules_dir}/_states/mdtune.py")
    conf = os.path.join(d, "conf")
    os.makedirs(conf)
    with open(os.path.join(conf, "minion"), "w") as f:
        f.write(
            f"id: mdtune-bench\nfile_client: local\nroot_dir: {d}/salt-root\ncachedir: {d}/cache\n"
            f"pki_dir: {d}/salt-root/pki\nsock_dir: {d}/salt-root/run\npidfile: {d}/salt-root/run/minion.pid\n"
            f"log_file: {d}/salt.log\nuser: {os.environ.get('USER') or 'root'}\n"
            f"enable_fqdns_grains: false\nenable_gpu_grains: false\ngrains_cache: true\n"
            f"file_roots:\n  base:\n    - {states}\n    - {modules_dir}\npillar_roots:\n  base:\n    - {d}/pillar\n"
        )
    os.makedirs(os.path.join(d, "pillar"))
    entry = "\n".join(f"          {k}: {v}" for k, v in SETTINGS.items())
    with open(os.path.join(states, "bench_mdtune.sls"), "w") as f:
        f.write(
            f"md_tuned:\n  mdtune.managed:\n    - root: {root}\n    - binary: {a.bin[0][1]}\n"
            f"    - arrays:\n        - name: \"md*\"\n{entry}\n"
        )
    with open(os.path.join(states, "bench_sysfs.sls"), "w") as f:
        for md in md_names(root):
            for attr, value in SETTINGS.items():
                # sysfs.present joins a relative name onto /sys; an absolute one is used as is.
                f.write(f"{root}/sys/block/{md}/md/{attr}:\n  sysfs.present:\n    - value: {value}\n")
    base = [salt_call, "--local", "-c", conf, "--out=json"]
    run(base + ["saltutil.sync_all"], cwd=d)

    def changed_states(sls):
        p = subprocess.run(base + ["state.apply", sls], cwd=d, capture_output=True, text=True)
        try:
            res = json.loads(p.stdout)["local"]
        except (ValueError, KeyError, TypeError):
            raise SystemExit(f"bench: salt-call state.apply {sls} printed no result:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}") from None
        if not isinstance(res, dict) or any(v.get("result") is False for v in res.values()):
            raise SystemExit(f"bench: state.apply {sls} failed:\n{json.dumps(res, indent=1)[-3000:]}")
        return sorted(v.get("name", k) for k, v in res.items() if v.get("changes"))

    # Idempotency: two applies in a row on a converged host, each on what the kernel would print.
    idem = {}
    for sls in ("bench_mdtune", "bench_sysfs"):
        kernelize(root)
        changed_states(sls)
        kernelize(root)
        idem[sls] = changed_states(sls)
    log(f"salt: 2 states x {a.salt_rounds} rounds")
    stats = side_by_side(
        [(sls, (lambda sls=sls: timed(base + ["state.apply", sls], cwd=d))) for sls in ("bench_mdtune", "bench_sysfs")],
        a.salt_rounds, before_each=lambda _: kernelize(root))
    m, s = stats["bench_mdtune"], stats["bench_sysfs"]
    n = len(md_names(root)) * len(SETTINGS)
    out.append("## 3. Salt: mdtune.managed against sysfs.present\n")
    out.append(
        f"Masterless `salt-call --local -c <tmp conf> state.apply SLS` (Salt from the venv) on a "
        f"converged fake root with {a.arrays} arrays, {len(SETTINGS)} settings each. `mdtune.managed` is "
        f"the state module in `module_utils/salt/_states/mdtune.py` (with its execution module), one "
        f"state; `sysfs.present` is Salt's own, one state per file ({n} states, absolute paths into "
        f"the fake root). Before every run the fake root is made to print `sync_speed_max` as the "
        f"kernel does (`500000 (local)`). {a.salt_rounds} rounds, interleaved; the time is the whole "
        f"`salt-call` process.\n"
    )
    out.append("| state | salt-call s (median, min-max) | CPU s | vs mdtune.managed | states reporting changes on a converged host | idempotent |")
    out.append("| --- | ---: | ---: | ---: | ---: | --- |")
    for label, sls, st in (("mdtune.managed (1 state)", "bench_mdtune", m), (f"sysfs.present ({n} states)", "bench_sysfs", s)):
        ch = idem[sls]
        attrs = sorted({c.rsplit("/", 1)[-1] for c in ch})
        note = "yes" if not ch else f"no: rewrites {', '.join(attrs)} on every run"
        out.append(f"| {label} | {st.s()} ({st.spread_s()}) | {st.cpu.s()} | {st.median / m.median:.2f}x | {len(ch)} of {1 if sls == 'bench_mdtune' else n} | {note} |")
    out.append(
        "\nsysfs.present compares the value it was given with the file's text (made an int when it "
        "parses as one): `500000 (local)` never equals `500000`, so every run writes "
        "`sync_speed_max` again and reports a change. mdtune parses the kernel's suffix and writes "
        "nothing.\n"
    )
    return stats, idem


# --- 4. system calls --------------------------------------------------------------------------------

def strace_summary(strace, argv, out_file):
    run([strace, "-f", "-c", "-U", "name,calls,errors", "-o", out_file] + argv)
    counts = {}
    with open(out_file) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit() and parts[0] not in ("syscall", "total"):
                counts[parts[0]] = int(parts[1])
    return counts


def strace_paths(strace, argv, out_file, root):
    """Counts the path-taking calls of a run by what they are for. `strace -y` shows the path
    behind each descriptor, so a call relative to a directory (`openat(5</r/sys/...>, "level")`)
    is counted by its full path."""
    run([strace, "-f", "-y", "-e", "trace=%file,%desc", "-o", out_file] + argv)
    cats = {}
    with open(out_file) as f:
        lines = f.readlines()
    for line in lines:
        m = re.search(r"(\w+)\((?:AT_FDCWD(?:<[^>]*>)?, |(\d+)<([^>]*)>, )?\"([^\"]*)\"", line)
        if not m:
            continue
        call, _fd, base, path = m.groups()
        if base and not path.startswith("/"):
            path = f"{base}/{path}"
        rel = path[len(root):] if path.startswith(root + "/") else None
        if path.startswith("/proc/self/fd/"):
            what = "where a followed link leads (readlink of /proc/self/fd/N, once per link)"
        elif rel is None:
            what = "process start-up, args file"
        elif re.search(r"/mq$", rel):
            what = "listing mq/ of every member disk (hardware queues)"
        elif re.search(r"/md/(group_thread_cnt|stripe_cache_size|sync_speed_max)$", rel):
            what = "reading the 3 managed attributes"
        elif re.search(r"/md/dev-[^/]+/(state|slot|block)$", rel):
            what = "members: md/dev-*/state, slot and the block link"
        elif re.search(r"/md/[a-z_]+$", rel) or rel.endswith("/md"):
            what = "other md/ files (level, state, uuid, unmanaged tunables, sync progress, reshape)"
        elif rel.startswith("/run"):
            what = "the lock (run/)"
        elif rel.endswith("/partition"):
            what = "is the member a partition? (its partition file)"
        elif rel.endswith("/slaves"):
            what = "is the member stacked? (listing its slaves/)"
        elif rel.endswith("/scsi_disk") or rel.endswith("/queue/io_poll"):
            what = "is the disk SCSI? has it poll queues? (device/scsi_disk, queue/io_poll)"
        else:
            what = "sys/block, CPUs and NUMA nodes, the array directories, dev/md links"
        cats.setdefault(what, {})
        cats[what][call] = cats[what].get(call, 0) + 1
    return cats


def bench_syscalls(a, tmp, out):
    strace = shutil.which("strace")
    if not strace:
        out.append("## 4. System calls\n\nstrace is not installed (apt-get install strace): skipped.\n")
        return
    root = make_root(a.mkroot, os.path.join(tmp, "strace-root"), a.arrays)
    converge(a.bin[0][1], root, tmp)
    kernelize(root)
    rows = {}
    for state in ("query", "present"):
        args = write_json(os.path.join(tmp, f"strace-{state}.json"), mdtune_input(root, state))
        rows[state] = strace_summary(strace, [a.bin[0][1], args], os.path.join(tmp, f"strace-{state}.txt"))
        rows[state + "-paths"] = strace_paths(strace, [a.bin[0][1], args], os.path.join(tmp, f"strace-{state}.log"), root)
    n = a.arrays * len(SETTINGS)
    calls = sorted(set(rows["query"]) | set(rows["present"]), key=lambda c: -(rows["present"].get(c, 0)))
    out.append("## 4. System calls per run\n")
    out.append(
        f"`strace -f -c` of one converged run on the {a.arrays}-array host (8 NVMe x 64 queues per "
        f"array). The minimum the job needs is reading the {n} managed values: {n} x "
        f"(openat, read, close) = {3 * n} calls, plus writing nothing (all values in place), plus a "
        f"process: the floor module makes 3 calls (execve, write, exit_group; `strace -c` leaves "
        f"exit_group out of its table).\n"
    )
    out.append("| system call | query | present |")
    out.append("| --- | ---: | ---: |")
    for c in calls:
        out.append(f"| {c} | {rows['query'].get(c, 0)} | {rows['present'].get(c, 0)} |")
    tq, tp = sum(rows["query"].values()), sum(rows["present"].values())
    out.append(f"| **total** | **{tq}** | **{tp}** |")
    out.append(f"| minimum ({n} values read, none written) | {3 * n + 3} | {3 * n + 3} |\n")
    pr = rows["present"]
    out.append(
        f"Of the {tp} calls of `present`, {pr.get('openat', 0) + pr.get('openat2', 0)} open a file or "
        f"directory relative to an open directory (`openat`, and `openat2` for a path of several "
        f"components that must hold no link), {pr.get('read', 0)} read (one per file), "
        f"{pr.get('close', 0)} close, {pr.get('getdents64', 0)} list a directory (two calls per "
        f"listing: entries, then the end), and {pr.get('readlinkat', 0)} read a link (udev's `dev/md` "
        f"names, and where each followed link leads, from `/proc/self/fd`); the rest are the process, "
        f"the input and the lock, and musl's allocator ({pr.get('mmap', 0) + pr.get('munmap', 0)} "
        f"`mmap`/`munmap`; a glibc build makes none).\n"
    )
    out.append("Where the path-taking calls of the `present` run go (`strace -e trace=%file,%desc`):\n")
    out.append("| what | calls |")
    out.append("| --- | --- |")
    for what, per in sorted(rows["present-paths"].items(), key=lambda kv: -sum(kv[1].values())):
        out.append(f"| {what} | {sum(per.values())} ({', '.join(f'{c} {k}' for c, k in sorted(per.items(), key=lambda kv: -kv[1]))}) |")
    out.append("")
    return rows


# --- 5. the floor of reading sysfs ------------------------------------------------------------------

SYSFS_FLOOR_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "floor", "sysfs_floor.rs")


def build_sysfs_floor(out):
    """Builds bench/floor/sysfs_floor.rs: static (musl), optimized, like the mdtune binary."""
    run(["rustc", "--edition", "2021", "-C", "opt-level=3", "-C", "panic=abort", "-C", "strip=symbols",
         "--target", "x86_64-unknown-linux-musl", "-o", out, SYSFS_FLOOR_SRC])
    return out


def floor_facts(text):
    """What the floor printed: {array: (devname, uuid hex, level, state, {attr: value}, sync,
    [(member, queues, role)])}."""
    facts = {}
    for line in text.splitlines():
        name, *fields = line.split("\t")
        kv = dict(f.split("=", 1) for f in fields if "=" in f)
        # As mdtune reads them: "500000 (local)" is 500000, "200000 (system)" is system.
        values = {k: "system" if v.endswith("(system)") else v.split(" ")[0]
                  for k, v in kv.items() if k in SETTINGS}
        members = []
        for m in filter(None, kv["members"].split(",")):
            member, queues, role, _scsi = m.split(":")[:4]
            state, slot = role.split("/")
            # faulty next to in_sync: bad blocks md has not acknowledged yet; it still counts
            active = "in_sync" in state.split(",") and slot.isdigit()
            members.append((member, int(queues), "active" if active else role))
        members.sort()
        facts[name] = (kv["devname"], re.sub("[^0-9a-f]", "", kv["uuid"]), kv["level"], kv["state"], values,
                       kv["sync"].split("/")[0], members)
    return facts


def mdtune_facts(answer):
    """The same facts from mdtune's JSON answer, for checking the floor read what the answer needs."""
    facts = {}
    for a in answer["arrays"]:
        values = {k: str(v["before"]) for k, v in a["settings"].items()}
        members = sorted((m["name"], m["hw_queues"], m.get("role", "")) for m in a["members"])
        facts[a["name"]] = (a.get("devname") or "", re.sub("[^0-9a-f]", "", a.get("uuid") or ""), a["level"],
                            a["array_state"], values, a["sync"]["action"], members)
    return facts


def bench_floor(a, tmp, out):
    strace = shutil.which("strace")
    if not strace:
        raise SystemExit("bench: the floor section needs strace (apt-get install strace)")
    n = a.floor_arrays
    root = make_root(a.mkroot, os.path.join(tmp, f"floor-{n}"), n)
    converge(a.bin[0][1], root, tmp)
    kernelize(root)
    floor = build_sysfs_floor(os.path.join(tmp, "sysfs_floor"))
    floor_argv = [floor, root] + list(SETTINGS)
    floor_links_argv = [floor, "--mq-links", root] + list(SETTINGS)
    # Honesty check: the floor found what mdtune's answer says, array by array.
    query = write_json(os.path.join(tmp, "floor-query.json"), mdtune_input(root, "query"))
    present = write_json(os.path.join(tmp, "floor-present.json"), mdtune_input(root, "present"))
    got, want = floor_facts(run(floor_argv).stdout), mdtune_facts(mdtune_once(a.bin[0][1], query))
    if got != want or floor_facts(run(floor_links_argv).stdout) != want:
        diff = [k for k in sorted(set(got) | set(want)) if got.get(k) != want.get(k)][:3]
        raise SystemExit(f"bench: the floor and mdtune disagree on {diff}: {[got.get(k) for k in diff]} "
                         f"vs {[want.get(k) for k in diff]}")
    contenders = [("floor", floor_argv), ("floor, mq/ by link count", floor_links_argv)] + [
        (f"{label} {state}", [path, args]) for label, path in a.bin for state, args in (("query", query), ("present", present))]
    counts = {name: strace_summary(strace, argv, os.path.join(tmp, f"floor-{i}.strace"))
              for i, (name, argv) in enumerate(contenders)}
    log(f"floor: {len(contenders)} contenders x {a.rounds} rounds")
    stats = side_by_side([(name, (lambda argv=argv: timed(argv))) for name, argv in contenders], a.rounds)
    fl, fc = stats["floor"], sum(counts["floor"].values())

    out.append("## 5. mdtune against the floor of reading sysfs\n")
    out.append(
        f"The host of the scaling table with {n} raid5 arrays, each over 8 NVMe drives with 64 hardware "
        f"queues, converged (tmpfs). *floor* is `bench/floor/sysfs_floor.rs`: it reads exactly the "
        f"files and lists exactly the directories mdtune's answer needs for this input (per array "
        f"`level`, `array_state`, `metadata_version`, `uuid`, the {len(SETTINGS)} settings, "
        f"`sync_action`, `sync_completed`, `sync_speed`, `reshape_position` and the `dev-*` entries of "
        f"`md/`; per member `state`, `slot`, `partition`, `slaves/`, `mq/`, `device/scsi_disk/`, "
        f"`queue/io_poll`; "
        f"udev's `dev/md` links), "
        f"follows links without checking where they lead, and prints what it found; the benchmark "
        f"checked that it found what mdtune's `query` reports (names, uuid, level, state, values, "
        f"sync action, every member's queues and role). Built static (musl) like mdtune. {a.rounds} rounds, "
        f"interleaved; *calls* is `strace -f -c` of one run (system calls, start-up included).\n"
    )
    fl2 = stats["floor, mq/ by link count"]
    out.append("| run | ms (median, min-max) | CPU ms | of it kernel ms | calls | ms / floor | CPU / floor "
               "| calls / floor | CPU / floor by link count |")
    out.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, _ in contenders:
        st, c = stats[name], sum(counts[name].values())
        out.append(f"| {name} | {st.ms(2)} ({st.spread_ms(2)}) | {st.cpu.ms(1)} | {st.kernel.ms(1)} | {c} "
                   f"| {st.median / fl.median:.2f}x | {st.cpu.median / fl.cpu.median:.2f}x | {c / fc:.2f}x "
                   f"| {st.cpu.median / fl2.cpu.median:.2f}x |")
    # Where the time goes: the floor is almost all kernel time, a few microseconds per call.
    per_call = fl2.kernel.median / sum(counts["floor, mq/ by link count"].values())
    goals = []
    for label, state, goal in (("query", "query", 0.020), ("converged present", "present", 0.025)):
        name = f"{a.bin[0][0]} {state}"
        if name not in stats:
            continue
        st, c = stats[name], sum(counts[name].values())
        verdict = "met" if st.median <= goal else "NOT met"
        user = st.cpu.median - st.kernel.median
        goals.append(
            f"- `{label}` within {goal * 1e3:.0f} ms: {verdict} ({st.ms(1)} ms: {st.cpu.ms(1)} ms of CPU, "
            f"{st.kernel.ms(1)} in the kernel for its {c} calls ({st.kernel.median / c * 1e6:.2f} us each) "
            f"and {user * 1e3:.1f} in mdtune's own code. At the {per_call * 1e6:.2f} us per call of the "
            f"floor that counts by link count, {goal * 1e3:.0f} ms of kernel time alone allows "
            f"{int(goal / per_call)} calls; these {c} would need {goal / c * 1e6:.2f} us each, user time aside.)")
    # Against the floor that counts the same way (issue goals: query within 1.05x of its time
    # and calls, a converged present within 1.10x of its time).
    fc2 = sum(counts["floor, mq/ by link count"].values())
    for state, goal in (("query", 1.05), ("present", 1.10)):
        name = f"{a.bin[0][0]} {state}"
        if name not in stats:
            continue
        st, c = stats[name], sum(counts[name].values())
        ratios = [("time", st.median / fl2.median), ("CPU", st.cpu.median / fl2.cpu.median),
                  ("system calls", c / fc2)]
        met = all(r <= goal for _, r in ratios)
        goals.append(f"- `{state}` within {goal:.2f}x of the floor by link count: "
                     f"{'met' if met else 'NOT met'} ("
                     + ", ".join(f"{what} {r:.2f}x" for what, r in ratios) + ")")
    out.append(
        f"\nWhere the time goes: the floor spends {fl.kernel.ms(1)} of its {fl.cpu.ms(1)} CPU ms "
        f"({fl.kernel.median / fl.cpu.median:.0%}) in the kernel ({fl.kernel.median / fc * 1e6:.2f} us per "
        f"system call on this machine); counting `mq/` by link count instead of listing it "
        f"(`--mq-links`, as mdtune does) takes it to {fl2.cpu.ms(1)} ms, {fl2.kernel.ms(1)} in the kernel "
        f"({per_call * 1e6:.2f} us per call). What mdtune does that the floor does not: confinement (each "
        f"member's device directory opened once with `openat2(RESOLVE_BENEATH)` from `sys/`, one call more "
        f"per member, and what is read of the device opened relative to it, where the floor walks the "
        f"member's link again for every file) and its own code (parsing, planning, the JSON answer). "
        f"Goals on this machine:\n")
    out.extend(goals)
    out.append("")
    calls = sorted({c for v in counts.values() for c in v}, key=lambda c: -max(v.get(c, 0) for v in counts.values()))
    out.append("\nSystem calls by name (`strace -f -c`):\n")
    out.append("| system call | " + " | ".join(name for name, _ in contenders) + " |")
    out.append("| --- |" + " ---: |" * len(contenders))
    for c in calls:
        out.append(f"| {c} | " + " | ".join(str(counts[name].get(c, 0)) for name, _ in contenders) + " |")
    out.append("| **total** | " + " | ".join(f"**{sum(counts[name].values())}**" for name, _ in contenders) + " |\n")
    return stats, counts


def scratch_dir():
    """Where the fake roots go: tmpfs (/dev/shm) when it has room, like sysfs kept in memory.

    The 256-array host is about 400,000 small files (1.6 GB on tmpfs, one page each); on a disk
    file system creating and deleting them takes minutes and measures the disk, not mdtune.
    MDTUNE_BENCH_TMP overrides the choice.
    """
    if os.environ.get("MDTUNE_BENCH_TMP"):
        return os.environ["MDTUNE_BENCH_TMP"]
    try:
        st = os.statvfs("/dev/shm")
        if os.access("/dev/shm", os.W_OK) and st.f_bavail * st.f_frsize > 4 << 30:
            return "/dev/shm"
    except OSError:
        pass
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", action="append", required=True, metavar="[LABEL=]PATH",
                    help="mdtune binary; repeat to compare builds in the scaling table (the first is used elsewhere)")
    ap.add_argument("--mkroot", required=True, help="the mkroot example binary")
    ap.add_argument("--venv", default=os.environ.get("MDTUNE_VENV", ""))
    ap.add_argument("--salt-modules", required=False, help="directory holding _modules/ and _states/ (module_utils/salt)")
    ap.add_argument("--sections", default="scaling,ansible,salt,syscalls,floor")
    ap.add_argument("--floor-arrays", type=int, default=64, help="arrays on the host of the floor section")
    ap.add_argument("--sizes", default="1,8,64,256")
    ap.add_argument("--arrays", type=int, default=8, help="arrays on the Ansible, Salt and strace host")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--ansible-rounds", type=int, default=12)
    ap.add_argument("--ansible-contenders", default="mdtune,shell,floor,replay,size,answer")
    ap.add_argument("--ansible-tasks", type=int, default=10,
                    help="identical tasks per play for the binary-module contenders (per-task cost)")
    ap.add_argument("--salt-rounds", type=int, default=5)
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="mdtune benchmark results")
    ap.add_argument("--preamble", default="", help="markdown inserted after the title (build facts)")
    a = ap.parse_args()
    a.bin = [tuple(b.split("=", 1)) if "=" in b else (os.path.basename(b), b) for b in a.bin]
    a.bin = [(label, os.path.abspath(p)) for label, p in a.bin]
    a.mkroot = os.path.abspath(a.mkroot)
    a.here = os.path.dirname(os.path.abspath(__file__))
    sections = a.sections.split(",")
    out = [f"# {a.title}\n"]
    uname = os.uname()
    where = scratch_dir() or tempfile.gettempdir()
    out.append(
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {uname.sysname} "
        f"{uname.release} {uname.machine}, {os.cpu_count()} CPUs, by `{os.environ.get('MDTUNE_BENCH_CMD', 'bench/run.sh')}`. Fake sysfs "
        f"roots in {where}{' (tmpfs)' if where == '/dev/shm' else ''}: regular files and links, so the times are mdtune's own work and "
        f"the file system's, not a kernel's sysfs handlers.\n"
    )
    if a.preamble:
        out.append(a.preamble + "\n")
    tmp = tempfile.mkdtemp(prefix="mdtune-bench.", dir=scratch_dir())
    try:
        a.floor = build_floor(os.path.join(tmp, "floor"))
        for s in sections:
            t0 = time.time()
            if s == "scaling":
                bench_scaling(a, tmp, out)
            elif s == "ansible":
                bench_ansible(a, tmp, out)
            elif s == "salt":
                bench_salt(a, tmp, out)
            elif s == "syscalls":
                bench_syscalls(a, tmp, out)
            elif s == "floor":
                bench_floor(a, tmp, out)
            else:
                raise SystemExit(f"bench: unknown section {s}")
            log(f"{s}: {time.time() - t0:.0f} s")
    finally:
        if os.environ.get("MDTUNE_KEEP_TMP"):
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    with open(a.out, "w") as f:
        f.write("\n".join(out).rstrip() + "\n")
    log(f"wrote {a.out}")


if __name__ == "__main__":
    main()
