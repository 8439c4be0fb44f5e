"""The sections of the mdtune benchmarks (bench/bench.py) that run the mdtune binary itself, one
process per run as Ansible calls it, on a fake root: 1. scaling (query and a converged present on
hosts of 1 to 256 arrays), 4. system calls (`strace` of one converged run against the minimum the
job needs) and 5. the floor of reading sysfs (mdtune against bench/floor/sysfs_floor.rs, which
reads exactly what mdtune's answer needs). Each appends its markdown to `out`.
"""

import os
import re
import shutil

from benchlib import (SETTINGS, converge, kernelize, log, make_root, mdtune_input, mdtune_once, run,
                      side_by_side, timed, write_json)


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
        # On a tiny host the floor's kernel time can round to 0 (`--floor-arrays 4`).
        allows = f"{int(goal / per_call)} calls" if per_call > 0 else "any number of calls"
        goals.append(
            f"- `{label}` within {goal * 1e3:.0f} ms: {verdict} ({st.ms(1)} ms: {st.cpu.ms(1)} ms of CPU, "
            f"{st.kernel.ms(1)} in the kernel for its {c} calls ({st.kernel.median / c * 1e6:.2f} us each) "
            f"and {user * 1e3:.1f} in mdtune's own code. At the {per_call * 1e6:.2f} us per call of the "
            f"floor that counts by link count, {goal * 1e3:.0f} ms of kernel time alone allows "
            f"{allows}; these {c} would need {goal / c * 1e6:.2f} us each, user time aside.)")
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

