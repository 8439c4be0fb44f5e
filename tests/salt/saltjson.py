"""What tests/salt/call_checks.py and tests/salt/ssh_checks.py share: reading the JSON that Salt
printed (salt-call, salt-ssh, salt-run with --out=json into FILE, stderr in FILE.err) and the
helpers their checks assert with.
"""

import json
import os


def read(path):
    with open(path) as f:
        return f.read()


def load(path, tool):
    """The JSON in PATH; without JSON, an AssertionError saying that TOOL printed none, with the
    end of PATH and of PATH.err."""
    text = read(path)
    try:
        return json.loads(text)
    except ValueError:
        raise AssertionError(
            tool + " printed no JSON: " + text[-1500:] + read(path + ".err")[-1500:]
        ) from None


def state(r, sid):
    """The result of the state with ID sid in the state run r."""
    assert isinstance(r, dict), "not a state run result: %r" % (r,)
    for key, value in r.items():
        if key.split("_|-")[1] == sid:
            return value
    raise AssertionError("no state %s in %s" % (sid, list(r)))


def md(root, dev, attr):
    return read(os.path.join(root, "sys/block", dev, "md", attr)).strip()


def proc(root, name):
    return read(os.path.join(root, "proc/sys/dev/raid", name)).strip()


def eq(actual, expected, what):
    assert actual == expected, "%s: expected %r, got %r" % (what, expected, actual)


def report(r):
    """The settings of each array in mdtune's report r, by array name."""
    assert isinstance(r, dict) and "arrays" in r, "not a report: %r" % (r,)
    return {x["name"]: x["settings"] for x in r["arrays"]}
