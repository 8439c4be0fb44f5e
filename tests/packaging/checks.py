"""What tests/packaging/run.sh checks in the packages' output and files. One subcommand per check;
each exits 0 when it holds, or non-zero with an AssertionError that shows what it got.

  panic-report RC OUT      a panic under the package's build flags (and bench/build-release.sh's):
                           exit status 1 and one JSON failure object ("internal error") in OUT.
  demo-query OUT           the packaged binary's query of the demo host: not failed, auto gives md0
                           8 threads.
  installed-query OUT      the installed mdtune's query of the demo host: not failed, nothing
                           changed, its 5 arrays reported.
  persisted OUT            a persist run's report: not failed.
  vendor DIR CARGO_LOCK    the unpacked vendor tarball holds Cargo.lock's crates (not std's), the
                           Windows ones as manifests only; prints the counts and size.
  obs-service SERVICE SPEC _service runs OBS's cargo_vendor on the source tarball into the spec's
                           Source1 (vendor.tar.gz).
"""

import json
import os
import sys
import tomllib
import xml.etree.ElementTree as ElementTree


def report(text):
    try:
        return json.loads(text)
    except ValueError:
        raise AssertionError("not a JSON report: %r" % text[-1500:]) from None


def shown(value):
    """A report as an assertion shows it: its first 600 characters."""
    return json.dumps(value)[:600]


def panic_report(rc, out):
    d = report(out)
    assert rc == "1" and d["failed"] is True and "internal error" in d["msg"], "exit %s: %s" % (
        rc,
        shown(d),
    )


def demo_query(out):
    r = report(out)
    md0 = [a for a in r["arrays"] if a["name"] == "md0"][0]
    assert r["failed"] is False and md0["settings"]["group_thread_cnt"]["after"] == 8, shown(r)


def installed_query(out):
    r = report(out)
    assert r["failed"] is False and r["changed"] is False and len(r["arrays"]) == 5, shown(r)


def persisted(out):
    r = report(out)
    assert r["failed"] is False, shown(r)


def vendor(directory, lock):
    locked = {
        "%s-%s" % (p["name"], p["version"])
        for p in tomllib.load(open(lock, "rb"))["package"]
        if "source" in p
    }
    have = set(os.listdir(directory))
    assert have == locked, "the vendored crates and Cargo.lock's differ in %s" % sorted(
        have ^ locked
    )

    def stub(d):
        src = os.path.join(directory, d, "src")
        return os.listdir(src) == ["lib.rs"] and os.path.getsize(os.path.join(src, "lib.rs")) == 0

    stubs = sorted(d for d in have if stub(d))
    assert all(s.startswith("windows-") for s in stubs), stubs
    assert any(s.startswith("windows-sys") for s in stubs), "windows-sys is vendored whole"
    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(directory) for f in fs)
    print(
        "%d crates, %d of them manifests only (%s), %.1f MB unpacked"
        % (len(have), len(stubs), ", ".join(stubs), size / 1e6)
    )


def obs_service(service, spec):
    s = ElementTree.parse(service).getroot().find('service[@name="cargo_vendor"]')
    assert s is not None, "%s has no cargo_vendor service" % service
    p = {e.get("name"): e.text for e in s.findall("param")}
    assert p.get("compression") == "gz" and p.get("srctar", "").startswith("mdtune-"), p
    assert "Source1:        vendor.tar.gz" in open(spec).read(), (
        "%s: no 'Source1:        vendor.tar.gz'" % spec
    )


COMMANDS = {
    "panic-report": panic_report,
    "demo-query": demo_query,
    "installed-query": installed_query,
    "persisted": persisted,
    "vendor": vendor,
    "obs-service": obs_service,
}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        sys.exit("usage: %s %s ARGS..." % (sys.argv[0], "|".join(COMMANDS)))
    COMMANDS[sys.argv[1]](*sys.argv[2:])
