"""The sections of the mdtune benchmarks (bench/bench.py) that run the mdtune binary itself, one
process per run as Ansible calls it, on a fake root: 1. scaling (query and a converged present on
hosts of 1 to 256 arrays), 4. system calls (`strace` of one converged run against the minimum the
job needs) and 5. the floor of reading sysfs (mdtune against bench/floor/sysfs_floor.rs, which
reads exactly what mdtune's answer needs: bare, and fair, with mdtune's shortcuts and confinement).
Each appends its markdown to `out`.
"""

import os
import re
import shutil

from benchlib import (SETTINGS, converge, kernelize, log, make_root, mdtune_input, mdtune_once,
                      per_round, run, side_by_side, timed, write_json)


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


# The floors mdtune is measured against: the bare floor that counts `mq/` by link count (as
# mdtune does), and the fair floor, which also takes mdtune's shortcuts and its confinement.
BARE, FAIR = "bare floor, mq/ by link count", "fair floor"
# Goals: within these ratios of each floor's time, for `query` and a converged `present`.
FLOOR_GOALS = ((FAIR, 1.10), (BARE, 1.15))


def bench_floor(a, tmp, out):
    strace = shutil.which("strace")
    if not strace:
        raise SystemExit("bench: the floor section needs strace (apt-get install strace)")
    n = a.floor_arrays
    root = make_root(a.mkroot, os.path.join(tmp, f"floor-{n}"), n)
    converge(a.bin[0][1], root, tmp)
    kernelize(root)
    floor = build_sysfs_floor(os.path.join(tmp, "sysfs_floor"))
    floors = [("bare floor (lists mq/)", [floor, root] + list(SETTINGS)),
              (BARE, [floor, "--mq-links", root] + list(SETTINGS)),
              (FAIR, [floor, "--fair", root] + list(SETTINGS))]
    # Honesty check: every floor found what mdtune's answer says, array by array; the fair floor
    # also by the walk it takes on kernels without openat2 (checked, not timed).
    query = write_json(os.path.join(tmp, "floor-query.json"), mdtune_input(root, "query"))
    present = write_json(os.path.join(tmp, "floor-present.json"), mdtune_input(root, "present"))
    want = mdtune_facts(mdtune_once(a.bin[0][1], query))
    walked = ("fair floor, walk without openat2", [floor, "--fair", "--walk", root] + list(SETTINGS))
    for name, argv in floors + [walked]:
        got = floor_facts(run(argv).stdout)
        if got != want:
            diff = [k for k in sorted(set(got) | set(want)) if got.get(k) != want.get(k)][:3]
            raise SystemExit(f"bench: the {name} and mdtune disagree on {diff}: "
                             f"{[got.get(k) for k in diff]} vs {[want.get(k) for k in diff]}")
    contenders = floors + [
        (f"{label} {state}", [path, args]) for label, path in a.bin for state, args in (("query", query), ("present", present))]
    counts = {name: strace_summary(strace, argv, os.path.join(tmp, f"floor-{i}.strace"))
              for i, (name, argv) in enumerate(contenders)}
    calls = {name: sum(c.values()) for name, c in counts.items()}
    log(f"floor: {len(contenders)} contenders x {a.rounds} rounds")
    stats = side_by_side([(name, (lambda argv=argv: timed(argv))) for name, argv in contenders], a.rounds)
    fl, fc = stats[floors[0][0]], calls[floors[0][0]]
    bare, fair = stats[BARE], stats[FAIR]

    out.append("## 5. mdtune against the floor of reading sysfs\n")
    out.append(
        f"The host of the scaling table with {n} raid5 arrays, each over 8 NVMe drives with 64 hardware "
        f"queues, converged (tmpfs). The floors are `bench/floor/sysfs_floor.rs`: each reads exactly the "
        f"files and lists exactly the directories mdtune's answer needs for this input (per array "
        f"`level`, `array_state`, `metadata_version`, `uuid`, the {len(SETTINGS)} settings, "
        f"`sync_action`, `sync_completed`, `sync_speed`, `reshape_position` and the `dev-*` entries of "
        f"`md/`; per member `state`, `slot`, `partition`, `slaves/`, `mq/`, `device/scsi_disk/`, "
        f"`queue/io_poll`; udev's `dev/md` links) and prints what it found; the benchmark checked that "
        f"each found what mdtune's `query` reports (names, uuid, level, state, values, sync action, "
        f"every member's queues and role). The *bare* floors follow links without checking where they "
        f"lead, read every listing until getdents64 returns 0 and look for `partition` and "
        f"`device/scsi_disk/` on every member; one lists `mq/`, the other (`--mq-links`) takes its link "
        f"count with one `stat` of the whole path, as mdtune counts. The *fair* floor (`--fair`) takes "
        f"mdtune's kernel-safe shortcuts and its confinement: one descriptor for the root, every open "
        f"an `openat2` beneath it (`RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` through links, "
        f"`RESOLVE_NO_SYMLINKS` for plain names; the walk mdtune falls back to without `openat2`, "
        f"checked here, not timed), a member's device opened once and read relative to it, `mq/` by "
        f"one `statx` there and `partition` only without `mq/`, `device/scsi_disk/` only under `sd*` "
        f"names, and a listing under `sys/` ended at a short batch (one `fstatfs` of `sys/`). What is "
        f"left between it and mdtune is mdtune's own code: parsing, planning, the JSON answer. All built "
        f"static (musl) like mdtune. {a.rounds} rounds, interleaved; *calls* is `strace -f -c` of one "
        f"run (system calls, start-up included).\n"
    )
    out.append("| run | ms (median, min-max) | CPU ms | of it kernel ms | calls |")
    out.append("| --- | ---: | ---: | ---: | ---: |")
    for name, _ in contenders:
        st = stats[name]
        out.append(f"| {name} | {st.ms(2)} ({st.spread_ms(2)}) | {st.cpu.ms(1)} | {st.kernel.ms(1)} "
                   f"| {calls[name]} |")
    mdtune_runs = [name for name, _ in contenders[len(floors):]]
    out.append(f"\nmdtune against the bare floor (`mq/` by link count) and the fair floor, side by side: "
               f"ratios of the medians above, and *per round* the median of the {a.rounds} ratios of "
               f"two runs made in the same round.\n")
    out.append("| run | time / bare | per round | CPU / bare | calls / bare | time / fair | per round "
               "| CPU / fair | calls / fair |")
    out.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in mdtune_runs:
        st, cells = stats[name], []
        for floor_name in (BARE, FAIR):
            f = stats[floor_name]
            cells += [f"{st.median / f.median:.2f}x", f"{per_round(st, f):.2f}x",
                      f"{st.cpu.median / f.cpu.median:.2f}x", f"{calls[name] / calls[floor_name]:.2f}x"]
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    # Where the time goes: the floor is almost all kernel time, a few microseconds per call.
    per_call = bare.kernel.median / calls[BARE]
    goals = []
    for label, state, goal in (("query", "query", 0.020), ("converged present", "present", 0.025)):
        name = f"{a.bin[0][0]} {state}"
        if name not in stats:
            continue
        st, c = stats[name], calls[name]
        verdict = "met" if st.median <= goal else "NOT met"
        user = st.cpu.median - st.kernel.median
        # On a tiny host the floor's kernel time can round to 0 (`--floor-arrays 4`).
        allows = f"{int(goal / per_call)} calls" if per_call > 0 else "any number of calls"
        goals.append(
            f"- `{label}` within {goal * 1e3:.0f} ms: {verdict} ({st.ms(1)} ms: {st.cpu.ms(1)} ms of CPU, "
            f"{st.kernel.ms(1)} in the kernel for its {c} calls ({st.kernel.median / c * 1e6:.2f} us each) "
            f"and {user * 1e3:.1f} in mdtune's own code. At the {per_call * 1e6:.2f} us per call of the "
            f"bare floor that counts by link count, {goal * 1e3:.0f} ms of kernel time alone allows "
            f"{allows}; these {c} would need {goal / c * 1e6:.2f} us each, user time aside.)")
    for state in ("query", "present"):
        name = f"{a.bin[0][0]} {state}"
        if name not in stats:
            continue
        st = stats[name]
        for floor_name, goal in FLOOR_GOALS:
            f = stats[floor_name]
            ratio = st.median / f.median
            goals.append(
                f"- `{state}` within {goal:.2f}x of the time of the {floor_name}: "
                f"{'met' if ratio <= goal else 'NOT met'} ({ratio:.2f}x, {st.ms(2)} against "
                f"{f.ms(2)} ms; per round {per_round(st, f):.2f}x; CPU "
                f"{st.cpu.median / f.cpu.median:.2f}x; system calls {calls[name] / calls[floor_name]:.2f}x, "
                f"{calls[name]} against {calls[floor_name]})")
    out.append(
        f"\nWhere the time goes: the bare floor that lists `mq/` spends {fl.kernel.ms(1)} of its "
        f"{fl.cpu.ms(1)} CPU ms ({fl.kernel.median / fl.cpu.median:.0%}) in the kernel "
        f"({fl.kernel.median / fc * 1e6:.2f} us per system call on this machine); counting `mq/` by link "
        f"count instead takes it to {bare.cpu.ms(1)} ms, {bare.kernel.ms(1)} in the kernel "
        f"({per_call * 1e6:.2f} us per call); the fair floor, with mdtune's shortcuts and confinement, "
        f"takes {fair.cpu.ms(1)} ms, {fair.kernel.ms(1)} in the kernel, for {calls[FAIR]} calls. What "
        f"mdtune does beyond the bare floor: confinement (each member's device directory opened once "
        f"with `openat2(RESOLVE_BENEATH)` from `sys/`, and what is read of the device opened relative "
        f"to it, where the bare floor walks the member's link again for every file), which its "
        f"shortcuts pay for, and its own code (parsing, planning, the JSON answer); beyond the fair "
        f"floor, only its own code. Goals on this machine:\n")
    out.extend(goals)
    out.append("")
    names = sorted({c for v in counts.values() for c in v}, key=lambda c: -max(v.get(c, 0) for v in counts.values()))
    out.append("\nSystem calls by name (`strace -f -c`):\n")
    out.append("| system call | " + " | ".join(name for name, _ in contenders) + " |")
    out.append("| --- |" + " ---: |" * len(contenders))
    for c in names:
        out.append(f"| {c} | " + " | ".join(str(counts[name].get(c, 0)) for name, _ in contenders) + " |")
    out.append("| **total** | " + " | ".join(f"**{calls[name]}**" for name, _ in contenders) + " |\n")
    return stats, counts
