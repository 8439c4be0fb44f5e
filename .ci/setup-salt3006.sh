#!/usr/bin/env bash
# Creates a second Python venv with Salt's 3006 LTS line (the line SUSE Manager's Salt bundle
# runs), so tests/salt/run.sh can run the Salt modules on 3006 as well as on 3008 (the main venv,
# .ci/setup-python.sh). Kept apart from the main venv: one venv cannot hold two Salt versions.
# Where: $MDTUNE_SALT3006_VENV, else ${MDTUNE_VENV:-<repo>/.venv}-salt3006.
# Idempotent: a venv whose salt-call already reports 3006 is kept.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${MDTUNE_SALT3006_VENV:-${MDTUNE_VENV:-$here/.venv}-salt3006}
if [ -x "$venv/bin/salt-call" ] && "$venv/bin/salt-call" --version 2>/dev/null | grep -q ' 3006\.'; then
  echo "setup-salt3006: $venv already has $("$venv/bin/salt-call" --version)"; exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --upgrade pip
"$venv/bin/pip" install --quiet 'salt>=3006,<3007'
"$venv/bin/salt-call" --version
