"""The assertions of tests/salt/run.sh on what salt-call printed as JSON.

    python tests/salt/call_checks.py FILE CHECK [ARG...]
    python tests/salt/call_checks.py --form-pillar FORM_JSON ROOT BINARY

run.sh runs each of its salt-call commands with --out=json into FILE (stderr in FILE.err), then
calls the first form through its `check` with the venv's Python: CHECK names one of the functions
in CHECKS below, which gets r, the "local" value of that JSON (all of it when there is none), and
the ARGs run.sh passes (the fake root, the deployed binary's path, a state ID). A check that holds
prints nothing and exits 0; one that fails raises AssertionError with what was expected and what
came, and run.sh shows the traceback's last lines. FILE without JSON fails every check, showing
the end of FILE and FILE.err. The helpers (load, state, md, proc, eq) are tests/salt/saltjson.py's,
shared with tests/salt/ssh_checks.py.

The second form prints, as one line of JSON, the pillar that form_check.py wrote to FORM_JSON (the
form's defaults or the untouched form, as Uyuni's server makes them into pillar) with ROOT and
BINARY set in its mdtune key.
"""

import json
import os
import sys

from saltjson import eq, load, md, proc, state


def local_of(path):
    """salt-call's "local" value of the JSON in PATH (all of it when there is none)."""
    data = load(path, "salt-call")
    return data.get("local", data) if isinstance(data, dict) else data


# --- the checks, in the order run.sh runs them ------------------------------------------------


def sync_all(r):
    assert "modules.mdtune" in r["modules"], r
    assert "states.mdtune" in r["states"], r


def query_pillar(r):
    eq(r.get("failed"), False, "failed")
    by = {a["name"]: a for a in r["arrays"]}
    for n in ("md0", "md1", "md2", "md3"):
        assert n in by, "no %s in %s" % (n, list(by))
    eq(by["md0"]["devname"], "hana_data", "md0 devname")
    eq(by["md1"]["sync"]["action"], "resync", "md1 sync action")
    eq(by["md0"]["settings"]["stripe_cache_size"]["after"], 4096,
       "md0 stripe_cache_size wanted (pillar)")
    eq(r["compliant"], False, "compliant")
    eq(r["changed"], False, "changed")


def query_defaults(r):
    by = {a["name"]: a for a in r["arrays"]}
    assert "stripe_cache_size" not in by["md0"]["settings"], by["md0"]["settings"]
    eq(by["md0"]["settings"]["group_thread_cnt"]["after"], 8, "md0 group_thread_cnt (auto)")


def query_override(r):
    by = {a["name"]: a for a in r["arrays"]}
    eq(by["md0"]["settings"]["group_thread_cnt"]["after"], 0,
       "md0 group_thread_cnt (the argument)")
    eq(by["md0"]["settings"]["stripe_cache_size"]["after"], 4096,
       "md0 stripe_cache_size (the pillar)")


def example_test(r):
    s = state(r, "md-raid-tuned")
    eq(s["result"], None, "result")
    c = s["changes"]
    eq(c.get("md0", {}).get("group_thread_cnt"), {"old": 0, "new": 8}, "md0 group_thread_cnt")
    eq(c.get("md0", {}).get("stripe_cache_size"), {"old": 256, "new": 4096},
       "md0 stripe_cache_size")
    eq(c.get("md0", {}).get("sync_speed_max"), {"old": "system", "new": 500000},
       "md0 sync_speed_max")
    eq(c.get("md1", {}).get("sync_speed_min"), {"old": "system", "new": 50000},
       "md1 sync_speed_min")
    eq(c.get("md2", {}).get("group_thread_cnt"), {"old": 0, "new": 16}, "md2 group_thread_cnt")
    eq(c.get("md2", {}).get("skip_copy"), {"old": False, "new": True}, "md2 skip_copy")
    eq(c.get("system", {}).get("speed_limit_max"), {"old": 200000, "new": 500000},
       "speed_limit_max")
    assert "md3" not in c, "md3 (auto gives 0, in place) must not change: %r" % c.get("md3")


def example_applied(r, root):
    s = state(r, "md-raid-tuned")
    eq(s["result"], True, "result: " + s["comment"])
    assert s["changes"].get("md0"), s["changes"]
    eq(md(root, "md0", "group_thread_cnt"), "8", "md0 group_thread_cnt")
    eq(md(root, "md0", "stripe_cache_size"), "4096", "md0 stripe_cache_size")
    eq(md(root, "md0", "sync_speed_max").split()[0], "500000", "md0 sync_speed_max")
    eq(md(root, "md1", "sync_speed_min").split()[0], "50000", "md1 sync_speed_min")
    eq(md(root, "md2", "group_thread_cnt"), "16", "md2 group_thread_cnt")
    eq(md(root, "md2", "stripe_cache_size"), "8192", "md2 stripe_cache_size")
    eq(md(root, "md2", "skip_copy"), "1", "md2 skip_copy")
    eq(md(root, "md3", "group_thread_cnt"), "0", "md3 group_thread_cnt")
    eq(proc(root, "speed_limit_max"), "500000", "speed_limit_max")
    eq(proc(root, "speed_limit_min"), "1000", "speed_limit_min (unmanaged)")


def converged(r, sid):
    """The state SID held already: result True, no changes."""
    s = state(r, sid)
    eq(s["result"], True, "result: " + s["comment"])
    eq(s["changes"], {}, "changes")


def query_compliant(r):
    eq(r["compliant"], True, "compliant: " + r["msg"])


def bad_value(r):
    s = state(r, "bad-value")
    eq(s["result"], False, "result")
    assert "mdtune failed" in s["comment"] and "stripe_cache_size" in s["comment"], s["comment"]
    assert "exit status 2" in s["comment"], s["comment"]
    eq(s["changes"], {}, "changes")


def example_reverted(r, root):
    eq(r.get("failed"), False, "failed: %s" % r.get("msg"))
    eq(r.get("changed"), True, "changed")
    eq(md(root, "md0", "group_thread_cnt"), "0", "md0 group_thread_cnt")
    eq(md(root, "md0", "stripe_cache_size"), "256", "md0 stripe_cache_size")
    eq(md(root, "md2", "skip_copy"), "0", "md2 skip_copy")
    assert md(root, "md1", "sync_speed_min") in ("system", "1000 (system)"), \
        md(root, "md1", "sync_speed_min")
    eq(proc(root, "speed_limit_max"), "200000", "speed_limit_max")


def recorded_apply(r):
    """r: what tests/salt/record_mdtune.py recorded of its run by mdtune.managed."""
    eq(r.get("argv"), ["-"], "argv")
    eq(r.get("caller"), "salt mdtune.apply", "MDTUNE_CALLER")
    given = json.loads(r["stdin"])
    eq(given, {"arrays": [{"name": "back\\nslash", "group_thread_cnt": "8", "skip_copy": True}],
               "thread_policy": "off", "speed_limit_max": 500000, "root": "/nonexistent",
               "check_mode": True, "state": "present"}, "stdin JSON")


def recorded_test_mode(r):
    """r: what tests/salt/record_mdtune.py recorded of its run by mdtune.apply TEST=True."""
    given = json.loads(r["stdin"])
    eq(given, {"root": "/nonexistent", "check_mode": True, "state": "present"}, "stdin JSON")


def missing_binary(r):
    s = state(r, "no-binary")
    eq(s["result"], False, "result")
    assert "nonexistent/mdtune" in s["comment"] and "mdtune:binary" in s["comment"], s["comment"]


def formula_install(r):
    eq(r["mdtune-package"]["pkg"][0], {"name": "mdtune"}, "mdtune-package")
    eq(r["mdtune-package"]["pkg"][1], "installed", "mdtune-package function")
    args = r["mdtune-tuned"]["mdtune"]
    assert {"binary": "/usr/sbin/mdtune"} in args, args
    assert {"require": [{"pkg": "mdtune-package"}]} in args, args


def formula_metrics(r):
    args = r["mdtune-metrics"]["service"]
    assert "running" in args and {"name": "mdtune-tick.timer"} in args \
        and {"enable": True} in args, args
    assert {"require": [{"pkg": "mdtune-package"}]} in args, args


def in_snapshot(r):
    s = state(r, "in-snapshot")
    eq(s["result"], False, "result")
    assert "transactional-update snapshot" in s["comment"] and "state.apply" in s["comment"], \
        s["comment"]
    eq(s["changes"], {}, "changes")


def formula_test(r, deployed):
    """deployed: where the formula's file.managed would put the binary."""
    f = state(r, "mdtune-binary")
    eq(f["result"], None, "file.managed result")
    s = state(r, "mdtune-tuned")
    eq(s["result"], None, "mdtune.managed result")
    assert "not there yet" in s["comment"], s["comment"]
    assert not os.path.exists(deployed), "binary deployed in test mode"


def formula_applied(r, root, deployed):
    f = state(r, "mdtune-binary")
    eq(f["result"], True, "file.managed result: " + f["comment"])
    assert os.access(deployed, os.X_OK), "deployed binary not executable"
    s = state(r, "mdtune-tuned")
    eq(s["result"], True, "result: " + s["comment"])
    c = s["changes"]
    eq(c.get("md0", {}).get("stripe_cache_size"), {"old": 256, "new": 4096},
       "md0 stripe_cache_size (exact beats glob)")
    eq(md(root, "md0", "stripe_cache_size"), "4096", "md0 stripe_cache_size")
    eq(md(root, "md0", "preread_bypass_threshold"), "64", "md0 preread_bypass_threshold")
    eq(md(root, "md0", "group_thread_cnt"), "8", "md0 group_thread_cnt (auto)")
    eq(md(root, "md0", "sync_speed_max").split()[0], "500000", "md0 sync_speed_max")
    # md1 resyncs: the md* entry's sync_boost (during resync, recover) is in force over hana_log's
    # 50000.
    eq(md(root, "md1", "sync_speed_min").split()[0], "500000", "md1 sync_speed_min (boosted)")
    eq(md(root, "md1", "sync_speed_max").split()[0], "2000000", "md1 sync_speed_max (boosted)")
    eq(md(root, "md2", "stripe_cache_size"), "1024", "md2 stripe_cache_size (glob)")
    eq(md(root, "md2", "group_thread_cnt"), "4", "md2 group_thread_cnt (entry)")
    eq(md(root, "md2", "skip_copy"), "1", "md2 skip_copy")
    eq(md(root, "md3", "stripe_cache_size"), "1024", "md3 stripe_cache_size (glob)")
    eq(md(root, "md3", "group_thread_cnt"), "0", "md3 group_thread_cnt (auto, one queue)")
    eq(proc(root, "speed_limit_max"), "400000", "speed_limit_max")
    assert c.get("persist", {}).get("files"), "persist: %r" % c.get("persist")
    assert os.listdir(os.path.join(root, "etc/mdtune")), "nothing persisted under etc/mdtune"


def formula_converged(r):
    for sid in ("mdtune-binary", "mdtune-tuned"):
        s = state(r, sid)
        eq(s["result"], True, sid + " result: " + s["comment"])
        eq(s["changes"], {}, sid + " changes")


def formula_query(r):
    eq(r["compliant"], True, "compliant: " + r["msg"])
    by = {a["name"]: a for a in r["arrays"]}
    eq(by["md2"]["settings"]["stripe_cache_size"]["after"], 1024,
       "md2 stripe_cache_size wanted (md* entry)")


def form_pillar_runs(r):
    s = state(r, "mdtune-tuned")
    assert s["result"] in (None, True), "result: %r %s" % (s["result"], s["comment"])
    assert "mdtune-binary" not in str(list(r)), "deploy is off by default"
    for array, settings in s["changes"].items():
        if array.startswith("md"):
            assert set(settings) <= {"group_thread_cnt"}, (array, settings)


def formula_reverted(r, root):
    s = state(r, "undo")
    eq(s["result"], True, "result: " + s["comment"])
    eq(s["changes"].get("md0", {}).get("stripe_cache_size"), {"old": 4096, "new": 256},
       "md0 stripe_cache_size")
    eq(md(root, "md0", "stripe_cache_size"), "256", "md0 stripe_cache_size")
    eq(md(root, "md2", "group_thread_cnt"), "0", "md2 group_thread_cnt")
    eq(proc(root, "speed_limit_max"), "200000", "speed_limit_max")
    assert not os.path.exists(os.path.join(root, "etc/mdtune/mdtune.json")), \
        "etc/mdtune/mdtune.json is still there"


CHECKS = {f.__name__: f for f in (
    sync_all, query_pillar, query_defaults, query_override, example_test, example_applied,
    converged, query_compliant, bad_value, example_reverted, recorded_apply, recorded_test_mode,
    missing_binary, formula_install, formula_metrics, in_snapshot, formula_test, formula_applied,
    formula_converged, formula_query, form_pillar_runs, formula_reverted,
)}


def form_pillar(form_json, root, binary):
    """Prints the pillar in FORM_JSON with ROOT and BINARY set in its mdtune key."""
    with open(form_json) as f:
        p = json.load(f)
    p["mdtune"].update(root=root, binary=binary)
    print(json.dumps(p))


def main(argv):
    if len(argv) == 4 and argv[0] == "--form-pillar":
        form_pillar(*argv[1:])
        return
    if len(argv) < 2 or argv[1] not in CHECKS:
        sys.exit("usage: call_checks.py FILE CHECK [ARG...] (CHECK: %s)\n"
                 "       call_checks.py --form-pillar FORM_JSON ROOT BINARY" % ", ".join(CHECKS))
    path, name, args = argv[0], argv[1], argv[2:]
    CHECKS[name](local_of(path), *args)


if __name__ == "__main__":
    main(sys.argv[1:])
