#!/usr/bin/env bash
# Creates the Python venv the Ansible and Salt suites use: ansible-core 2.19 and salt 3008.4, and the
# checkers the Ansible suite runs on the built collection: ansible-lint (production profile) and
# antsibull-changelog (the collection's changelog). Pinned to versions that work with ansible-core
# 2.19 on Python 3.11. Idempotent: what the venv already has is kept.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${MDTUNE_VENV:-$here/.venv}
core='ansible-core>=2.19,<2.20'
want=("$core" 'salt==3008.4' 'ansible-lint==26.10.1' 'antsibull-changelog==0.36.0')
tools=(ansible-playbook salt-call ansible-lint antsibull-changelog)

have_all() {
  local t
  for t in "${tools[@]}"; do [ -x "$venv/bin/$t" ] || return 1; done
  "$venv/bin/python3" - "${want[@]}" <<'PY'
import sys
from importlib.metadata import version, PackageNotFoundError
from packaging.requirements import Requirement
for spec in sys.argv[1:]:
    req = Requirement(spec)
    try:
        if not req.specifier.contains(version(req.name), prereleases=True):
            sys.exit(1)
    except PackageNotFoundError:
        sys.exit(1)
PY
}

if [ -x "$venv/bin/python3" ] && have_all 2>/dev/null; then
  echo "setup-python: $venv already has ${want[*]}"; exit 0
fi
[ -x "$venv/bin/python3" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --upgrade pip
# One resolver run, so that ansible-lint cannot pull in another ansible-core.
"$venv/bin/pip" install --quiet "${want[@]}"
"$venv/bin/ansible" --version | head -1
"$venv/bin/salt-call" --version
"$venv/bin/ansible-lint" --version | head -1
"$venv/bin/antsibull-changelog" --version
