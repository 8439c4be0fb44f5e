"""Checks that a tarball to unpack at / puts every file on the SUSE Manager 5 server's volumes.

    python3 tests/salt/volumes.py VOLUMES.txt BUNDLE.tar.gz [PATH...]

VOLUMES.txt is the server container's list of volume mount paths (tests/salt/uyuni-volumes.txt,
transcribed from uyuni-tools); BUNDLE.tar.gz is mdtune-salt-VERSION.tar.gz. Every member must be
under a volume (a file elsewhere is lost when the container is re-created), and the tarball must
hold the formula, its form and the modules where Uyuni and Salt look for them. Each PATH given
after it (the SUSE Manager 4.3 package's) is checked to be on no volume, which is why the
packages are for 4.3 and the tarball for 5. Prints one line per check; exits 1 on a failure.
"""

import posixpath
import sys
import tarfile

WANTED = (
    "srv/salt/mdtune/init.sls",
    "srv/formula_metadata/mdtune/form.yml",
    "srv/formula_metadata/mdtune/metadata.yml",
    "srv/formula_metadata/mdtune/pillar.example",
    "srv/salt/_modules/mdtune.py",
    "srv/salt/_states/mdtune.py",
    "srv/salt/_wrapper/mdtune.py",
    "var/cache/salt/master/extmods/wrapper/mdtune.py",
)


def volumes(path):
    with open(path, encoding="utf-8") as f:
        return [line.strip().rstrip("/") for line in f if line.strip() and not line.startswith("#")]


def volume_of(path, mounts):
    """The volume mount path PATH (absolute) is on, or None."""
    for mount in mounts:
        if path == mount or path.startswith(mount + "/"):
            return mount
    return None


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    mounts = volumes(sys.argv[1])
    failed = 0
    with tarfile.open(sys.argv[2]) as tar:
        members = tar.getmembers()
    names = set()
    for m in members:
        name = posixpath.normpath(m.name)
        path = "/" + name
        names.add(name)
        mount = volume_of(path, mounts)
        if not (m.isfile() or m.isdir()):
            print("FAIL %s is neither a file nor a directory" % path)
            failed += 1
        elif mount is None:
            print("FAIL %s is on no volume: lost when the server container is re-created" % path)
            failed += 1
        elif m.isfile():
            print("ok   %s (volume %s)" % (path, mount))
    for want in WANTED:
        if want not in names:
            print("FAIL the tarball lacks %s" % want)
            failed += 1
    for path in sys.argv[3:]:
        mount = volume_of(path, mounts)
        if mount:
            print("FAIL %s is on the volume %s, expected on none" % (path, mount))
            failed += 1
        else:
            print("ok   %s (the 4.3 package's) is on no volume" % path)
    print(
        "%d member(s) on %d volume(s) checked, %d failure(s)" % (len(members), len(mounts), failed)
    )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
