"""The fleet suite's checks and readers (tests/fleet/run.sh), one subcommand each.

A check reads the salt CLI's JSON that the suite saved in FILE (one document, or one per return
with salt -b) and fails with an AssertionError saying what differs:

  checks.py CHECK FILE IDS TMP [ARG...]

IDS is the minions' ids, space-separated; TMP the suite's directory, where each minion's fake
root is TMP/<id>/root. The readers: `pending N` (salt-key's JSON on stdin: at least N keys wait),
`answer FILE IDS` (every minion answered test.ping), `sweep FILE IDS TMP` (one line a minion),
`form PILLAR` (the group's form changes: md0 gets a bigger stripe cache and skip_copy on).
"""

import json
import os
import sys


def load(path):
    """Every JSON document in the salt CLI's output at `path`, merged (salt -b prints one per
    return, among other lines)."""
    with open(path) as f:
        text = f.read()
    docs, i, dec = [], 0, json.JSONDecoder()
    while True:
        i = text.find("{", i)
        if i < 0:
            break
        try:
            doc, end = dec.raw_decode(text, i)
        except ValueError:
            i += 1
            continue
        docs.append(doc)
        i = end
    if not docs:
        with open(path + ".err") as f:
            err = f.read()
        raise AssertionError("no JSON from salt: " + text[-1500:] + err[-1500:])
    merged = {}
    for doc in docs:
        merged.update(doc)
    return merged


class Fleet:
    """One saved return: `r` (minion id -> return), the ids, and the minions' roots."""

    def __init__(self, path, ids, tmp):
        self.r = load(path)
        self.ids = ids.split()
        self.tmp = tmp

    def state(self, minion, sid):
        ret = self.r.get(minion)
        if not isinstance(ret, dict):
            raise AssertionError("%s: no state return: %r" % (minion, ret))
        for key, value in ret.items():
            if key.split("_|-")[1] == sid:
                return value
        raise AssertionError("%s: no state %s in %s" % (minion, sid, list(ret)))

    def md(self, minion, dev, attr):
        with open(os.path.join(self.tmp, minion, "root/sys/block", dev, "md", attr)) as f:
            return f.read().strip()

    def proc(self, minion, name):
        with open(os.path.join(self.tmp, minion, "root/proc/sys/dev/raid", name)) as f:
            return f.read().strip()

    def all_answered(self):
        missing = [i for i in self.ids if i not in self.r]
        assert not missing, "no return from %s" % missing


def eq(actual, expected, what):
    assert actual == expected, "%s: expected %r, got %r" % (what, expected, actual)


# --- the checks -----------------------------------------------------------------------------------
def synced(f):
    f.all_answered()
    for i in f.ids:
        assert "modules.mdtune" in f.r[i]["modules"] and "states.mdtune" in f.r[i]["states"], (i, f.r[i])


def desired(f):
    f.all_answered()
    for i in f.ids:
        d = f.r[i]
        eq(d.get("root"), os.path.join(f.tmp, i, "root"), i + " root")
        eq(d.get("thread_policy"), {"mode": "auto", "max": 16}, i + " thread_policy")
        eq([a["name"] for a in d["arrays"]][0], "md*", i + " globs first")


def dry_run(f):
    f.all_answered()
    for i in f.ids:
        s = f.state(i, "mdtune-tuned")
        eq(s["result"], None, i + " result: " + s["comment"])
        changes = s["changes"]
        eq(changes.get("md0", {}).get("stripe_cache_size"), {"old": 256, "new": 4096}, i + " md0 stripe_cache_size")
        eq(changes.get("md2", {}).get("group_thread_cnt"), {"old": 0, "new": 4}, i + " md2 group_thread_cnt")
        eq(changes.get("system", {}).get("speed_limit_max"), {"old": 200000, "new": 400000}, i + " speed_limit_max")


def canary(f, minion):
    s = f.state(minion, "mdtune-tuned")
    eq(s["result"], True, "result: " + s["comment"])
    eq(f.md(minion, "md0", "stripe_cache_size"), "4096", "md0 stripe_cache_size")
    assert len(f.r) == 1, "only the canary ran: %s" % list(f.r)


def rolled_out(f, canary_id):
    f.all_answered()
    for i in f.ids:
        s = f.state(i, "mdtune-tuned")
        eq(s["result"], True, i + " result: " + s["comment"])
        eq(f.md(i, "md0", "stripe_cache_size"), "4096", i + " md0 stripe_cache_size")
        eq(f.md(i, "md0", "group_thread_cnt"), "8", i + " md0 group_thread_cnt (auto)")
        eq(f.md(i, "md2", "group_thread_cnt"), "4", i + " md2 group_thread_cnt")
        eq(f.md(i, "md3", "stripe_cache_size"), "1024", i + " md3 stripe_cache_size (md*)")
        eq(f.proc(i, "speed_limit_max"), "400000", i + " speed_limit_max")
        if i != canary_id:
            assert s["changes"], i + ": no changes reported"


def unchanged(f):
    f.all_answered()
    for i in f.ids:
        s = f.state(i, "mdtune-tuned")
        eq(s["result"], True, i + " result: " + s["comment"])
        eq(s["changes"], {}, i + " changes")


def refused(f, bad):
    s = f.state(bad, "mdtune-tuned")
    eq(s["result"], False, "result")
    c = s["comment"]
    assert "md0" in c and "skip_copy" in c and "os error 13" in c, c
    assert "rolled back" in c and "stripe_cache_size" in c, c
    eq(f.md(bad, "md0", "stripe_cache_size"), "4096", "stripe_cache_size rolled back")
    eq(f.md(bad, "md0", "skip_copy"), "0", "skip_copy")


def others_converged(f, bad):
    f.all_answered()
    for i in f.ids:
        if i == bad:
            continue
        s = f.state(i, "mdtune-tuned")
        eq(s["result"], True, i + " result: " + s["comment"])
        eq(f.md(i, "md0", "stripe_cache_size"), "8192", i + " md0 stripe_cache_size")
        eq(f.md(i, "md0", "skip_copy"), "1", i + " md0 skip_copy")


def only_failed(f, bad):
    failed = sorted(i for i, ret in f.r.items() if isinstance(ret, dict)
                    and any(isinstance(v, dict) and v.get("result") is False for v in ret.values()))
    eq(failed, [bad], "minions whose state failed")


def fixed(f, bad):
    eq(f.state(bad, "mdtune-tuned")["result"], True, "result")


def all_compliant(f):
    f.all_answered()
    for i in f.ids:
        eq(f.r[i].get("compliant"), True, i + " compliant: " + str(f.r[i].get("msg")))


def md2(query):
    return [a for a in query["arrays"] if a["name"] == "md2"][0]


def drifted(f, drift):
    f.all_answered()
    off = sorted(i for i in f.ids if f.r[i].get("compliant") is not True)
    eq(off, [drift], "minions not compliant")
    cache = md2(f.r[drift])["settings"]["stripe_cache_size"]
    eq(cache["compliant"], False, "md2 stripe_cache_size compliant")
    eq(cache["before"], 256, "live value")
    eq(cache["after"], 1024, "desired value (the formula pillar)")


def drifted_from_persisted(f, drift):
    q = f.r[drift]
    eq(q["persist"]["compared_with"]["file"], "/etc/mdtune/mdtune.json", "compared with")
    eq(q["compliant"], False, "compliant")
    assert "md2: stripe_cache_size 256 (rolled out 1024)" in q["msg"], q["msg"]
    eq(md2(q)["settings"]["stripe_cache_size"]["after"], 1024, "rolled-out value")


CHECKS = {c.__name__.replace("_", "-"): c for c in [
    synced, desired, dry_run, canary, rolled_out, unchanged, refused, others_converged,
    only_failed, fixed, all_compliant, drifted, drifted_from_persisted]}


# --- the readers ----------------------------------------------------------------------------------
def pending(n):
    keys = json.load(sys.stdin).get("minions_pre", [])
    sys.exit(0 if len(keys) >= int(n) else 1)


def answer(path, ids):
    with open(path) as f:
        r = json.load(f)
    sys.exit(0 if sorted(k for k, v in r.items() if v is True) == ids.split() else 1)


def sweep(path, ids, tmp):
    f = Fleet(path, ids, tmp)
    for i in f.ids:
        q = f.r.get(i)
        if not isinstance(q, dict):
            print("#   %s: no answer: %r" % (i, q))
            continue
        off = ["%s %s %s (want %s)" % (a["name"], k, v.get("before"), v.get("after"))
               for a in q.get("arrays", []) for k, v in a.get("settings", {}).items()
               if v.get("compliant") is False]
        if not off and not q.get("compliant"):
            off = [q.get("msg", "")[-160:]]  # not the values: the persisted files, say
        print("#   %s: %s%s" % (i, "compliant" if q.get("compliant") else "NOT compliant",
                                (": " + "; ".join(off)) if off else ""))


def form(path):
    import yaml  # Salt's venv has it; the checks above need only the standard library

    with open(path) as f:
        p = yaml.safe_load(f)
    p["mdtune"]["arrays"]["hana_data"].update(stripe_cache_size=8192, skip_copy="enabled")
    with open(path, "w") as f:
        yaml.safe_dump(p, f)


READERS = {"pending": pending, "answer": answer, "sweep": sweep, "form": form}

if __name__ == "__main__":
    name, args = sys.argv[1], sys.argv[2:]
    if name in READERS:
        READERS[name](*args)
    else:
        CHECKS[name](Fleet(*args[:3]), *args[3:])
