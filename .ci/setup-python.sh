#!/usr/bin/env bash
# Creates the Python venv the Ansible and Salt suites use: ansible-core 2.19 and salt 3008.4, and the
# checkers the Ansible suite runs on the built collection: ansible-lint (production profile) and
# antsibull-changelog (the collection's changelog). Pinned to versions that work with ansible-core
# 2.19 on Python 3.11. galaxy-importer (what Galaxy runs on an uploaded collection) conflicts with
# salt's pins, so it gets a venv of its own: $MDTUNE_IMPORTER_VENV, default <venv>-galaxy-importer.
# Idempotent: what a venv already has is kept.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${MDTUNE_VENV:-$here/.venv}
importer_venv=${MDTUNE_IMPORTER_VENV:-$venv-galaxy-importer}
core='ansible-core>=2.19,<2.20'

# has VENV TOOLS... -- REQUIREMENTS...: true if the venv has the tools and satisfies the requirements.
has() {
  local dir=$1; shift
  while [ "$1" != -- ]; do [ -x "$dir/bin/$1" ] || return 1; shift; done
  shift
  "$dir/bin/python3" "$here/.ci/requirements_met.py" "$@"
}

# setup VENV TOOLS... -- REQUIREMENTS...: the venv with the requirements, in one resolver run (so
# that ansible-lint or galaxy-importer cannot pull in another ansible-core).
setup() {
  local dir=$1 tools=()
  shift
  while [ "$1" != -- ]; do tools+=("$1"); shift; done
  shift
  if [ -x "$dir/bin/python3" ] && has "$dir" "${tools[@]}" -- "$@" 2>/dev/null; then
    echo "setup-python: $dir already has $*"; return 0
  fi
  [ -x "$dir/bin/python3" ] || python3 -m venv "$dir"
  "$dir/bin/pip" install --quiet --upgrade pip
  "$dir/bin/pip" install --quiet "$@"
  local t
  for t in "${tools[@]}"; do echo "setup-python: $t: $("$dir/bin/$t" --version 2>&1 | head -1)"; done
}

setup "$venv" ansible-playbook salt-call ansible-lint antsibull-changelog -- \
  "$core" 'salt==3008.4' 'ansible-lint==26.10.1' 'antsibull-changelog==0.36.0'
setup "$importer_venv" ansible-doc -- "$core" 'galaxy-importer==0.4.44'
