"""Exit 0 if and only if the Python running it has every package the requirement specifiers given
ask for, in a version they allow (pre-releases count). setup-python.sh runs it with a venv's
python to decide whether the venv must be set up again.

    VENV/bin/python3 .ci/requirements_met.py 'ansible-core>=2.19,<2.20' ...
"""

import sys
from importlib.metadata import PackageNotFoundError, version

from packaging.requirements import Requirement


def met(spec):
    req = Requirement(spec)
    try:
        return req.specifier.contains(version(req.name), prereleases=True)
    except PackageNotFoundError:
        return False


if __name__ == "__main__":
    sys.exit(0 if all(met(spec) for spec in sys.argv[1:]) else 1)
