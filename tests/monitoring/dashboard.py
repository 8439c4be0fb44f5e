#!/usr/bin/env python3
"""The monitoring suite's health half (tests/monitoring/run.sh), standard library only.

Subcommands:
  mdstat DIR                 write DIR/mdstat: the demo host's arrays as /proc/mdstat shows them
                             (md0 with a failed member), for node_exporter's md collector;
  simulate BIN ROOT TEXTDIR  on the demo host ROOT, run `BIN --tick --root ROOT --textfile
                             TEXTDIR` around a whole check of md2 (raid6) that finds 8 mismatched
                             sectors, then make md0 degraded, freeze md3's sync and slow md1's
                             resync below its minimum, and tick again;
  queries DASHBOARD API      run every target of every panel of the Grafana DASHBOARD against
                             Prometheus' query API (variables as `.*`); each must return data;
  alerts API INSTANCE NAME.. wait until every NAME fires for INSTANCE with the target's extra
                             labels (host, env) and the array's (array, device) where it has one.
Exits 1 and says what failed.
"""

import json
import pathlib
import subprocess
import sys
import time
import urllib.parse
import urllib.request

MDSTAT = """Personalities : [raid6] [raid5] [raid4] [raid10]
md0 : active raid5 nvme3n1p1[3](F) nvme2n1p1[2] nvme1n1p1[1] nvme0n1p1[0] sdn[4](S)
      3000000 blocks super 1.2 level 5, 512k chunk, algorithm 2 [4/3] [UUU_]

md1 : active raid10 nvme7n1[3] nvme6n1[2] nvme5n1[1] nvme4n1[0]
      2000000 blocks super 1.2 512K chunks 2 near-copies [4/4] [UUUU]
      [====>................]  resync = 25.0% (500000/2000000) finish=10.0min speed=500K/sec

md2 : active raid6 dm-3[3] dm-2[2] dm-1[1] dm-0[0]
      2000000 blocks super 1.2 level 6, 512k chunk, algorithm 2 [4/4] [UUUU]

md3 : active raid5 sdk[2] sdj[1] sdi[0]
      2000000 blocks super 1.2 level 5, 512k chunk, algorithm 2 [3/3] [UUU]

unused devices: <none>
"""


def fail(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)


def md_dir(root, name):
    """The md/ directory of array `name` under the fake root."""
    found = sorted(pathlib.Path(root, "sys/devices").glob(f"**/block/{name}/md"))
    if not found:
        fail(f"no {name} under {root}")
    return found[0]


def set_md(root, name, **files):
    md = md_dir(root, name)
    for attr, value in files.items():
        (md / attr).write_text(f"{value}\n")


def tick(binary, root, textdir):
    out = subprocess.run([binary, "--tick", "--root", root, "--textfile", textdir],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        fail(f"mdtune --tick exited {out.returncode}: {out.stdout}{out.stderr}")
    return json.loads(out.stdout)


def simulate(binary, root, textdir):
    running = {"sync_completed": "1000 / 4001000", "sync_speed": "1000"}
    set_md(root, "md2", sync_action="check", last_sync_action="none", sync_min=0,
           sync_max="max", **running)
    tick(binary, root, textdir)
    set_md(root, "md2", sync_action="idle", last_sync_action="check", mismatch_cnt=8,
           sync_completed="none", sync_speed="none")
    out = tick(binary, root, textdir)
    recorded = out["recorded"]
    if len(recorded) != 1 or not recorded[0]["whole"] or recorded[0]["mismatch_cnt"] != 8:
        fail(f"the tick did not record md2's whole check with 8 mismatches: {out}")
    set_md(root, "md0", degraded=1)
    set_md(root, "md3", sync_action="frozen")
    set_md(root, "md1", sync_speed=500)
    tick(binary, root, textdir)
    print("md2's whole check recorded; md0 degraded, md3 frozen, md1 at 500 KiB/s")


def query(api, expr):
    url = f"{api}/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as r:
        body = json.load(r)
    if body.get("status") != "success":
        fail(f"{expr}: {body}")
    return body["data"]["result"]


def expand(expr):
    """A panel's query with the dashboard's variables as every value."""
    for var in ("$instance", "$array"):
        expr = expr.replace(var, ".*")
    return expr


def queries(dashboard, api):
    panels = json.loads(pathlib.Path(dashboard).read_text())["panels"]
    missing = []
    count = 0
    deadline = time.monotonic() + 30
    for panel in panels:
        for target in panel["targets"]:
            expr = expand(target["expr"])
            count += 1
            while not query(api, expr) and time.monotonic() < deadline:
                time.sleep(0.5)
            if not query(api, expr):
                missing.append(f"{panel['title']}: {expr}")
    if missing:
        fail("no data for:\n  " + "\n  ".join(missing))
    print(f"{count} queries of {len(panels)} panels returned data")


def alerts(api, instance, names):
    extra = {"host": "demo", "env": "test"}
    seen = {}
    for _ in range(60):
        with urllib.request.urlopen(f"{api}/alerts", timeout=10) as r:
            firing = [a["labels"] for a in json.load(r)["data"]["alerts"]
                      if a["state"] == "firing" and a["labels"].get("instance") == instance]
        seen = {a["alertname"]: a for a in firing if a["alertname"] in names}
        if set(seen) == set(names):
            break
        time.sleep(0.5)
    else:
        fail(f"firing for {instance}: {sorted(seen)}, wanted {sorted(names)}")
    for name, labels in seen.items():
        lost = [k for k, v in extra.items() if labels.get(k) != v]
        if "array" in labels and labels.get("device") != labels["array"]:
            lost.append("device")
        if lost:
            fail(f"{name} lost {lost}: {labels}")
    print(" ".join(f"{n}{{array={seen[n].get('array', '-')}}}" for n in sorted(seen)))


def main(argv):
    if len(argv) < 2:
        fail(__doc__)
    cmd, args = argv[1], argv[2:]
    if cmd == "mdstat" and len(args) == 1:
        pathlib.Path(args[0]).mkdir(parents=True, exist_ok=True)
        pathlib.Path(args[0], "mdstat").write_text(MDSTAT)
    elif cmd == "simulate" and len(args) == 3:
        simulate(*args)
    elif cmd == "queries" and len(args) == 2:
        queries(*args)
    elif cmd == "alerts" and len(args) >= 3:
        alerts(args[0], args[1], args[2:])
    else:
        fail(__doc__)


if __name__ == "__main__":
    main(sys.argv)
