"""The sections of the mdtune benchmarks (bench/bench.py) that run mdtune through a configuration
tool from the venv: 2. Ansible (mdtune as a binary module through real ansible-playbook, against
the shell idiom, an empty module and modules as big as mdtune or printing its answer, and the
cost per task) and 3. Salt (the mdtune.managed state against sysfs.present, masterless
salt-call, with idempotency). Each appends its markdown to `out`.
"""

import json
import os
import re
import shutil
import subprocess
import time

from benchlib import (SETTINGS, Stats, build_floor, converge, kernelize, log, make_root, md_names,
                      mdtune_input, run, side_by_side, timed, write_json)


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


def venv_tool(a, name):
    """The venv's bin directory and its program `name`, which must be there to run."""
    venv_bin = os.path.join(a.venv, "bin")
    tool = os.path.join(venv_bin, name)
    if not os.access(tool, os.X_OK):
        raise SystemExit(f"bench: no {tool}: run .ci/setup-python.sh")
    return venv_bin, tool


# The contenders that are one binary module, each run as `--ansible-tasks` identical tasks.
MODULE_CONTENDERS = ("mdtune", "floor", "replay", "size", "answer")


def bench_ansible(a, tmp, out):
    venv_bin, playbook = venv_tool(a, "ansible-playbook")
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
    _, salt_call = venv_tool(a, "salt-call")
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

