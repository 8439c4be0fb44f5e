#!/usr/bin/env bash
# Creates the Python venv the Ansible and Salt suites use: ansible-core 2.19 and salt 3008.4.
# Idempotent: an existing venv with both is kept.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${MDTUNE_VENV:-$here/.venv}
if [ -x "$venv/bin/ansible-playbook" ] && [ -x "$venv/bin/salt-call" ]; then
  echo "setup-python: $venv already has ansible-core and salt"; exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --upgrade pip
"$venv/bin/pip" install --quiet 'ansible-core>=2.19,<2.20' 'salt==3008.4'
"$venv/bin/ansible" --version | head -1
"$venv/bin/salt-call" --version
