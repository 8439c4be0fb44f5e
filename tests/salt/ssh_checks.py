"""The assertions of tests/salt/ssh.sh on what salt-ssh (and salt-run) printed as JSON.

    python tests/salt/ssh_checks.py FILE TARGET CHECK [ARG...]
    python tests/salt/ssh_checks.py --master-dirs MASTER_CONFIG

ssh.sh runs each of its salt-ssh commands with --out=json into FILE (stderr in FILE.err), then
calls the first form through its `check` with the venv's Python: CHECK names one of the functions
in CHECKS below, which gets r, the value for TARGET in that JSON (all of it when TARGET is "-"),
and the ARGs ssh.sh passes (the target's root, the mdtune binary). A check that holds prints
nothing and exits 0; one that fails raises AssertionError with what was expected and what came,
and ssh.sh shows the traceback's last lines. FILE without JSON fails every check, showing the end
of FILE and FILE.err. The helpers (load, state, md, proc, eq, report) are tests/salt/saltjson.py's,
shared with tests/salt/call_checks.py.

The second form prints the cachedir and the extension_modules that Salt resolves from the
master's config file, one a line (ssh.sh installs the wrapper under the latter).
"""

import json
import os
import sys

from saltjson import eq, load, md, proc, report, state

# The install command that the modules print when the salt-ssh wrapper is missing.
INSTALL = (
    "install -D -m 0644 /usr/share/susemanager/salt/_wrapper/mdtune.py"
    " /var/cache/salt/master/extmods/wrapper/mdtune.py"
)


def target_of(path, target):
    """The value for TARGET in the JSON in PATH (all of it for "-")."""
    data = load(path, "salt-ssh")
    return data if target == "-" else data[target]


# --- the checks, in the order ssh.sh runs them ------------------------------------------------


def refuses_without_wrapper(r):
    text = json.dumps(r)
    assert "needs mdtune" in text and "salt-ssh wrapper" in text, "no refusal: " + text[:600]
    assert INSTALL in text, text[:600]


def query_defaults(r):
    a = report(r)
    eq(sorted(a["md0"]), ["group_thread_cnt"], "md0 settings (the pillar asks for more)")
    eq(a["md0"]["group_thread_cnt"]["after"], 8, "md0 group_thread_cnt (auto)")


def show_sls(r):
    assert isinstance(r, dict), "not rendered: %r" % (r,)
    eq(r["mdtune-tuned"]["mdtune"][0], {"from_pillar": True}, "mdtune-tuned arguments")


def apply_test_predicted(r):
    s = state(r, "mdtune-tuned")
    eq(s["result"], None, "result: %s" % s["comment"])
    c = s["changes"]
    eq(c.get("md0", {}).get("stripe_cache_size"), {"old": 256, "new": 4096},
       "md0 stripe_cache_size (pillar)")
    eq(c.get("md2", {}).get("group_thread_cnt"), {"old": 0, "new": 4},
       "md2 group_thread_cnt (pillar)")
    eq(c.get("system", {}).get("speed_limit_max"), {"old": 200000, "new": 400000},
       "speed_limit_max (pillar)")


def query_pillar(r):
    a = report(r)
    eq(r["compliant"], False, "compliant")
    eq(a["md0"].get("stripe_cache_size", {}).get("after"), 4096, "md0 stripe_cache_size (pillar)")
    eq(a["md0"].get("preread_bypass_threshold", {}).get("after"), 64,
       "md0 preread_bypass_threshold (pillar only)")
    eq(a["md2"].get("group_thread_cnt", {}).get("after"), 4, "md2 group_thread_cnt (pillar)")
    eq(r["system"]["speed_limit_max"]["after"], 400000, "speed_limit_max (pillar)")


def module_apply_test(r):
    a = report(r)
    eq(r["check_mode"], True, "check_mode")
    eq(r["changed"], True, "changed")
    eq(a["md0"]["stripe_cache_size"]["after"], 4096, "md0 stripe_cache_size (pillar)")
    eq(a["md0"]["preread_bypass_threshold"]["after"], 64,
       "md0 preread_bypass_threshold (pillar only)")


def binary_path(r, binary):
    eq(r, binary, "binary")


def apply_written(r, root):
    s = state(r, "mdtune-tuned")
    eq(s["result"], True, "result: " + s["comment"])
    eq(md(root, "md0", "stripe_cache_size"), "4096", "md0 stripe_cache_size")
    eq(md(root, "md0", "preread_bypass_threshold"), "64", "md0 preread_bypass_threshold")
    eq(md(root, "md0", "sync_speed_max").split()[0], "500000", "md0 sync_speed_max")
    # md1 resyncs: the md* entry's sync_boost (during resync, recover) is in force over hana_log's
    # 50000.
    eq(md(root, "md1", "sync_speed_min").split()[0], "500000", "md1 sync_speed_min (boosted)")
    eq(md(root, "md1", "sync_speed_max").split()[0], "2000000", "md1 sync_speed_max (boosted)")
    eq(md(root, "md2", "group_thread_cnt"), "4", "md2 group_thread_cnt")
    eq(md(root, "md2", "skip_copy"), "1", "md2 skip_copy")
    eq(md(root, "md3", "stripe_cache_size"), "1024", "md3 stripe_cache_size")
    eq(proc(root, "speed_limit_max"), "400000", "speed_limit_max")
    assert os.path.exists(os.path.join(root, "etc/mdtune/mdtune.json")), "nothing persisted"


def drift_found(r):
    s = state(r, "mdtune-tuned")
    eq(s["result"], None, "result: " + s["comment"])
    eq(s["changes"], {"md0": {"stripe_cache_size": {"old": 512, "new": 4096}}}, "changes")


def drift_query(r):
    eq(r.get("compliant"), False, "compliant: %r" % (r,))
    off = sorted((x["name"], k) for x in r["arrays"]
                 for k, v in x["settings"].items() if not v["compliant"])
    off += sorted(("system", k) for k, v in r["system"].items()
                  if isinstance(v, dict) and v.get("compliant") is False)
    eq(off, [("md0", "stripe_cache_size")], "settings not compliant")


def desired(r, root, binary):
    eq(r.get("root"), root, "root")
    eq(r.get("binary"), binary, "binary")
    assert r.get("arrays"), "no arrays in %r" % (r,)


def revert_test(r):
    eq(r.get("failed"), False, "failed: %s" % r.get("msg"))
    eq(r.get("changed"), True, "changed")
    eq(r.get("check_mode"), True, "check_mode")


def reverted(r, root):
    eq(r.get("failed"), False, "failed: %s" % r.get("msg"))
    eq(r.get("changed"), True, "changed")
    eq(md(root, "md0", "stripe_cache_size"), "256", "md0 stripe_cache_size")
    eq(md(root, "md2", "group_thread_cnt"), "0", "md2 group_thread_cnt")
    eq(md(root, "md2", "skip_copy"), "0", "md2 skip_copy")
    eq(proc(root, "speed_limit_max"), "200000", "speed_limit_max")
    assert not os.path.exists(os.path.join(root, "etc/mdtune/mdtune.json")), \
        "the persisted state is left"


def bare_defaults(r):
    eq(sorted(k.split("_|-")[1] for k in r), ["mdtune-tuned"], "states")
    s = state(r, "mdtune-tuned")
    eq(s["result"], None, "result: %s" % s["comment"])
    for array, settings in s["changes"].items():
        if array.startswith("md"):
            eq(set(settings), {"group_thread_cnt"}, array)
    eq(s["changes"]["md0"]["group_thread_cnt"], {"old": 0, "new": 8}, "md0 group_thread_cnt")


def sync_wrapper(r):
    eq(r, ["wrapper.mdtune"], "synced")


CHECKS = {f.__name__: f for f in (
    refuses_without_wrapper, query_defaults, show_sls, apply_test_predicted, query_pillar,
    module_apply_test, binary_path, apply_written, drift_found, drift_query, desired,
    revert_test, reverted, bare_defaults, sync_wrapper,
)}


def master_dirs(config):
    """Prints the cachedir and the extension_modules Salt resolves from the master's config."""
    import salt.config

    o = salt.config.master_config(config)
    print(o["cachedir"])
    print(o["extension_modules"])


def main(argv):
    if len(argv) == 2 and argv[0] == "--master-dirs":
        master_dirs(argv[1])
        return
    if len(argv) < 3 or argv[2] not in CHECKS:
        sys.exit("usage: ssh_checks.py FILE TARGET CHECK [ARG...] (CHECK: %s)\n"
                 "       ssh_checks.py --master-dirs MASTER_CONFIG" % ", ".join(CHECKS))
    path, target, name, args = argv[0], argv[1], argv[2], argv[3:]
    CHECKS[name](target_of(path, target), *args)


if __name__ == "__main__":
    main(sys.argv[1:])
